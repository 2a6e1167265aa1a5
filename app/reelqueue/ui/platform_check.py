"""Can Qt's platform plugin load here? Asked before the Qt application is created.

On Linux, Qt's X11 plugin (``libqxcb.so``) needs system libraries that a stock desktop
may lack (``libxcb-cursor0`` is missing from a default Ubuntu install since Qt 6.5). When
one is missing, creating the ``QApplication`` makes Qt print its own message and abort the
process (SIGABRT), which no ``try`` can catch. So :func:`window_problem` loads the plugin
first in a child process (the dynamic loader's verdict, with every dependency resolved the
way Qt would resolve it) and, when it cannot load, returns a plain message naming the
missing libraries by their Debian/Ubuntu and Fedora package names; the caller then runs
headless or says what to do.

This module imports no Qt module: it only finds PySide6's files on disk.
"""

from __future__ import annotations

import importlib.util
import logging
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, MutableMapping
from pathlib import Path

from reelqueue.domain.errors import WindowUnavailable

log = logging.getLogger(__name__)

# The libraries Qt 6's xcb plugin loads (Qt's "X11 Requirements" page, and ``ldd`` of the
# PySide6 wheel's libqxcb.so), with the packages that hold them: (Debian/Ubuntu, Fedora).
PACKAGES: dict[str, tuple[str, str]] = {
    "libxcb-cursor.so.0": ("libxcb-cursor0", "xcb-util-cursor"),
    "libxcb-icccm.so.4": ("libxcb-icccm4", "xcb-util-wm"),
    "libxcb-image.so.0": ("libxcb-image0", "xcb-util-image"),
    "libxcb-keysyms.so.1": ("libxcb-keysyms1", "xcb-util-keysyms"),
    "libxcb-render-util.so.0": ("libxcb-render-util0", "xcb-util-renderutil"),
    "libxcb-util.so.1": ("libxcb-util1", "xcb-util"),
    "libxcb-randr.so.0": ("libxcb-randr0", "libxcb"),
    "libxcb-shm.so.0": ("libxcb-shm0", "libxcb"),
    "libxcb-sync.so.1": ("libxcb-sync1", "libxcb"),
    "libxcb-xfixes.so.0": ("libxcb-xfixes0", "libxcb"),
    "libxcb-render.so.0": ("libxcb-render0", "libxcb"),
    "libxcb-shape.so.0": ("libxcb-shape0", "libxcb"),
    "libxcb-xkb.so.1": ("libxcb-xkb1", "libxcb"),
    "libxcb-xinerama.so.0": ("libxcb-xinerama0", "libxcb"),
    "libxcb-glx.so.0": ("libxcb-glx0", "libxcb"),
    "libxcb.so.1": ("libxcb1", "libxcb"),
    "libX11-xcb.so.1": ("libx11-xcb1", "libX11-xcb"),
    "libX11.so.6": ("libx11-6", "libX11"),
    "libxkbcommon.so.0": ("libxkbcommon0", "libxkbcommon"),
    "libxkbcommon-x11.so.0": ("libxkbcommon-x11-0", "libxkbcommon-x11"),
    "libfontconfig.so.1": ("libfontconfig1", "fontconfig"),
    "libfreetype.so.6": ("libfreetype6", "freetype"),
    "libGL.so.1": ("libgl1", "libglvnd-glx"),
    "libEGL.so.1": ("libegl1", "libglvnd-egl"),
    "libdbus-1.so.3": ("libdbus-1-3", "dbus-libs"),
}
# What to install when the loader's words name no library we know: Qt's whole list.
ALL_XCB = ("libxcb-cursor0", "libxcb-icccm4", "libxcb-image0", "libxcb-keysyms1",
           "libxcb-render-util0", "libxcb-xkb1", "libxkbcommon-x11-0", "libxcb-randr0",
           "libxcb-shape0", "libxcb-xinerama0")
ALL_XCB_FEDORA = ("xcb-util-cursor", "xcb-util-wm", "xcb-util-image", "xcb-util-keysyms",
                  "xcb-util-renderutil", "libxkbcommon-x11", "libxcb")

_SONAME = re.compile(r"(lib[A-Za-z0-9_+-]+(?:\.[A-Za-z0-9_+-]+)*?\.so(?:\.\d+)*)")
# Run in the child: load the plugin as Qt would (its dependencies resolved by the loader).
_LOAD = ("import ctypes, sys\n"
         "try:\n"
         "    ctypes.CDLL(sys.argv[1])\n"
         "except OSError as exc:\n"
         "    print(exc)\n"
         "    sys.exit(1)\n")

Loader = Callable[[Path], "str | None"]


def xcb_plugin() -> Path | None:
    """The PySide6 wheel's X11 platform plugin, or None when it is not where wheels put it
    (a distribution's own Qt build: then Qt's message is the only one we can give)."""
    spec = importlib.util.find_spec("PySide6")
    if spec is None or spec.origin is None:
        return None
    plugin = Path(spec.origin).parent / "Qt" / "plugins" / "platforms" / "libqxcb.so"
    return plugin if plugin.is_file() else None


def load_error(library: Path) -> str | None:
    """Why the dynamic loader cannot load ``library`` (its own words, and the libraries
    ``ldd`` finds missing), or None when it loads. Asked in a child process, so a loader
    failure (or a library's constructor) cannot take this process down."""
    try:
        child = subprocess.run([sys.executable, "-c", _LOAD, str(library)],
                               capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        log.info("could not check Qt's platform plugin: %s", exc)
        return None  # no verdict: let Qt try (and speak for itself)
    if child.returncode == 0:
        return None
    words = (child.stdout.strip() or child.stderr.strip() or "it does not load")
    # The loader names only the first missing library; ldd names the others.
    others = [name for name in dict.fromkeys(_ldd_not_found(library)) if name not in words]
    return words + (f"; also not found: {', '.join(others)}" if others else "")


def _ldd_not_found(library: Path) -> list[str]:
    """Every dependency ``ldd`` cannot find (the loader names only the first)."""
    ldd = shutil.which("ldd")
    if ldd is None:
        return []
    try:
        out = subprocess.run([ldd, str(library)], capture_output=True, text=True,
                             timeout=60, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.split("=>")[0].strip() for line in out.splitlines()
            if "=> not found" in line]


def missing_libraries(error: str) -> list[str]:
    """The library names in the loader's words, the plugin's own and Qt's excepted."""
    names: list[str] = []
    for name in _SONAME.findall(error):
        if name not in names and name != "libqxcb.so" and not name.startswith("libQt6"):
            names.append(name)
    return names


def install_advice(error: str) -> str:
    """The plain message for a plugin that cannot load with the loader's ``error``."""
    missing = missing_libraries(error)
    known = [PACKAGES[name] for name in missing if name in PACKAGES]
    debian = list(dict.fromkeys(pkg for pkg, _ in known)) or list(ALL_XCB)
    fedora = list(dict.fromkeys(pkg for _, pkg in known)) or list(ALL_XCB_FEDORA)
    named = ", ".join(missing) if missing else "a library it needs"
    return (f"The window cannot open: Qt's X11 platform plugin needs {named}, which "
            f"cannot be loaded ({error.strip()}).\n"
            f"Install the missing system packages, then start ReelQueue again:\n"
            f"  Debian/Ubuntu: sudo apt install {' '.join(debian)}\n"
            f"  Fedora:        sudo dnf install {' '.join(fedora)}")


def uses_xcb(env: Mapping[str, str], platform: str) -> bool:
    """Qt would open the window through its X11 plugin: Linux with a ``DISPLAY``, and
    ``QT_QPA_PLATFORM`` unset or naming xcb first (``offscreen``, ``wayland`` … are not
    checked: they do not load libqxcb)."""
    if not platform.startswith("linux") or not env.get("DISPLAY"):
        return False
    chosen = env.get("QT_QPA_PLATFORM", "").strip()
    first = chosen.split(";")[0].split(":")[0].strip()
    return first in ("", "xcb")


def window_problem(env: MutableMapping[str, str], *, loader: Loader | None = None,
                   plugin: Path | None = None, platform: str | None = None) -> str | None:
    """Why the window cannot open on this desktop (a message for the user), or None.

    On a Wayland session (``WAYLAND_DISPLAY`` set, ``QT_QPA_PLATFORM`` unset) whose X11
    plugin cannot load, Qt is told to use its Wayland plugin (``env`` is changed) rather
    than try xcb and abort."""
    if not uses_xcb(env, platform or sys.platform):
        return None
    library = plugin or xcb_plugin()
    if library is None:
        return None
    error = (loader or load_error)(library)
    if error is None:
        return None
    if env.get("WAYLAND_DISPLAY") and not env.get("QT_QPA_PLATFORM", "").strip():
        log.info("Qt's X11 plugin cannot load (%s); using its Wayland plugin", error)
        env["QT_QPA_PLATFORM"] = "wayland"
        return None
    return install_advice(error)


def ensure_window_can_open(env: MutableMapping[str, str]) -> None:
    """Raise WindowUnavailable (with :func:`window_problem`'s message) before Qt would
    abort the process."""
    problem = window_problem(env)
    if problem is not None:
        raise WindowUnavailable(problem)
