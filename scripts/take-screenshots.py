#!/usr/bin/env python3
"""Take the screenshots in docs/screenshots under a real X server (Xvfb + openbox).

Every shot is the real app (``python -m reelqueue`` with its own ``--data-dir`` and
``--videos-dir`` in a temporary folder), on a real X server, driven from outside with
xdotool, captured from the root window with ImageMagick. Nothing is installed by this
script; on Debian/Ubuntu the tools come from:

    apt-get install --no-install-recommends xvfb openbox xdotool x11-utils imagemagick
    apt-get install --no-install-recommends libxcb-cursor0 libxkbcommon-x11-0 libxcb-icccm4
        libxcb-image0 libxcb-keysyms1 libxcb-randr0 libxcb-render-util0 libxcb-shape0
        libxcb-xinerama0 libegl1
(the second line's libraries are what Qt's xcb platform plugin loads; without
libxcb-cursor0 the app aborts with "Could not load the Qt platform plugin xcb"),

and the Python side is the project's own virtualenv (``. .venv/bin/activate``).

Screens and themes:
    1280x720 at 100 %                 -> ``*-1280x720-{light,dark}.png``
    1920x1080 at 150 % (QT_SCALE_FACTOR=1.5, the same 1280x720 logical pixels)
                                      -> ``*-1920x1080-150pct-{light,dark}.png``
The theme is the app's own setting (``settings.json`` in the data folder: "light"/"dark").

Scenes (see SCENES below): first-run, demo-running, stalled, crash-recovered,
import-errors, account-no-keyring, job-detail, unknown-outcome, import-images,
import-test-run, import-routes, import-routing-tab, gallery, gallery-hover, gallery-preview,
gallery-variant, review, review-compare, account-manage, team, settings.

Usage:
    python scripts/take-screenshots.py [--out docs/screenshots] [--scene NAME ...]
                                       [--size 1280x720|1920x1080-150pct ...]
                                       [--theme light|dark ...] [--keep] [--source DIR]

Look at every image before committing it: clipped text, a wrong state or an empty
window are defects of the app, not of the script.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO
"""The checkout whose app/ is run (--source: e.g. a `git archive HEAD app resources`
export, to shoot the committed app while the working tree is being edited)."""
TOOLS = ("Xvfb", "openbox", "xdotool", "xwininfo", "import", "convert")


@dataclass(frozen=True)
class Screen:
    width: int
    height: int
    scale: float

    @property
    def label(self) -> str:
        base = f"{self.width}x{self.height}"
        return base if self.scale == 1 else f"{base}-{round(self.scale * 100)}pct"


SCREENS = {s.label: s for s in (Screen(1280, 720, 1.0), Screen(1920, 1080, 1.5))}

SAMPLE = "\n".join([
    "name,prompt",
    "fox,A red fox trotting through fresh snow at dawn",
    "harbour,Fishing boats leaving a harbour in light fog",
    "city,A neon-lit city street in the rain at night",
    "forest,Sunbeams through a pine forest",
    "waves,Slow waves rolling onto a black sand beach",
    "market,A busy spice market seen from above",
]) + "\n"

STALL_SHEET = "name,prompt\n" + "\n".join(
    [
        "fox,A red fox trotting through fresh snow at dawn",
        "account-test,Test shot [[mock:no_credits]]",
    ]
    + [f"shot{i:02d},A short scene number {i} of a city waking up" for i in range(1, 21)]
) + "\n"

GALLERY_SHEET = "name,prompt\n" + "\n".join(
    [f"shot{i:02d},A short scene number {i} of a city waking up" for i in range(1, 4)]
    + ["refused,A scene the safety filter refuses [[mock:content_policy]]"]
    + [f"shot{i:02d},A short scene number {i} of a city waking up" for i in range(4, 7)]
    + ["refused-2,Another refused scene [[mock:content_policy]]"]
    + [f"shot{i:02d},A short scene number {i} of a city waking up" for i in range(7, 13)]
) + "\n"

BAD_SHEET = "\n".join([
    "name,prompt,duration,seed",
    "fox,A red fox trotting through fresh snow at dawn,5,1",
    "empty,,5,2",
    "boat,Fishing boats leaving a harbour,abc,3",
    "long," + "A very long prompt. " * 210 + ",5,4",
    "city,A neon-lit city street in the rain at night,99,x",
    "waves,Slow waves rolling onto a black sand beach,5,6",
    "forest,Sunbeams through a pine forest,8,7",
]) + "\n"


class Session:
    """One X server (Xvfb + openbox) at one screen size."""

    def __init__(self, screen: Screen) -> None:
        self.screen = screen
        self.procs: list[subprocess.Popen[bytes]] = []
        self.display = ""

    def __enter__(self) -> Session:
        r, w = os.pipe()
        xvfb = subprocess.Popen(
            ["Xvfb", "-displayfd", str(w), "-screen", "0",
             f"{self.screen.width}x{self.screen.height}x24", "-nolisten", "tcp", "-dpi", "96"],
            pass_fds=(w,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(w)
        self.procs.append(xvfb)
        with os.fdopen(r) as pipe:
            number = pipe.readline().strip()
        if not number:
            raise SystemExit("Xvfb did not start")
        self.display = f":{number}"
        wm = subprocess.Popen(["openbox", "--sm-disable", "--config-file", self.wm_config()],
                              env=self.env(),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(wm)
        time.sleep(1.0)
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in reversed(self.procs):
            stop(proc)
        shutil.rmtree(self.config_dir, ignore_errors=True)

    def wm_config(self) -> str:
        """openbox's default configuration with main windows maximized (as most users run
        it; dialogs keep the size and place the app gives them)."""
        self.config_dir = Path(tempfile.mkdtemp(prefix="reelqueue-openbox-"))
        text = Path("/etc/xdg/openbox/rc.xml").read_text("utf-8")
        rule = ('<applications>\n<application name="*" class="*" type="normal">'
                "<maximized>yes</maximized></application>")
        path = self.config_dir / "rc.xml"
        path.write_text(text.replace("<applications>", rule, 1), "utf-8")
        return str(path)

    def env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ, DISPLAY=self.display, QT_QPA_PLATFORM="xcb",
                   PYTHONPATH=str(SOURCE / "app"), LANG="en_US.UTF-8")
        env.pop("WAYLAND_DISPLAY", None)
        if self.screen.scale != 1:
            env["QT_SCALE_FACTOR"] = str(self.screen.scale)
        env.update(extra)
        return env

    def xdo(self, *args: str) -> str:
        out = subprocess.run(["xdotool", *args], env=self.env(), capture_output=True,
                             text=True, timeout=30)
        return out.stdout.strip()

    def capture(self, path: Path, *, full_colour: bool = False) -> None:
        """The whole screen as a PNG without alpha or metadata: 256 colours without
        dithering (a third of the size; flat UI colours and anti-aliased text survive),
        or 24-bit with ``full_colour`` (a video thumbnail's gradients)."""
        raw = path.with_suffix(".raw.png")
        subprocess.run(["import", "-window", "root", str(raw)], env=self.env(), check=True)
        depth = ["PNG24:"] if full_colour else ["+dither", "-colors", "256", "PNG8:"]
        subprocess.run(["convert", str(raw), "-alpha", "off", "-strip",
                        "-define", "png:compression-level=9", "-define",
                        "png:exclude-chunks=date,time", *depth[:-1], f"{depth[-1]}{path}"],
                       check=True)
        raw.unlink()
        print(f"  wrote {path.relative_to(REPO) if path.is_relative_to(REPO) else path}",
              flush=True)


def stop(proc: subprocess.Popen[bytes], grace: float = 5.0) -> None:
    """End a process this script started (its own process group if it has one)."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM) if os.getpgid(proc.pid) == proc.pid \
            else proc.terminate()
    except ProcessLookupError:
        return
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        kill(proc)


def kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL, as a crash would."""
    try:
        if os.getpgid(proc.pid) == proc.pid:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except ProcessLookupError:
        pass
    proc.wait(10)


class Scene:
    """A temporary data and videos folder, the theme set, and the app started on them."""

    def __init__(self, x: Session, theme: str, root: Path) -> None:
        self.x, self.theme = x, theme
        self.data, self.videos = root / "data", root / "videos"
        self.data.mkdir(parents=True)
        self.videos.mkdir()
        self.root = root
        for folder in (self.data, self.data / "demo"):  # the demo keeps its own folder
            folder.mkdir(exist_ok=True)
            (folder / "settings.json").write_text(json.dumps({"theme": theme}), "utf-8")

    def cli(self, *args: str, stdin: str = "", **env: str) -> str:
        """A headless command on this scene's folders (no display)."""
        full = dict(self.x.env(**env))
        full.pop("DISPLAY", None)
        out = subprocess.run([sys.executable, "-m", "reelqueue", "--data-dir", str(self.data),
                              "--videos-dir", str(self.videos), *args], env=full,
                             input=stdin, capture_output=True, text=True, timeout=300)
        if out.returncode != 0:
            raise SystemExit(f"reelqueue {' '.join(args)} failed:\n{out.stdout}{out.stderr}")
        return out.stdout

    def app(self, *args: str, **env: str) -> subprocess.Popen[bytes]:
        """The window (``reelqueue`` with ``args``), in its own process group."""
        log = open(self.root / "app.log", "ab")  # noqa: SIM115 - closed with the process
        return subprocess.Popen([sys.executable, "-m", "reelqueue", "--data-dir",
                                 str(self.data), "--videos-dir", str(self.videos), *args],
                                env=self.x.env(**env), stdout=log, stderr=log,
                                start_new_session=True)

    def sheet(self, name: str, text: str) -> Path:
        path = self.root / name
        path.write_text(text, "utf-8")
        return path


def wait_window(x: Session, proc: subprocess.Popen[bytes], title: str = "ReelQueue",
                timeout: float = 60) -> str:
    """The id of the app's visible window named ``title`` (waits for it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the app exited ({proc.returncode}) before its window showed")
        found = x.xdo("search", "--all", "--onlyvisible", "--pid", str(proc.pid), "--name", title)
        if found:
            return found.splitlines()[0]
        time.sleep(0.3)
    raise SystemExit(f"no window named {title!r} after {timeout} s")


def wait_dialog(x: Session, proc: subprocess.Popen[bytes], main: str,
                timeout: float = 30) -> str:
    """The id of a visible window of the app other than ``main`` (waits for it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = x.xdo("search", "--onlyvisible", "--pid", str(proc.pid))
        others = [w for w in found.splitlines() if w and w != main]
        if others:
            return others[0]
        time.sleep(0.3)
    raise SystemExit(f"no dialog opened after {timeout} s")


def geometry(x: Session, window: str) -> tuple[int, int, int, int]:
    """Left, top, width, height of ``window`` in screen pixels (xwininfo's absolute
    position: xdotool's getwindowgeometry counts the frame's offset twice under openbox)."""
    out = subprocess.run(["xwininfo", "-id", window], env=x.env(), capture_output=True,
                         text=True, timeout=30, check=True).stdout
    values = {}
    for line in out.splitlines():
        key, _, value = line.strip().partition(":")
        values[key] = value.strip()
    return (int(values["Absolute upper-left X"]), int(values["Absolute upper-left Y"]),
            int(values["Width"]), int(values["Height"]))


def click(x: Session, window: str, fx: float, fy: float, *, from_right: bool = False,
          double: bool = False) -> None:
    """Click at logical (fx, fy) pixels inside ``window`` (from its right edge when
    ``from_right``), scaled to the screen."""
    left, top, width, _height = geometry(x, window)
    s = x.screen.scale
    px = left + width - round(fx * s) if from_right else left + round(fx * s)
    py = top + round(fy * s)
    x.xdo("mousemove", str(px), str(py))
    time.sleep(0.3)
    x.xdo("click", "--repeat", "2" if double else "1", "--delay", "120", "1")
    x.xdo("mousemove", "0", "0")  # no hover highlight or tooltip in the shot


def point(x: Session, window: str, fx: float, fy: float) -> None:
    """Rest the pointer at logical (fx, fy) inside ``window`` (no click)."""
    left, top, _width, _height = geometry(x, window)
    s = x.screen.scale
    x.xdo("mousemove", str(left + round(fx * s)), str(top + round(fy * s)))


def settle(seconds: float) -> None:
    time.sleep(seconds)


# --- scenes -------------------------------------------------------------------------------

def first_run(scene: Scene, out: Path) -> None:
    """A new user's first start: no account, no job."""
    proc = scene.app()
    try:
        wait_window(scene.x, proc)
        settle(3)
        scene.x.capture(out)
    finally:
        stop(proc)


def demo_running(scene: Scene, out: Path) -> None:
    """``reelqueue demo`` about 12 s in: every card rendering."""
    proc = scene.app("demo")
    try:
        wait_window(scene.x, proc)
        settle(12)
        scene.x.capture(out)
    finally:
        stop(proc)


def stalled(scene: Scene, out: Path) -> None:
    """The demo accounts on a sheet with one out-of-credits row: it moves from account to
    account until every one is out of credits; once the renders in flight finish, the
    engine is stalled with jobs waiting."""
    sheet = scene.sheet("stall.csv", STALL_SHEET)
    proc = scene.app("demo", "--sheet", str(sheet))
    try:
        wait_window(scene.x, proc)
        settle(45)  # demo renders take 20-26 s; then nothing can run
        scene.x.capture(out)
    finally:
        stop(proc)


def crash_recovered(scene: Scene, out: Path) -> None:
    """The demo window SIGKILLed with renders in flight, then started again."""
    proc = scene.app("demo")
    try:
        wait_window(scene.x, proc)
        settle(8)
    finally:
        kill(proc)
    proc = scene.app("demo")
    try:
        wait_window(scene.x, proc)
        settle(12)  # the recovery follow-up asks the provider about each render
        scene.x.capture(out)
    finally:
        stop(proc)


def import_errors(scene: Scene, out: Path) -> None:
    """A sheet with bad rows opened with ReelQueue: the import dialog lists the errors."""
    scene.cli("accounts", "add", "--provider", "mock", "--capacity", "4", "studio")
    sheet = scene.sheet("shots-with-errors.csv", BAD_SHEET)
    proc = scene.app(str(sheet))
    try:
        dialog = wait_window(scene.x, proc, title="Import")
        settle(3)
        click(scene.x, dialog, *ERRORS_TAB)  # the refused rows and why
        settle(1)
        scene.x.capture(out)
    finally:
        stop(proc)


def account_no_keyring(scene: Scene, out: Path) -> None:
    """'Add account' where no keyring can be reached (no Secret Service on D-Bus)."""
    env = {"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
           "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus"}
    proc = scene.app(**env)
    try:
        window = wait_window(scene.x, proc)
        settle(2)
        click(scene.x, window, *ADD_ACCOUNT, from_right=True)
        dialog = wait_dialog(scene.x, proc, window)
        settle(1)
        # The built-in mock (checked locally, nothing leaves the machine), a name and a
        # key; Connect then fails at the keyring and the dialog says why and what to do.
        x = scene.x
        x.xdo("windowfocus", "--sync", dialog)
        x.xdo("type", "--delay", "60", "Mock")  # the provider list has the focus
        x.xdo("key", "Tab")
        x.xdo("type", "--delay", "30", "Studio A")
        x.xdo("key", "Tab")
        x.xdo("type", "--delay", "30", "mk-demo-0123456789")
        x.xdo("key", "Return")
        settle(3)
        scene.x.capture(out)
    finally:
        stop(proc)


def job_detail(scene: Scene, out: Path) -> None:
    """A finished job's detail (with its thumbnail where one can be made)."""
    scene.cli("accounts", "add", "--provider", "mock", "--capacity", "4", "studio")
    sheet = scene.sheet("shots.csv", SAMPLE)
    scene.cli("run", str(sheet), "--no-progress")
    proc = scene.app()
    try:
        window = wait_window(scene.x, proc)
        settle(3)
        click(scene.x, window, *FIRST_ROW, double=True)
        wait_dialog(scene.x, proc, window)
        settle(4)  # the thumbnail is made off the GUI thread
        scene.x.capture(out, full_colour=True)
    finally:
        stop(proc)


def unknown_outcome(scene: Scene, out: Path) -> None:
    """A create whose answer was lost and that the provider's records could not settle
    (issue 19): the mock holds the answer back and "another client" rendered the same
    prompt, so the job waits for the user with its two candidates."""
    scene.cli("accounts", "add", "--provider", "mock", "--capacity", "4", "--reconcile",
              "search", "--settle-seconds", "0.5", "studio")
    sheet = scene.sheet("unknown.csv", "name,prompt\n"
                        'fox,"A red fox in fresh snow, morning light '
                        '[[mock:create_timeout=3*1,foreign_twin=1*1]]"\n'
                        "owl,An owl at dusk\ncat,A cat on a windowsill\n")
    scene.cli("run", str(sheet), "--http-timeout", "1", "--no-progress")
    proc = scene.app()
    try:
        window = wait_window(scene.x, proc)
        settle(3)
        click(scene.x, window, *FIRST_ROW, double=True)
        wait_dialog(scene.x, proc, window)
        settle(2)
        scene.x.capture(out, full_colour=True)
    finally:
        stop(proc)


def import_images(scene: Scene, out: Path) -> None:
    """A sheet naming its reference images by absolute path: the one in the sheet's own
    folder is taken, the one elsewhere is refused with the folder named, and the dialog
    offers "Allow images from other folders" (issue 23)."""
    png = bytes.fromhex("89504e470d0a1a0a") + bytes(32)
    sheets, pictures = scene.root / "sheets", scene.root / "pictures"
    sheets.mkdir()
    pictures.mkdir()
    (sheets / "fox.png").write_bytes(png)
    (pictures / "owl.png").write_bytes(png)
    sheet = sheets / "shots.csv"
    sheet.write_text("name,prompt,image\n"
                     f"fox,A red fox in fresh snow,{sheets / 'fox.png'}\n"
                     f"owl,An owl at dusk,{pictures / 'owl.png'}\n", "utf-8")
    proc = scene.app(str(sheet))
    try:
        dialog = wait_window(scene.x, proc, title="Import")
        settle(3)
        click(scene.x, dialog, *ERRORS_TAB)
        settle(1)
        scene.x.capture(out)
    finally:
        stop(proc)


ROUTES_SHEET = ("name,prompt,providers,duration\n"
                "harbour,A harbour at dawn with fishing boats,runway|luma|veo,5\n"
                "fox,A red fox in fresh snow,veo|runway,8\n"
                "owl,An owl at dusk in an old barn,luma|runway|kling,5\n"
                "city,A city street in the rain at night,,5\n")


def import_routes(scene: Scene, out: Path, tab: tuple[float, float] | None = None) -> None:
    """A sheet whose rows name several providers: the preview shows each routed row's
    candidates best first with their prices (issue 24); a provider that does not take the
    row as written is left out (its tooltip says why). ``tab``: a tab of the dialog to
    show instead."""
    sheet = scene.sheet("routes.csv", ROUTES_SHEET)
    proc = scene.app(str(sheet))
    try:
        dialog = wait_window(scene.x, proc, title="Import")
        settle(3)
        if tab is not None:
            click(scene.x, dialog, *tab)
            settle(1)
        scene.x.capture(out)
    finally:
        stop(proc)


def import_routing_tab(scene: Scene, out: Path) -> None:
    """The import dialog's Routing tab: the batch's route, rank, tolerance and the
    content-policy opt-in (issue 24)."""
    import_routes(scene, out, tab=ROUTING_TAB)


@contextmanager
def finished_gallery(scene: Scene, *, variant: bool = False) -> Iterator[str]:
    """The window on a finished batch (two rows refused by the provider), switched to the
    gallery (Ctrl+G) with its thumbnails made; yields the window's id. ``variant``: the
    first job was rendered again with a new seed (a new job beside the kept video)."""
    scene.cli("accounts", "add", "--provider", "mock", "--capacity", "4", "studio")
    sheet = scene.sheet("shots.csv", GALLERY_SHEET)
    scene.cli("run", str(sheet), "--no-progress")
    if variant:
        scene.cli("retry", "1", "--new-seed", "42", "--yes")
        scene.cli("run", "--no-progress")
    proc = scene.app()
    try:
        window = wait_window(scene.x, proc)
        settle(3)
        scene.x.xdo("windowfocus", "--sync", window)
        scene.x.xdo("key", "ctrl+g")
        settle(4)  # the thumbnails are made off the GUI thread
        yield window
    finally:
        stop(proc)


def gallery(scene: Scene, out: Path) -> None:
    """The results gallery (issue 23): a finished batch's videos as thumbnails, two
    refused by the provider (Ctrl+G switches from the table)."""
    with finished_gallery(scene):
        scene.x.capture(out, full_colour=True)


def gallery_variant(scene: Scene, out: Path) -> None:
    """The gallery after "Retry with a new seed" of a finished video (issue 23): the kept
    video and its new seed's, a new job with its own file ("shot01 · seed 42")."""
    with finished_gallery(scene, variant=True) as window:
        scene.x.xdo("windowfocus", "--sync", window)
        scene.x.xdo("key", "End")  # the new job is the batch's last tile: shown, selected
        settle(2)
        scene.x.capture(out, full_colour=True)


REVIEW_SHEET = "name,prompt,duration,repeat\n" + "\n".join(
    f"{name},{prompt},4,3" for name, prompt in (
        ("fox", "A red fox trotting through fresh snow at dawn"),
        ("harbour", "Fishing boats leaving a harbour in light fog"),
        ("city", "A neon-lit city street in the rain at night"),
        ("forest", "Sunbeams through a pine forest"),
        ("desert", "Wind moving sand over a dune at noon")))


def review(scene: Scene, out: Path, *, compare: bool = False) -> None:
    """The gallery's review page (issue 35): 5 rows of 3 takes, some picked and rejected
    from the command line, Ctrl+E, Down to row 2. ``compare``: then Space, the current
    take beside the next one from one clock."""
    scene.cli("accounts", "add", "--provider", "mock", "--capacity", "4", "studio")
    sheet = scene.sheet("takes.csv", REVIEW_SHEET)
    scene.cli("run", str(sheet), "--no-progress")
    for job, decision, *rating in (("2", "pick", "4"), ("4", "reject"), ("5", "reject"),
                                   ("6", "reject"), ("7", "pick", "5"), ("9", "reject")):
        scene.cli("review", "set", job, decision,
                  *(("--rating", rating[0]) if rating else ()))
    proc = scene.app()
    try:
        window = wait_window(scene.x, proc)
        settle(3)
        scene.x.xdo("windowfocus", "--sync", window)
        scene.x.xdo("key", "ctrl+g")
        settle(2)
        scene.x.xdo("key", "ctrl+e")
        settle(3)  # the takes read, their thumbnails made off the GUI thread
        scene.x.xdo("key", "Down")
        if compare:
            scene.x.xdo("key", "space")
        settle(2)
        scene.x.capture(out, full_colour=True)
    finally:
        stop(proc)


def review_compare(scene: Scene, out: Path) -> None:
    """The review page's Space: two takes side by side, playing from one clock."""
    review(scene, out, compare=True)


def gallery_hover(scene: Scene, out: Path) -> None:
    """The gallery with the pointer resting on a tile: its larger picture beside it."""
    with finished_gallery(scene) as window:
        point(scene.x, window, *SECOND_TILE)
        settle(3)  # the rest's delay, then the larger picture made off the GUI thread
        scene.x.capture(out, full_colour=True)


def gallery_preview(scene: Scene, out: Path) -> None:
    """The gallery's Space preview (PreviewDialog): the current tile's larger picture in
    its own window."""
    with finished_gallery(scene) as window:
        click(scene.x, window, *SECOND_TILE)
        scene.x.xdo("key", "space")
        settle(3)  # the larger picture is made off the GUI thread
        scene.x.capture(out, full_colour=True)


def settings(scene: Scene, out: Path) -> None:
    """The Settings dialog (toolbar's Settings): folders, retries, team queue, theme and
    the HTTP API."""
    proc = scene.app()
    try:
        window = wait_window(scene.x, proc)
        settle(2)
        click(scene.x, window, *SETTINGS_BUTTON, from_right=True)
        wait_dialog(scene.x, proc, window)
        settle(1.5)
        scene.x.capture(out)
    finally:
        stop(proc)


def account_manage(scene: Scene, out: Path) -> None:
    """A card's "Manage…" (issue 23): key, limit, daily cap, address and removal."""
    scene.cli("accounts", "add", "--provider", "mock", "--capacity", "4", "studio")
    scene.cli("accounts", "set", "studio", "--daily-cap", "20")
    proc = scene.app()
    try:
        window = wait_window(scene.x, proc)
        settle(3)
        click(scene.x, window, *MANAGE_BUTTON)
        wait_dialog(scene.x, proc, window)
        settle(1.5)
        scene.x.capture(out)
    finally:
        stop(proc)


def import_test_run(scene: Scene, out: Path) -> None:
    """The sample sheet's import with "Test run: only the first 2 rows" ticked: the
    summary counts and prices those 2 rows, not the sheet (issue 23)."""
    sheet = scene.sheet("shots.csv", SAMPLE)
    proc = scene.app(str(sheet))
    try:
        dialog = wait_window(scene.x, proc, title="Import")
        settle(3)
        click(scene.x, dialog, *TEST_RUN_BOX)
        settle(0.5)
        scene.x.xdo("key", "Tab")  # to the number of rows (3 by default)
        scene.x.xdo("key", "Down")
        settle(1)
        scene.x.capture(out)
    finally:
        stop(proc)



TEAM_SHEET = "name,prompt\n" + "\n".join(
    f"shot{i:02d},A short scene number {i} of a city waking up" for i in range(1, 13)) + "\n"


def team(scene: Scene, out: Path) -> None:
    """The window on a team database (issue 21): a throwaway PostgreSQL server; another
    machine ("box-b": a real ``reelqueue worker`` in its own UTS namespace, so its host
    name differs, with its own videos folder) renders part of a batch; this machine's
    window then shows each file with the machine that holds it ("file · on box-b"), and
    a gateway account whose address was changed on the team database waits for this
    machine's confirmation before its key goes anywhere. Needs root (``unshare -u``)."""
    sys.path.insert(0, str(REPO))
    import psycopg
    from tests.pgserver import start_server

    server = start_server()
    other: subprocess.Popen[bytes] | None = None
    try:
        dsn = server.dsn
        scene.cli("--store", dsn, "accounts", "add", "--provider", "mock", "--capacity", "3",
                  "studio")
        scene.cli("--store", dsn, "accounts", "add", "--provider", "openai-compat",
                  "--base-url", "https://gateway.example.com/v1", "--model", "wan-2.2",
                  "--no-check", "gateway", stdin="sk-demo-not-a-real-key\n")
        sheet = scene.sheet("team.csv", TEAM_SHEET)
        scene.cli("--store", dsn, "import", str(sheet), "--provider", "mock",
                  "--batch-name", "city")
        b_data, b_videos = scene.root / "box-b" / "data", scene.root / "box-b" / "videos"
        b_data.mkdir(parents=True)
        b_videos.mkdir()
        env = dict(scene.x.env())
        env.pop("DISPLAY", None)
        log = open(scene.root / "box-b.log", "ab")  # noqa: SIM115 - closed with the process
        other = subprocess.Popen(
            ["unshare", "-u", "sh", "-c", 'hostname box-b && exec "$@"', "sh",
             sys.executable, "-m", "reelqueue", "--data-dir", str(b_data), "--videos-dir",
             str(b_videos), "--store", dsn, "worker"],
            env=env, stdout=log, stderr=log, start_new_session=True)
        deadline = time.monotonic() + 120
        done = 0
        while done < 5 and time.monotonic() < deadline:
            if other.poll() is not None:
                raise SystemExit(f"box-b's worker exited: see {scene.root / 'box-b.log'}")
            with psycopg.connect(dsn, autocommit=True) as db:
                row = db.execute("SELECT count(*) FROM jobs WHERE state = 'COMPLETED'"
                                 ).fetchone()
            done = int(row[0]) if row else 0
            time.sleep(0.2)
        stop(other)
        # A teammate (or anyone with write access to the team database) points the
        # gateway at another address: this machine's key is not sent there unconfirmed.
        with psycopg.connect(dsn, autocommit=True) as db:
            db.execute("UPDATE accounts SET base_url = 'https://gw.elsewhere.example.net/v1'"
                       " WHERE name = 'gateway'")
        proc = scene.app("--store", dsn)
        try:
            window = wait_window(scene.x, proc)
            settle(8)  # this machine renders the rest (the mock is fast)
            scene.x.capture(out)
            click(scene.x, window, *SECOND_MANAGE_BUTTON)  # the gateway's "Manage…"
            wait_dialog(scene.x, proc, window)
            settle(2)
            scene.x.capture(out.with_name(out.name.replace("team-", "team-confirm-")))
        finally:
            stop(proc)
    finally:
        if other is not None:
            stop(other)
        server.stop()


# Logical pixels inside the main window (the same at 100 % and 150 %: both screens are
# 1280x720 logical). ADD_ACCOUNT is measured from the window's right edge.
ADD_ACCOUNT = (183.0, 26.0)
SETTINGS_BUTTON = (65.0, 26.0)  # from the window's right edge, like ADD_ACCOUNT
FIRST_ROW = (300.0, 330.0)
ERRORS_TAB = (598.0, 95.0)  # inside the import dialog
ROUTING_TAB = (668.0, 95.0)  # inside the import dialog, right of Errors
TEST_RUN_BOX = (44.0, 451.0)  # inside the import dialog: "Test run: only the first"
MANAGE_BUTTON = (217.0, 152.0)  # the first account card's "Manage…"
SECOND_MANAGE_BUTTON = (481.0, 152.0)  # the second card's
SECOND_TILE = (385.0, 420.0)  # the gallery's second tile

SCENES: dict[str, Callable[[Scene, Path], None]] = {
    "first-run": first_run,
    "demo-running": demo_running,
    "stalled": stalled,
    "crash-recovered": crash_recovered,
    "import-errors": import_errors,
    "account-no-keyring": account_no_keyring,
    "job-detail": job_detail,
    "unknown-outcome": unknown_outcome,
    "import-images": import_images,
    "import-test-run": import_test_run,
    "import-routes": import_routes,
    "import-routing-tab": import_routing_tab,
    "gallery": gallery,
    "gallery-hover": gallery_hover,
    "gallery-preview": gallery_preview,
    "gallery-variant": gallery_variant,
    "review": review,
    "review-compare": review_compare,
    "account-manage": account_manage,
    "team": team,
    "settings": settings,
}


@contextmanager
def scratch(keep: bool) -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="reelqueue-shots-"))
    try:
        yield root
    finally:
        if keep:
            print(f"  kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots")
    parser.add_argument("--scene", action="append", choices=sorted(SCENES))
    parser.add_argument("--size", action="append", choices=sorted(SCREENS))
    parser.add_argument("--theme", action="append", choices=("light", "dark"))
    parser.add_argument("--keep", action="store_true", help="keep the scenes' temp folders")
    parser.add_argument("--source", type=Path, default=REPO,
                        help="a checkout (app/ and resources/) to run instead of this one")
    args = parser.parse_args(argv)
    global SOURCE
    SOURCE = args.source.resolve()
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        print(f"missing: {', '.join(missing)}; see the apt-get line at the top of this "
              "script", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    for size in args.size or list(SCREENS):
        with Session(SCREENS[size]) as x:
            for theme in args.theme or ["light", "dark"]:
                for name in args.scene or list(SCENES):
                    print(f"{name} {size} {theme}", flush=True)
                    with scratch(args.keep) as root:
                        SCENES[name](Scene(x, theme, root),
                                     args.out / f"{name}-{size}-{theme}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
