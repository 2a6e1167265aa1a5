"""Results gallery benchmark (issue 23): 1,000 distinct small videos in one batch.

Run: ``QT_QPA_PLATFORM=offscreen python benchmarks/bench_gallery.py [--videos N]
[--runs N] [--keep DIR]``.

The videos (64x36, 6 frames, each its own colour, MPEG-4 by PyAV) are made once into a
temporary folder (``--keep DIR``: made there once and reused). Each run shows them in the
gallery (the window's own GalleryView, 1200x700) and measures, with a cold thumbnail cache
(a new, empty folder) and then a warm one (the same folder with every picture made
beforehand, untimed; a new view: nothing in memory):

- first paint: from handing the view its 1,000 tiles to the first paint of the grid;
- first screen: until every tile on the first screen shows its picture;
- scroll: the grid scrolled top to bottom at 164 px (a row of tiles) every 16 ms, as a
  fast wheel or a held scroll bar does, then until the last screen shows every picture;
- the GUI thread's responsiveness throughout: a 5 ms QTimer heartbeat records the gap
  between ticks; p99 gap and the longest gap (target: no gap over 50 ms); the grid's
  paints timed on the GUI thread's own CPU clock (p99, longest) and its busy share;
- two baselines per run, without the gallery: the heartbeat alone (idle) and while the
  GUI thread burns 7 ms of CPU every 16 ms (control): on a loaded machine the wall-clock
  gaps are mostly the scheduler's share, and these say how much.

Medians over ``--runs`` runs (at least 3) are printed. Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import ClassVar

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))

import av
from _common import machine_line
from PySide6.QtCore import QElapsedTimer, QEvent, QEventLoop, QObject, QTimer
from PySide6.QtWidgets import QApplication

from reelqueue.application.gallery import GalleryItem
from reelqueue.ui import gallery, theme
from reelqueue.ui.gallery import PICTURE, GalleryList, GalleryView
from reelqueue.ui.gallery_thumbs import gallery_thumbnail

STALL_TARGET_MS = 50.0
SCROLL_STEP_PX = 164
SCROLL_EVERY_MS = 16


def make_video(path: Path, rgb: tuple[int, int, int], size: tuple[int, int] = (64, 36),
               frames: int = 6) -> None:
    with av.open(str(path), "w") as out:
        stream = out.add_stream("mpeg4", rate=24)
        stream.width, stream.height = size
        stream.pix_fmt = "yuv420p"
        for _ in range(frames):
            frame = av.VideoFrame(size[0], size[1], "rgb24")
            line = frame.planes[0].line_size
            frame.planes[0].update((bytes(rgb) * size[0] + bytes(line - 3 * size[0]))
                                   * size[1])
            for packet in stream.encode(frame.reformat(format="yuv420p")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)


def make_videos(folder: Path, count: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(count):
        path = folder / f"clip-{i:05d}.mp4"
        if not path.is_file():
            make_video(path, ((i * 37) % 256, (i * 91) % 256, (i * 53 + 90) % 256))
        paths.append(path)
    return paths


def tiles(paths: list[Path]) -> list[GalleryItem]:
    return [GalleryItem(i + 1, 1, i + 1, path.stem, f"A cinematic shot number {i}", "mock",
                        "studio-a", "COMPLETED", str(path), path.stat().st_size, None,
                        None, i, None, None) for i, path in enumerate(paths)]


class TimedList(GalleryList):
    """The gallery's grid, timing each paint on the GUI thread's own CPU clock (apart
    from what other processes take from the machine: the wall-clock gaps include that)."""

    paints: ClassVar[list[float]] = []

    def paintEvent(self, event: object) -> None:
        started = time.thread_time()
        super().paintEvent(event)  # type: ignore[arg-type]
        TimedList.paints.append((time.thread_time() - started) * 1000)


gallery.GalleryList = TimedList  # type: ignore[misc]


class Heartbeat(QObject):
    """A 5 ms timer on the GUI thread; every gap between two ticks is recorded."""

    def __init__(self) -> None:
        super().__init__()
        self.timer = QTimer(self)
        self.timer.setInterval(5)
        self.timer.timeout.connect(self._tick)
        self.gaps: list[float] = []
        self._last = 0.0

    def start(self) -> None:
        self.gaps = []
        self._last = time.perf_counter()
        self.timer.start()

    def _tick(self) -> None:
        now = time.perf_counter()
        self.gaps.append((now - self._last) * 1000)
        self._last = now

    def stop(self) -> tuple[float, float]:
        """(p99 gap, longest gap) in ms."""
        self.timer.stop()
        gaps = sorted(self.gaps) or [0.0]
        return gaps[min(len(gaps) - 1, int(len(gaps) * 0.99))], gaps[-1]


class FirstPaint(QObject):
    def __init__(self, widget: QObject, clock: QElapsedTimer) -> None:
        super().__init__()
        self.clock = clock
        self.at_ms: float | None = None
        widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint and self.at_ms is None:
            self.at_ms = self.clock.nsecsElapsed() / 1e6
        return False


def wait_until(predicate, timeout: float = 120.0) -> None:  # type: ignore[no-untyped-def]
    loop = QEventLoop()
    deadline = time.perf_counter() + timeout
    poll = QTimer()
    poll.setInterval(2)
    poll.timeout.connect(lambda: loop.quit() if predicate() or time.perf_counter() > deadline
                         else None)
    poll.start()
    loop.exec()
    poll.stop()
    if not predicate():
        raise TimeoutError("condition not met")


def screen_filled(view: GalleryView) -> bool:
    """Every tile on screen shows its picture."""
    grid = view.view
    rect = grid.viewport().rect()
    step = grid.gridSize()
    for y in range(step.height() // 2, rect.height(), step.height()):
        for x in range(step.width() // 2, rect.width(), step.width()):
            index = grid.indexAt(rect.topLeft().__class__(x, y))
            if index.isValid():
                item = view.model.items[index.row()]
                if view.thumbs.pixmap(item.output_path) is None:
                    return False
    return True


def fill_cache(items: list[GalleryItem], cache: Path) -> None:
    """Make every tile's picture in ``cache`` (untimed), at the size the gallery keeps."""
    box = (PICTURE.width() * 2, PICTURE.height() * 2)
    for item in items:
        gallery_thumbnail(Path(item.output_path), cache, box)


def idle_gaps(seconds: float = 3.0) -> tuple[float, float]:
    """The heartbeat with nothing else on the GUI thread: what the machine alone gives
    (other processes' load shows here, not in the gallery's figures)."""
    beat = Heartbeat()
    beat.start()
    wait_until(lambda: len(beat.gaps) * 0.005 >= seconds or False, timeout=seconds * 10)
    return beat.stop()


def control_gaps(burn_ms: float, seconds: float = 3.0) -> tuple[float, float]:
    """The heartbeat while the GUI thread burns ``burn_ms`` of CPU every 16 ms, as the
    gallery's paints do while scrolling, with nothing of the gallery: what this machine
    gives any program that busy (the scheduler's share under the load of the moment)."""
    beat = Heartbeat()
    burner = QTimer()
    burner.setInterval(SCROLL_EVERY_MS)

    def burn() -> None:
        end = time.thread_time() + burn_ms / 1000
        while time.thread_time() < end:
            pass

    burner.timeout.connect(burn)
    beat.start()
    burner.start()
    started = time.perf_counter()
    wait_until(lambda: time.perf_counter() - started >= seconds, timeout=seconds * 10)
    burner.stop()
    return beat.stop()


def one_pass(items: list[GalleryItem], cache: Path) -> dict[str, float]:
    view = GalleryView(cache)
    view.resize(1200, 700)
    view.set_batches([(1, "bench")])
    view.show()
    wait_until(lambda: view.isVisible())
    QApplication.processEvents()
    beat = Heartbeat()
    beat.start()
    TimedList.paints = []
    cpu0 = time.thread_time()
    clock = QElapsedTimer()
    clock.start()
    painted = FirstPaint(view.view.viewport(), clock)
    view.set_items(1, items)
    wait_until(lambda: painted.at_ms is not None)
    first_paint = painted.at_ms or 0.0
    wait_until(lambda: screen_filled(view))
    first_screen = clock.nsecsElapsed() / 1e6
    bar = view.view.verticalScrollBar()
    scroll_clock = QElapsedTimer()
    scroll_clock.start()
    stepper = QTimer()
    stepper.setInterval(SCROLL_EVERY_MS)
    stepper.timeout.connect(lambda: bar.setValue(min(bar.maximum(),
                                                     bar.value() + SCROLL_STEP_PX)))
    stepper.start()
    wait_until(lambda: bar.value() >= bar.maximum())
    stepper.stop()
    scrolled = scroll_clock.nsecsElapsed() / 1e6
    wait_until(lambda: screen_filled(view))
    last_screen = scroll_clock.nsecsElapsed() / 1e6
    p99, worst = beat.stop()
    cpu = (time.thread_time() - cpu0) * 1000
    wall = clock.nsecsElapsed() / 1e6
    paints = sorted(TimedList.paints) or [0.0]
    counts = dict(view.thumbs.counts)
    view.stop()
    view.close()
    view.deleteLater()
    QApplication.processEvents()
    return {"first_paint_ms": first_paint, "first_screen_ms": first_screen,
            "scroll_ms": scrolled, "last_screen_ms": last_screen, "p99_gap_ms": p99,
            "longest_gap_ms": worst,
            "paint_p99_ms": paints[min(len(paints) - 1, int(len(paints) * 0.99))],
            "paint_max_ms": paints[-1], "gui_busy_pct": 100 * cpu / wall,
            "made": float(counts["made"]),
            "from_cache": float(counts["cache"]), "max_height": float(bar.maximum())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--videos", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", type=Path, default=None,
                        help="make the videos here once and reuse them")
    args = parser.parse_args()
    app = QApplication.instance() or QApplication(sys.argv)
    theme.install(app, "light")
    work = Path(tempfile.mkdtemp(prefix="reelqueue-gallery-bench-"))
    try:
        folder = args.keep or work / "videos"
        started = time.perf_counter()
        items = tiles(make_videos(folder, args.videos))
        print(machine_line())
        print(f"{args.videos} videos ready in {time.perf_counter() - started:.1f} s "
              f"({folder})")
        results: dict[str, list[dict[str, float]]] = {"cold": [], "warm": []}
        idle: list[tuple[float, float]] = []
        control: list[tuple[float, float]] = []
        for run in range(max(3, args.runs)):
            idle.append(idle_gaps())
            control.append(control_gaps(7.0))
            print(f"run {run + 1}: control (7 ms of CPU every 16 ms, no gallery) p99 gap "
                  f"{control[-1][0]:.1f} ms, longest {control[-1][1]:.1f} ms")
            print(f"run {run + 1}: idle heartbeat p99 gap {idle[-1][0]:.1f} ms, longest "
                  f"{idle[-1][1]:.1f} ms")
            cache = work / f"cache-{run}"
            results["cold"].append(one_pass(items, cache))
            # Warm: every picture on disk first (a fast cold scroll drops the requests of
            # tiles it passes, so it does not make them all), then a new view.
            fill_cache(items, cache)
            results["warm"].append(one_pass(items, cache))
            print(f"run {run + 1}: cold {fmt(results['cold'][-1])}")
            print(f"       warm {fmt(results['warm'][-1])}")
        print(f"\nmedians of {max(3, args.runs)} runs ({args.videos} tiles, grid 1200x700):")
        keys = ("first_paint_ms", "first_screen_ms", "scroll_ms", "last_screen_ms",
                "p99_gap_ms", "longest_gap_ms", "paint_p99_ms", "paint_max_ms",
                "gui_busy_pct", "made", "from_cache")
        for kind, runs in results.items():
            print(f"{kind}: " + ", ".join(
                f"{k} {statistics.median(r[k] for r in runs):.1f}" for k in keys))
        print(f"idle: p99_gap_ms {statistics.median(i[0] for i in idle):.1f}, "
              f"longest_gap_ms {statistics.median(i[1] for i in idle):.1f}")
        print(f"control (7 ms of CPU every 16 ms): p99_gap_ms "
              f"{statistics.median(c[0] for c in control):.1f}, longest_gap_ms "
              f"{statistics.median(c[1] for c in control):.1f}")
        worst = max(r["longest_gap_ms"] for runs in results.values() for r in runs)
        print(f"\nlongest GUI-thread gap over every run: {worst:.1f} ms "
              f"(target: under {STALL_TARGET_MS:.0f} ms) -> "
              f"{'met' if worst < STALL_TARGET_MS else 'NOT met'}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def fmt(result: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.1f}" for k, v in result.items() if k != "max_height")


if __name__ == "__main__":
    raise SystemExit(main())
