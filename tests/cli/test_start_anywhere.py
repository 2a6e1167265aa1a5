"""``reelqueue`` and ``reelqueue demo`` on a Linux desktop whose Qt X11 plugin cannot load
(issue 23): the packages to install are named, the demo finishes headless, nothing aborts.

The desktop is made real, not faked: a broken ``libxcb-cursor.so.0`` put first on the
loader's path (``LD_LIBRARY_PATH``) stands in for the library a stock Ubuntu lacks, so the
plugin truly cannot load; the first test proves Qt itself aborts there.
"""

from __future__ import annotations

import argparse
import io
import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from reelqueue.application.context import AppContext
from reelqueue.cli import cmd_demo, cmd_run
from reelqueue.cli.context import CliContext, WindowOpener
from reelqueue.domain.errors import WindowUnavailable
from tests.cli.test_cli_e2e import CLI

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's xcb")]


def broken_desktop(tmp_path: Path) -> dict[str, str]:
    """An X11 desktop (no server needed: nothing gets as far as connecting) on which the
    loader finds an unusable libxcb-cursor.so.0 before the system's."""
    hidden = tmp_path / "hidden-libs"
    hidden.mkdir()
    (hidden / "libxcb-cursor.so.0").write_bytes(b"")
    env = {k: v for k, v in os.environ.items()
           if k not in ("QT_QPA_PLATFORM", "WAYLAND_DISPLAY", "LD_LIBRARY_PATH")}
    env.update(DISPLAY=":987", LD_LIBRARY_PATH=str(hidden))
    return env


def test_on_that_desktop_qt_itself_aborts(tmp_path: Path) -> None:
    qt = subprocess.run([sys.executable, "-c",
                         "from PySide6.QtWidgets import QApplication; QApplication([])"],
                        env=broken_desktop(tmp_path), capture_output=True, text=True,
                        timeout=60, check=False)
    assert qt.returncode == -signal.SIGABRT, (qt.returncode, qt.stderr)
    assert "libxcb-cursor0 is needed" in qt.stderr


def test_the_window_says_what_to_install_instead_of_aborting(tmp_path: Path) -> None:
    window = subprocess.run([*CLI, "--data-dir", str(tmp_path / "data")],
                            env=broken_desktop(tmp_path), capture_output=True, text=True,
                            timeout=120, check=False)
    assert window.returncode == 2, (window.returncode, window.stderr)
    assert "The window cannot open" in window.stderr
    assert "libxcb-cursor.so.0" in window.stderr
    assert "sudo apt install libxcb-cursor0" in window.stderr
    assert "sudo dnf install xcb-util-cursor" in window.stderr
    assert "reelqueue demo" in window.stderr


@pytest.mark.slow
def test_the_demo_names_the_packages_and_finishes_headless(tmp_path: Path) -> None:
    sheet = tmp_path / "one.csv"
    sheet.write_text("name,prompt\nonly,One short scene\n", "utf-8")
    demo = subprocess.run([*CLI, "--data-dir", str(tmp_path / "data"), "--videos-dir",
                           str(tmp_path / "videos"), "demo", "--sheet", str(sheet)],
                          env=broken_desktop(tmp_path), capture_output=True, text=True,
                          timeout=240, check=False)
    assert demo.returncode == 0, (demo.returncode, demo.stdout, demo.stderr)
    assert "sudo apt install libxcb-cursor0" in demo.stdout
    assert "sudo dnf install xcb-util-cursor" in demo.stdout
    assert "The demo runs headless here instead." in demo.stdout
    assert "Finished: 1 completed, 0 failed, 0 cancelled." in demo.stdout
    assert len(list((tmp_path / "videos" / "demo").rglob("*.mp4"))) == 1


def _loader_dir_of(soname: str) -> Path | None:
    """The folder the loader takes ``soname`` from for Qt's xcb plugin (ldd's answer)."""
    from reelqueue.ui.platform_check import xcb_plugin

    plugin, ldd = xcb_plugin(), shutil.which("ldd")
    if plugin is None or ldd is None:
        return None
    out = subprocess.run([ldd, str(plugin)], capture_output=True, text=True, timeout=60,
                         check=False).stdout
    for line in out.splitlines():
        name, _, where = line.strip().partition(" => ")
        if name == soname and where.startswith("/"):
            return Path(os.path.realpath(where.split(" (")[0])).parent
    return None


def _can_unshare_mounts() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-m", "true"], capture_output=True,
                          timeout=30, check=False).returncode == 0


@pytest.mark.skipif(not _can_unshare_mounts(),
                    reason="needs a private mount namespace (unshare -m: root or user "
                           "namespaces) to hide a system library from the loader")
def test_with_libxcb_cursor_really_missing_the_packages_are_named(tmp_path: Path) -> None:
    """The stock-Ubuntu case itself: libxcb-cursor.so.0 absent from the loader's folder
    (in a private mount namespace: the folder seen without it, the system untouched)."""
    libdir = _loader_dir_of("libxcb-cursor.so.0")
    assert libdir is not None, "the plugin loads libxcb-cursor.so.0 from a system folder"
    original, view = tmp_path / "original", tmp_path / "view"
    original.mkdir()
    view.mkdir()
    for entry in os.listdir(libdir):
        if not entry.startswith("libxcb-cursor.so"):
            (view / entry).symlink_to(original / entry)
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "WAYLAND_DISPLAY")}
    env.update(DISPLAY=":987")
    out = tmp_path / "out"
    out.mkdir()
    qt = "from PySide6.QtWidgets import QApplication; QApplication([])"
    window = " ".join(shlex.quote(a) for a in [*CLI, "--data-dir", str(tmp_path / "data")])
    script = (f"mount --bind {libdir} {original} && mount --bind {view} {libdir} && "
              f"{{ {window} >{out}/rq.out 2>{out}/rq.err; echo $? >{out}/rq.rc; "
              f"{shlex.quote(sys.executable)} -c {shlex.quote(qt)} 2>{out}/qt.err; "
              f"echo $? >{out}/qt.rc; }}")
    subprocess.run(["unshare", "-m", "sh", "-c", script], env=env, timeout=240, check=True)
    # Qt itself, there: its own message and the abort (sh reports 128 + SIGABRT).
    assert (out / "qt.rc").read_text().strip() == str(128 + signal.SIGABRT)
    assert "libxcb-cursor0 is needed" in (out / "qt.err").read_text()
    # ReelQueue: says what to install, exits 2.
    assert (out / "rq.rc").read_text().strip() == "2"
    said = (out / "rq.err").read_text()
    assert "libxcb-cursor.so.0: cannot open shared object file" in said, said
    assert "sudo apt install libxcb-cursor0" in said
    assert "sudo dnf install xcb-util-cursor" in said
    assert os.path.exists(libdir / "libxcb-cursor.so.0"), "the system is untouched"


def _demo_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, display: bool,
                     opener: WindowOpener) -> tuple[str, list[str]]:
    """``reelqueue demo`` run in this process on a one-row sheet: (what it printed, the
    runs it made: "window" or "headless"); the headless run itself is stubbed."""
    runs: list[str] = []
    printed = io.StringIO()
    monkeypatch.setattr(cmd_demo, "has_display", lambda: display)
    monkeypatch.setattr(cmd_run, "run_headless",
                        lambda *a, **k: runs.append("headless") or 0)
    sheet = tmp_path / "one.csv"
    sheet.write_text("name,prompt\nonly,One short scene\n", "utf-8")
    ctx = CliContext(data_dir=tmp_path / "data", videos_dir=tmp_path / "videos",
                     out=printed, open_window=opener)
    args = argparse.Namespace(reset=False, no_gui=False, sheet=sheet)
    assert cmd_demo.handle(args, ctx) == 0
    return printed.getvalue(), runs


def test_without_a_display_the_demo_says_so(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    def never(ctx: AppContext, *, start: bool, open_sheet: Path | None = None) -> int:
        raise AssertionError("no window without a display")

    printed, runs = _demo_in_process(tmp_path, monkeypatch, display=False, opener=never)
    assert runs == ["headless"]
    assert ("No display found (neither DISPLAY nor WAYLAND_DISPLAY is set): the demo runs "
            "headless here.") in printed


def test_a_window_that_cannot_open_runs_the_demo_headless(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def unavailable(ctx: AppContext, *, start: bool, open_sheet: Path | None = None) -> int:
        raise WindowUnavailable("The window cannot open: install libxcb-cursor0")

    printed, runs = _demo_in_process(tmp_path, monkeypatch, display=True, opener=unavailable)
    assert runs == ["headless"]
    assert ("The window cannot open: install libxcb-cursor0\nThe demo runs headless here "
            "instead.") in printed


@pytest.mark.parametrize("how", ["flag", "env"])
def test_the_window_opens_on_the_journal_the_command_line_names(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """``reelqueue --store postgresql://…`` (or REELQUEUE_STORE) with no command opens the
    window on that team database, with the folders of --data-dir / REELQUEUE_DATA_DIR; it
    used to open the local queue, silently, on the default data folder."""
    from reelqueue.cli import main as cli_main

    opened: list[tuple[AppContext, Path | None]] = []

    def opener(ctx: AppContext, *, start: bool, open_sheet: Path | None = None) -> int:
        opened.append((ctx, open_sheet))
        return 0

    url = "postgresql://studio@127.0.0.1:5432/queue"
    monkeypatch.setattr(cmd_demo, "has_display", lambda: True)
    monkeypatch.delenv("REELQUEUE_STORE", raising=False)
    monkeypatch.setenv("REELQUEUE_DATA_DIR", str(tmp_path / "env-data"))
    argv = ["--videos-dir", str(tmp_path / "videos")]
    if how == "flag":
        argv += ["--store", url, "--data-dir", str(tmp_path / "data")]
    else:
        monkeypatch.setenv("REELQUEUE_STORE", url)
    sheet = tmp_path / "shots.csv"
    sheet.write_text("name,prompt\nonly,One short scene\n", "utf-8")
    assert cli_main.main(argv, open_window=opener) == 0
    assert cli_main.main([*argv, str(sheet)], open_window=opener) == 0
    data = tmp_path / ("data" if how == "flag" else "env-data")
    for ctx, _ in opened:
        assert ctx.store_url == url
        assert ctx.data_dir == data.resolve()
        assert ctx.videos_dir == (tmp_path / "videos").resolve()
    assert [s for _, s in opened] == [None, sheet]
