"""The gallery's Cut button (issue 35 item 5): the selected finished takes are the picks;
the cut is checked and written off the GUI thread, and its banner says what was made."""

from __future__ import annotations

import sqlite3
import time

import opentimelineio as otio

from reelqueue.application.gallery import local_host
from reelqueue.cli.context import CliContext
from reelqueue.domain.models import BatchSpec, JobSpec
from reelqueue.store.lockfile import make_private_dir
from reelqueue.store.sqlite import SqliteStore
from tests.application.media_clips import make_clip
from tests.gui.conftest import WindowHarness, on_qloop, until


def _journal(ctx: CliContext) -> dict[str, int]:
    """Batch "shots": row 2 with two finished takes, row 3 with one, row 4 unfinished."""
    folder = ctx.videos_dir / "shots"
    folder.mkdir(parents=True, exist_ok=True)
    make_private_dir(ctx.data_dir)
    store = SqliteStore.open(ctx.journal_path, now=time.time())
    batch = store.create_batch(BatchSpec("shots", "s.csv", "shots"), time.time())
    takes = (("fox", "row:f", 2), ("fox2", "row:f#2", 2), ("owl", "row:o", 3),
             ("bee", "row:b", 4))
    store.add_jobs(batch.id, [JobSpec(key, name, "mock", f"shots/{name}.mp4", name=name,
                                      row_number=row, params={"duration": 2})
                              for name, key, row in takes], time.time())
    ids = {job.name: job.id for job in store.list_jobs()}
    store.close()
    with sqlite3.connect(ctx.journal_path) as db:
        for name, rgb in (("fox", (200, 60, 0)), ("fox2", (0, 60, 200)), ("owl", (60, 200, 0))):
            sha = make_clip(folder / f"{name}.mp4", rgb=rgb)
            size = (folder / f"{name}.mp4").stat().st_size
            db.execute("UPDATE jobs SET state = 'COMPLETED', output_host = ?, finished_at = ?,"
                       " output_size = ?, output_sha256 = ? WHERE id = ?",
                       (local_host(), time.time(), size, sha, ids[name]))
    return ids


@on_qloop
async def test_the_selected_takes_are_cut(windows: WindowHarness, app_ctx: CliContext) -> None:
    ids = _journal(app_ctx)
    controller = await windows.open(app_ctx, start=False)
    window, gallery = controller.window, controller.window.gallery
    await until(lambda: gallery.current_batch() is not None, 10)
    window.show_gallery()
    await until(lambda: gallery.model.rowCount() == 4, 10)
    rows = {item.name: row for row, item in enumerate(gallery.model.items)}
    select = gallery.view.selectionModel()
    gallery.view.setCurrentIndex(gallery.model.index(rows["bee"]))
    banners = window.banners
    # No finished take selected: the review's picks are cut, and there are none yet.
    assert gallery.cut_button.isEnabled()
    gallery.cut_button.click()
    await until(lambda: banners.get("cut") is not None and "No take of this batch is "
                "picked yet" in banners.get("cut").text, 10)
    # Two takes of one row: refused, said in a banner.
    gallery.view.setCurrentIndex(gallery.model.index(rows["fox"]))
    select.select(gallery.model.index(rows["fox2"]), select.SelectionFlag.Select)
    assert gallery.cut_button.isEnabled()
    gallery.cut_button.click()
    await until(lambda: banners.get("cut") is not None and "picked twice" in
                banners.get("cut").text, 10)
    # One take of row 2 and the take of row 3; row 4 is a gap of its 2 s.
    select.clearSelection()
    gallery.view.setCurrentIndex(gallery.model.index(rows["fox2"]))
    select.select(gallery.model.index(rows["owl"]), select.SelectionFlag.Select)
    gallery.cut_button.click()
    await until(lambda: controller.gallery.last_cut is not None, 20)
    result = controller.gallery.last_cut
    assert result.picks == 2 and result.gaps == 1 and result.duration == 4.0
    assert result.mp4 == app_ctx.videos_dir / "shots" / "cut" / "shots-cut-1.mp4"
    assert result.mp4.is_file() and len(result.timelines) == 3
    timeline = otio.adapters.read_from_file(str(result.mp4.with_suffix(".otio")))
    assert [clip.metadata["reelqueue"]["job_id"] for clip in timeline.find_clips()] == [
        ids["fox2"], ids["owl"]]
    banner = banners.get("cut")
    assert banner.text.startswith("Cut shots-cut-1.mp4: 2 picks, 1 gap, 4.0 s (re-encoded)")
    assert "Open folder" in banner.buttons
    assert banners.get("recovery") is None  # the journal's files are whole
