"""The results gallery (issue 23): one tile per job of the chosen batch with its state
badge, keys (arrows, Home/End, Enter, Space), "Retry with a new seed" only where the
provider takes a seed, "on HOST" for a file another machine holds, and thumbnails made off
the GUI thread and cached on disk."""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
import threading
import time
from pathlib import Path

import av
import pytest
from PySide6.QtCore import Qt

from reelqueue.application.gallery import GalleryItem, local_host, seed_reason
from reelqueue.cli.context import CliContext
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.providers.builtin import builtin_registry
from reelqueue.store.base import ClaimParams, JobError
from reelqueue.store.lockfile import make_private_dir
from reelqueue.store.sqlite import SqliteStore
from reelqueue.ui import files
from reelqueue.ui.gallery import GalleryView, ItemRole, badge, picture_text
from reelqueue.ui.gallery_thumbs import cache_files
from tests.gui.conftest import OFFSCREEN_NOISE, WindowHarness, on_qloop, save_screenshot, until

REGISTRY = builtin_registry()


def make_video(path: Path, rgb: tuple[int, int, int], size: tuple[int, int] = (64, 36),
               frames: int = 6) -> Path:
    """A tiny MPEG-4 video of one colour (PyAV's own encoder; no system ffmpeg)."""
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
    return path


def tile(job_id: int, name: str, state: str, path: str, *, provider: str = "mock",
         held_by: str | None = None) -> GalleryItem:
    return GalleryItem(job_id, 1, job_id, name, f"prompt of {name}", provider, "acct", state,
                       path, None, None, held_by, None, seed_reason(REGISTRY, provider), None)


@pytest.fixture
def tiles(tmp_path: Path) -> list[GalleryItem]:
    videos = tmp_path / "videos"
    videos.mkdir()
    done = [make_video(videos / f"v{i}.mp4", (40 * i, 120, 200 - 30 * i)) for i in range(4)]
    return [
        *(tile(i + 1, f"clip {i + 1}", "COMPLETED", str(path)) for i, path in enumerate(done)),
        tile(5, "failed mock", "FAILED", str(videos / "f.mp4")),
        tile(6, "running", "RENDERING", str(videos / "r.mp4")),
        tile(7, "waiting", "QUEUED", str(videos / "q.mp4")),
        tile(8, "elsewhere", "COMPLETED", "/elsewhere/x.mp4", held_by="render-box-2"),
        tile(9, "failed kling", "FAILED", str(videos / "k.mp4"), provider="kling"),
    ]


def shown(qtbot, tiles: list[GalleryItem], cache: Path) -> GalleryView:
    view = GalleryView(cache)
    qtbot.addWidget(view)
    view.resize(1000, 600)
    view.set_batches([(1, "batch one")])
    view.set_items(1, tiles)
    view.show()
    qtbot.waitExposed(view)
    return view


def test_one_tile_per_job_with_its_badge(qtbot, tiles: list[GalleryItem],
                                         tmp_path: Path) -> None:
    view = shown(qtbot, tiles, tmp_path / "cache")
    model = view.model
    assert model.rowCount() == len(tiles)
    words = [badge(model.index(row).data(ItemRole))[0] for row in range(len(tiles))]
    assert words == ["completed"] * 4 + ["failed", "rendering", "queued", "completed",
                                         "failed"]
    assert view.count_label.text() == "9 jobs · 5 videos"
    # A tile of a batch read late (another batch was chosen since) is ignored.
    view.set_items(2, tiles[:1])
    assert model.rowCount() == len(tiles)
    qtbot.waitUntil(lambda: view.thumbs.counts["made"] == 4, timeout=20_000)
    save_screenshot(view, "gallery-grid")


# The offscreen platform cannot raise a tooltip-type window; under X it is raised.
@pytest.mark.qt_log_ignore("This plugin does not support raise", OFFSCREEN_NOISE)
def test_resting_on_a_tile_shows_its_larger_picture(qtbot, tiles: list[GalleryItem],
                                                    tmp_path: Path) -> None:
    """Issue 23: "a larger preview on hover or Space". The pointer resting on a tile (a
    tooltip's delay, fired here without waiting) shows the tile's preview-size picture
    beside it without taking the focus; another tile, a key or leaving hides it."""
    view = shown(qtbot, tiles, tmp_path / "cache")
    grid = view.view
    grid.setFocus()
    qtbot.waitUntil(grid.hasFocus)
    qtbot.mouseMove(grid.viewport(), grid.visualRect(view.model.index(1)).center())
    qtbot.waitUntil(grid.hover_timer.isActive)
    assert view.hover is None, "nothing before the rest"
    grid.hover_timer.timeout.emit()
    hover = view.hover
    assert hover is not None and hover.isVisible() and hover.item == tiles[1]
    qtbot.waitUntil(lambda: hover.picture.pixmap() is not None
                    and not hover.picture.pixmap().isNull(), timeout=20_000)
    assert hover.picture.pixmap().width() == 640, "larger than the tile's picture"
    assert grid.hasFocus(), "the popup takes no focus"
    assert hover.caption.text().splitlines()[-1] == tiles[1].output_path, "its file"
    save_screenshot(hover, "gallery-hover")
    # Another tile: hidden, then shown for it after its own rest.
    qtbot.mouseMove(grid.viewport(), grid.visualRect(view.model.index(4)).center())
    qtbot.waitUntil(lambda: not hover.isVisible())
    grid.hover_timer.timeout.emit()
    assert hover.isVisible() and hover.item == tiles[4]
    assert hover.caption.text().startswith("failed mock — failed")
    assert hover.picture.text() == picture_text(tiles[4]), "no video: the tile's words"
    qtbot.keyClick(grid, Qt.Key.Key_Right)
    assert not hover.isVisible() and not grid.hover_timer.isActive()


def test_keys_move_the_selection_enter_opens_space_previews(
        qtbot, tiles: list[GalleryItem], tmp_path: Path, monkeypatch) -> None:
    opened: list[Path] = []
    monkeypatch.setattr(files, "open_path", lambda path: opened.append(path) or True)
    view = shown(qtbot, tiles, tmp_path / "cache")
    grid = view.view
    grid.setFocus()
    qtbot.waitUntil(grid.hasFocus)
    assert grid.currentIndex().row() == 0
    qtbot.keyClick(grid, Qt.Key.Key_Right)
    assert grid.currentIndex().row() == 1
    assert [i.job_id for i in view.selected_items()] == [2]
    qtbot.keyClick(grid, Qt.Key.Key_End)
    assert grid.currentIndex().row() == len(tiles) - 1
    qtbot.keyClick(grid, Qt.Key.Key_Home)
    assert grid.currentIndex().row() == 0
    top = grid.visualRect(view.model.index(0)).top()
    per_row = sum(1 for row in range(len(tiles))
                  if grid.visualRect(view.model.index(row)).top() == top)
    assert 1 < per_row < len(tiles), "several tiles a row, several rows"
    qtbot.keyClick(grid, Qt.Key.Key_Down)
    assert grid.currentIndex().row() == per_row
    qtbot.keyClick(grid, Qt.Key.Key_Home)
    qtbot.keyClick(grid, Qt.Key.Key_Return)
    assert opened == [Path(tiles[0].output_path)]
    qtbot.keyClick(grid, Qt.Key.Key_Space)
    preview = view.preview
    assert preview is not None and preview.isVisible()
    assert preview.item == tiles[0]
    qtbot.waitUntil(lambda: preview.picture.pixmap() is not None
                    and not preview.picture.pixmap().isNull(), timeout=20_000)
    assert preview.picture.pixmap().width() == 640, "larger than the tile's picture"
    qtbot.keyClick(preview, Qt.Key.Key_Space)
    assert not preview.isVisible()


def test_retry_with_a_new_seed_only_where_the_provider_takes_one(
        qtbot, tiles: list[GalleryItem], tmp_path: Path) -> None:
    view = shown(qtbot, tiles, tmp_path / "cache")
    grid = view.view
    grid.setCurrentIndex(view.model.index(8))  # the Kling job: no seed parameter
    assert not view.retry_button.isEnabled()
    assert view.retry_button.toolTip().startswith("Kling takes no seed parameter")
    grid.setCurrentIndex(view.model.index(0))  # a finished video: kept, a new job renders
    assert view.retry_button.isEnabled()
    assert "A finished video is kept" in view.retry_button.toolTip()
    with qtbot.waitSignal(view.retryRequested) as blocker:
        view.retry_button.click()
    assert blocker.args == [[1], -1]
    grid.setCurrentIndex(view.model.index(6))  # still waiting: nothing to render again
    assert not view.retry_button.isEnabled()
    assert "have not finished yet" in view.retry_button.toolTip()
    grid.setCurrentIndex(view.model.index(4))  # a failed mock job: the mock takes a seed
    assert view.retry_button.isEnabled()
    with qtbot.waitSignal(view.retryRequested) as blocker:
        view.retry_button.click()
    assert blocker.args == [[5], -1]


def test_a_video_held_by_another_machine_says_where(qtbot, tiles: list[GalleryItem],
                                                    tmp_path: Path) -> None:
    view = shown(qtbot, tiles, tmp_path / "cache")
    index = view.model.index(7)
    assert picture_text(index.data(ItemRole)) == "on render-box-2"
    assert index.data(Qt.ItemDataRole.DecorationRole) is None
    assert "The video is on render-box-2" in index.data(Qt.ItemDataRole.ToolTipRole)
    view.view.setCurrentIndex(index)
    assert not view.open_button.isEnabled()
    assert view.open_button.toolTip() == "The video is on render-box-2: open it there."
    qtbot.waitUntil(lambda: view.thumbs.counts["made"] == 4, timeout=20_000)
    assert "/elsewhere/x.mp4" not in view.thumbs.threads  # never asked for
    assert view.thumbs.pixmap("/elsewhere/x.mp4") is None


def test_thumbnails_are_made_off_the_gui_thread_and_cached(
        qtbot, tiles: list[GalleryItem], tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    view = shown(qtbot, tiles, cache)
    qtbot.waitUntil(lambda: view.thumbs.counts["made"] == 4, timeout=20_000)
    gui = threading.current_thread().name
    assert view.thumbs.threads and gui not in view.thumbs.threads
    assert all(name.startswith("reelqueue-gallery") for name in view.thumbs.threads)
    assert len([n for n in cache_files(cache) if n.endswith(".jpg")]) == 4
    # Only the finished local videos were asked for (the others have no file here).
    assert view.thumbs.counts == {"made": 4, "cache": 0, "failed": 0}
    view.stop()
    again = shown(qtbot, tiles, cache)  # a new window: memory empty, the disk cache kept
    qtbot.waitUntil(lambda: again.thumbs.counts["cache"] == 4, timeout=20_000)
    assert again.thumbs.counts["made"] == 0
    # A replaced file (new size or time) is a new key: made again, never a stale picture.
    time.sleep(0.01)
    make_video(Path(tiles[0].output_path), (255, 0, 0), size=(96, 54))
    third = shown(qtbot, tiles, cache)
    qtbot.waitUntil(lambda: sum(third.thumbs.counts.values()) == 4, timeout=20_000)
    assert third.thumbs.counts == {"made": 1, "cache": 3, "failed": 0}


def test_no_worker_wakes_during_the_paint_that_asks_for_pictures(
        qtbot, tiles: list[GalleryItem], tmp_path: Path) -> None:
    """Woken inside the paint, the workers took the interpreter's lock from the GUI
    thread halfway through it: the first screen's paint took 28-40 ms instead of 19-25
    (docs/benchmarks.md). The requests go out once the paint is over."""
    before = set(threading.enumerate())  # other tests' views may still be winding down

    def new_workers() -> list[str]:
        return [t.name for t in set(threading.enumerate()) - before
                if t.name.startswith("reelqueue-gallery")]

    view = GalleryView(tmp_path / "cache")
    qtbot.addWidget(view)
    view.resize(1000, 600)
    view.set_batches([(1, "batch one")])
    view.set_items(1, tiles)
    view.show()
    assert new_workers() == []
    view.view.viewport().grab()  # a paint, now: it asks for the four local videos' pictures
    assert view.thumbs.pending() == 4
    assert new_workers() == []
    qtbot.waitUntil(lambda: view.thumbs.counts["made"] == 4, timeout=20_000)
    assert new_workers() and view.thumbs.pending() == 0


# -- in the window, through the application layer -------------------------------------------
PRICED = {"model": "mock-1", "duration": 5}


def _journal(ctx: CliContext, video: Path) -> dict[str, int]:
    """A batch of four: a failed mock job, a queued one, one completed here (a real
    video) and one completed on another machine of the team."""
    make_private_dir(ctx.data_dir)
    store = SqliteStore.open(ctx.journal_path, now=time.time())
    batch = store.create_batch(BatchSpec("shots", "s.csv", str(ctx.videos_dir)), time.time())
    names = ("flaky", "later", "here", "there")
    store.add_jobs(batch.id, [JobSpec(n, n, "mock", str(ctx.videos_dir / f"{n}.mp4"),
                                      params=dict(PRICED), name=n) for n in names],
                   time.time())
    store.add_account(AccountSpec("acct", "mock", 4, "http://127.0.0.1:9"), time.time())
    claim = store.claim_next_job(ClaimParams("acct", "i", time.time(), 60))
    assert claim is not None and claim.job.name == "flaky"
    store.mark_failed(claim.token, JobError("retryable", "provider error", "no"), time.time())
    ids = {job.name: job.id for job in store.list_jobs()}
    store.close()
    with sqlite3.connect(ctx.journal_path) as db:
        # As the engine keeps it: relative to the videos folder (issue 21).
        here = video.relative_to(ctx.videos_dir).as_posix()
        for name, path, host in (("here", here, local_host()),
                                 ("there", "/far/there.mp4", "render-box-2")):
            db.execute("UPDATE jobs SET state = 'COMPLETED', output_path = ?, "
                       "output_host = ?, finished_at = ?, output_size = 1, "
                       "output_sha256 = 'ab' WHERE id = ?",
                       (path, host, time.time(), ids[name]))
    return ids


@on_qloop
async def test_the_window_gallery_reads_the_batch_and_retries_with_a_new_seed(
        windows: WindowHarness, app_ctx: CliContext, tmp_path: Path) -> None:
    (app_ctx.videos_dir / "shots").mkdir(parents=True, exist_ok=True)
    video = make_video(app_ctx.videos_dir / "shots" / "here.mp4", (200, 80, 40))
    ids = _journal(app_ctx, video)
    controller = await windows.open(app_ctx, start=False)
    window = controller.window
    gallery = window.gallery
    # Hidden, the gallery reads no tiles (a window opened on a 100,000-job batch read
    # every one at start: +200 MB, and the GUI thread busy while the table loaded).
    await until(lambda: len(controller.model.table) == 4, 10)
    await until(lambda: gallery.current_batch() is not None, 10)
    for _ in range(3):  # its refresh timer's ticks pass
        controller.gallery._tick()
    await asyncio.sleep(0)
    assert controller.gallery.loads == 0 and gallery.model.rowCount() == 0
    window.show_gallery()
    assert window.jobs_stack.currentWidget() is gallery
    await until(lambda: gallery.model.rowCount() == 4, 10)
    assert controller.gallery.loads == 1
    by_name = {item.name: item for item in gallery.model.items}
    assert by_name["there"].held_by == "render-box-2"
    assert by_name["here"].held_by is None
    assert [badge(by_name[n])[0] for n in ("flaky", "later", "here", "there")] == \
        ["failed", "queued", "completed", "completed"]
    await until(lambda: gallery.thumbs.counts["made"] == 1, 20)
    assert (app_ctx.data_dir / "thumbnails" / "gallery").is_dir()
    gallery.view.setCurrentIndex(gallery.model.index(0))
    assert gallery.retry_button.isEnabled()
    gallery.retry_button.click()
    banners = window.banners
    await until(lambda: banners.get("retry") is not None, 10)
    banners.get("retry").buttons["Retry (est. $0.05)"].click()
    journal = controller.session.app.journal
    await until(lambda: gallery.model.items[0].state == "QUEUED", 10)
    job = await journal.get_job(ids["flaky"])
    assert job is not None and isinstance(job.params.get("seed"), int), "a new seed"
    # Export of a selection: its rows as a sheet (the batch export's columns), its videos
    # copied; a video on another machine and a job without one are counted, not copied.
    folder = tmp_path / "picked"
    batch = gallery.current_batch()
    assert batch is not None
    await controller.gallery.export(batch, [ids["here"], ids["there"], ids["later"]], folder)
    banner = banners.get("gallery-export")
    assert banner is not None
    assert banner.text == (f"Exported to {folder}: 3 rows to selection.csv, 1 video copied, "
                           "1 not on this machine, 1 without a video yet.")
    assert sorted(p.name for p in folder.iterdir()) == ["here.mp4", "selection.csv"]
    lines = (folder / "selection.csv").read_text("utf-8").splitlines()
    assert len(lines) == 4 and "render-box-2" in lines[-1]
    window.show_gallery(False)
    assert window.jobs_stack.currentWidget() is window.table


def test_a_path_that_would_leave_the_videos_folder_is_never_opened(
        qtbot, tmp_path: Path, monkeypatch) -> None:
    """A completed job whose journal path leaves this machine's videos folder (a hostile
    or hand-edited row): the tile says so, and Open, Show in folder and its picture never
    touch the file (the path is refused: issue 21)."""
    opened: list[Path] = []
    monkeypatch.setattr(files, "open_path", lambda path: opened.append(path) or True)
    outside = make_video(tmp_path / "outside.mp4", (10, 20, 30))
    item = dataclasses.replace(tile(1, "planted", "COMPLETED", str(outside)), here=False)
    assert not item.local and picture_text(item) == "path refused"
    view = shown(qtbot, [item], tmp_path / "cache")
    view.view.setCurrentIndex(view.model.index(0))
    assert not view.open_button.isEnabled() and not view.reveal_button.isEnabled()
    view.open_selected()
    assert opened == []
    assert view.model.picture(item) is None and view.thumbs.counts["made"] == 0


@on_qloop
async def test_a_new_seed_of_a_finished_tile_is_a_new_job_beside_it(
        windows: WindowHarness, app_ctx: CliContext, tmp_path: Path) -> None:
    """The finished video is kept (its file, its spend); the new seed is a new job with
    its own file, priced on the banner before it starts, and its tile joins the batch."""
    (app_ctx.videos_dir / "shots").mkdir(parents=True, exist_ok=True)
    video = make_video(app_ctx.videos_dir / "shots" / "here.mp4", (200, 80, 40))
    ids = _journal(app_ctx, video)
    controller = await windows.open(app_ctx, start=False)
    window = controller.window
    window.show_gallery()
    gallery = window.gallery
    await until(lambda: gallery.model.rowCount() == 4, 10)
    journal = controller.session.app.journal
    original = await journal.get_job(ids["here"])
    assert original is not None and original.state.value == "COMPLETED"
    row = next(i for i, item in enumerate(gallery.model.items) if item.name == "here")
    gallery.view.setCurrentIndex(gallery.model.index(row))
    assert gallery.retry_button.isEnabled()
    gallery.retry_button.click()
    banners = window.banners
    await until(lambda: banners.get("retry") is not None, 10)
    banner = banners.get("retry")
    assert "1 finished video is kept and rendered again as a new job with the new seed " \
        "(est. $0.05)" in banner.text, banner.text
    assert len(await journal.list_jobs()) == 4, "nothing before the user says yes"
    banner.buttons["Retry (est. $0.05)"].click()
    await until(lambda: gallery.model.rowCount() == 5, 10)
    await until(lambda: "New job" in (banners.get("retry").text
                                      if banners.get("retry") else ""), 10)
    new_item = gallery.model.items[-1]
    assert new_item.name == "here" and new_item.state == "QUEUED"
    assert new_item.output_path.endswith(f"here-seed{new_item.seed}.mp4")
    kept = next(item for item in gallery.model.items if item.job_id == ids["here"])
    assert kept.state == "COMPLETED" and kept.output_path == str(video)
    # The two tiles are told apart by their words: the new one says its seed.
    assert (kept.title, new_item.title) == ("here", f"here · seed {new_item.seed}")
    index = gallery.model.index(gallery.model.rowCount() - 1)
    assert index.data() == new_item.title
    assert await journal.get_job(ids["here"]) == original, "the finished job untouched"
    new = await journal.get_job(new_item.job_id)
    assert new is not None and new.metadata["variant_of"] == ids["here"]
    assert new.params["seed"] == new_item.seed != original.params.get("seed")
    assert f"New job {new.id}" in banners.get("retry").text
