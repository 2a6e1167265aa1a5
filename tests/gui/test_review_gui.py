"""The gallery's review page (issue 35 item 2), headless: a 5-row sheet with 3 takes a row
shows 5 groups of 3; a keyboard pass (picks, rejects, a rating, an undo) leaves exactly
those decisions in the journal, read back by ``reelqueue review --json`` and by
``GET /v1/batches/{id}/takes`` of a real ``reelqueue serve``; "show only unreviewed", the
count, a failed take refused, and the re-roll's banner quoting what it adds."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

from PySide6.QtCore import Qt

from reelqueue.application.gallery import local_host
from reelqueue.cli.context import CliContext
from reelqueue.domain.models import BatchSpec, JobSpec
from reelqueue.domain.review import Decision, ReviewChange
from reelqueue.store.lockfile import make_private_dir
from reelqueue.store.sqlite import SqliteStore
from tests.api.serve_harness import ServeProcess, make_token
from tests.gui.conftest import WindowHarness, on_qloop, save_screenshot, until
from tests.gui.test_gallery_gui import make_video
from tests.proof.harness import cli

ROWS, TAKES = 5, 3


def five_rows_of_three(ctx: CliContext) -> list[list[int]]:
    """A finished batch: 5 rows, 3 takes each (``K``, ``K#2``, ``K#3``), real videos."""
    make_private_dir(ctx.data_dir)
    folder = ctx.videos_dir / "shots"
    folder.mkdir(parents=True, exist_ok=True)
    store = SqliteStore.open(ctx.journal_path, now=time.time())
    try:
        batch = store.create_batch(BatchSpec("shots", "s.csv", "shots"), time.time())
        specs = [JobSpec(f"row{r}" if n == 1 else f"row{r}#{n}", f"shot {r}", "mock",
                         f"shots/r{r}_{n}.mp4", params={"model": "mock-1", "duration": 4},
                         row_number=r + 2, name=f"shot{r}", metadata={"price": 0.04})
                 for r in range(ROWS) for n in range(1, TAKES + 1)]
        ids = list(store.add_jobs(batch.id, specs, time.time()).job_ids)
    finally:
        store.close()
    with sqlite3.connect(ctx.journal_path) as db:
        for job_id, spec in zip(ids, specs, strict=True):
            r, n = int(spec.output_path.split("r")[1][0]), int(spec.output_path[-5])
            make_video(ctx.videos_dir / spec.output_path, (40 * r, 60 * n, 120))
            db.execute("UPDATE jobs SET state = 'COMPLETED', output_host = ?, "
                       "finished_at = ?, output_size = 1, output_sha256 = 'ab' WHERE id = ?",
                       (local_host(), time.time(), job_id))
    return [ids[r * TAKES:(r + 1) * TAKES] for r in range(ROWS)]


@on_qloop
async def test_a_keyboard_pass_leaves_exactly_its_decisions_in_the_journal(
        windows: WindowHarness, app_ctx: CliContext, tmp_path: Path) -> None:
    rows = five_rows_of_three(app_ctx)
    controller = await windows.open(app_ctx, start=False)
    window = controller.window
    window.resize(1280, 720)
    window.show_gallery()
    gallery = window.gallery
    await until(lambda: gallery.current_batch() is not None, 10)
    gallery.review_button.click()
    page = gallery.review
    await until(lambda: len(page.review.groups) == ROWS, 10)
    assert [len(g.takes) for g in page.review.groups] == [TAKES] * ROWS
    assert page.progress.text() == "0 of 15 reviewed"
    canvas = page.canvas
    canvas.setFocus()
    await until(canvas.hasFocus, 5)

    def key(k: Qt.Key, mods: Qt.KeyboardModifier = Qt.KeyboardModifier.NoModifier) -> None:
        from pytestqt.qtbot import QtBot

        QtBot.keyClick(canvas, k, mods)

    async def settled() -> None:
        writing = controller.gallery._writing
        await until(lambda: writing is None or writing.done(), 10)
        await until(lambda: not controller.gallery._asks, 10)

    # Row 1: take 2 picked with 4 stars (Right, P, 4), then Shift+P on take 3 moves the
    # pick and goes to row 2.
    key(Qt.Key.Key_Right)
    key(Qt.Key.Key_P)
    key(Qt.Key.Key_4)
    key(Qt.Key.Key_Right)
    key(Qt.Key.Key_P, Qt.KeyboardModifier.ShiftModifier)
    await settled()
    assert page.review.row == 1 and page.review.current is not None
    # Row 2: all three rejected (X, Right, X, Right, X); the third is undone (Ctrl+Z).
    for step in (Qt.Key.Key_X, Qt.Key.Key_Right, Qt.Key.Key_X, Qt.Key.Key_Right,
                 Qt.Key.Key_X):
        key(step)
    await settled()
    key(Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    await settled()
    # Row 3: all three rejected, so it is a row to re-roll; row 4's first take picked.
    key(Qt.Key.Key_Down)
    for step in (Qt.Key.Key_X, Qt.Key.Key_Right, Qt.Key.Key_X, Qt.Key.Key_Right,
                 Qt.Key.Key_X):
        key(step)
    key(Qt.Key.Key_Down)
    key(Qt.Key.Key_P)
    await settled()
    assert "Undone" not in page.status.text()
    expected = {rows[0][1]: ("none", 4), rows[0][2]: ("pick", None),
                rows[1][0]: ("reject", None), rows[1][1]: ("reject", None),
                rows[2][0]: ("reject", None), rows[2][1]: ("reject", None),
                rows[2][2]: ("reject", None), rows[3][0]: ("pick", None)}
    assert page.progress.text() == "7 of 15 reviewed"

    def journal_decisions() -> dict[int, tuple[str, int | None]]:
        store = SqliteStore.open(app_ctx.journal_path, now=time.time())
        try:
            return {j.id: (str(j.review.decision), j.review.rating) for j in store.list_jobs()
                    if j.review.version}
        finally:
            store.close()

    got = journal_decisions()
    assert {k: v for k, v in got.items() if v != ("none", None)} == expected
    assert rows[1][2] in got, "the undone reject is on the record: changed, then back"

    # "Show only unreviewed": row 3 has nothing left to review and is hidden (the current
    # row, row 4, stays).
    page.only_unreviewed.setChecked(True)
    assert [g.key for g in page.review.visible] == ["row0", "row1", "row3", "row4"]
    assert page.review.current is not None and page.review.current.id == rows[3][0]
    # Space: the current take beside the next one, decoded on worker threads and painted
    # from one clock, going round together (each 0.25 s video restarts with the clock).
    key(Qt.Key.Key_Space)
    compare = page.compare
    assert compare.isVisible() and [t.id for t in page.compared()] == rows[3][:2]
    streams = [s for s in compare.streams if s is not None]
    assert len(streams) == 2
    await until(lambda: all(s.frame_at(compare.clock) is not None for s in streams), 20)
    assert "take-player" in {thread.name for thread in threading.enumerate()}
    await until(lambda: all(s.decoded > 12 for s in streams), 20)
    assert all(s.failed is None for s in streams)
    save_screenshot(window, "review-pass")
    key(Qt.Key.Key_Space)
    assert not compare.isVisible() and compare.streams == [None, None]
    # The re-roll is quoted on a banner; its button pays that amount, the re-roll's cap.
    page.reroll_button.click()
    banners = window.banners
    await until(lambda: banners.get("reroll") is not None, 10)
    quote = banners.get("reroll")
    assert "re-roll 1 row, 1 new take, est. $0.04" in quote.text, quote.text
    quote.buttons["Re-roll (est. $0.04)"].click()
    await until(lambda: "new takes queued" in (banners.get("reroll").text
                                               if banners.get("reroll") else ""), 10)
    store = SqliteStore.open(app_ctx.journal_path, now=time.time())
    try:
        (again,) = [b for b in store.list_batches() if b.id != 1]
        assert again.settings == {"reroll_of": 1, "max_spend": 0.04}
        (take,) = store.list_jobs(batch_id=again.id)
        assert take.job_key.startswith("row2~seed") and take.metadata["price"] == 0.04
    finally:
        store.close()
    await until(lambda: len(page.review.groups[2].takes) == TAKES + 1, 10)

    # Another reviewer (bo, on another machine) picks row 5's first take; this page has
    # not read it yet: its reject is refused, "changed by bo meanwhile", never written.
    controller.gallery.timer.stop()  # no read of the takes between bo's change and the key
    page.only_unreviewed.setChecked(False)
    other = SqliteStore.open(app_ctx.journal_path, now=time.time())
    try:
        other.set_review(ReviewChange(rows[4][0], Decision.PICK, None, 0, "bo", time.time()))
    finally:
        other.close()
    while page.review.current is not None and page.review.current.id != rows[4][0]:
        key(Qt.Key.Key_Down)
    key(Qt.Key.Key_X)
    await until(lambda: "changed by bo meanwhile" in page.status.text(), 10)
    expected[rows[4][0]] = ("pick", None)
    assert {k: v for k, v in journal_decisions().items() if v != ("none", None)} == expected

    # Read back while the window holds the folder: review --json (a reading: no lock).
    listed = cli(app_ctx.data_dir, "review", "1", "--json")
    assert listed.returncode == 0, listed.stderr
    assert _decisions(json.loads(listed.stdout)) == expected
    await windows._shutdown_all()

    token = make_token(app_ctx.data_dir, "reader", "read")
    with ServeProcess(app_ctx.data_dir, app_ctx.videos_dir, "--paused") as server, \
            server.client(token) as client:
        answer = client.get("/v1/batches/1/takes")
        assert answer.status_code == 200, answer.text
        assert _decisions(answer.json()) == expected


def _decisions(body: dict) -> dict[int, tuple[str, int | None]]:
    return {t["job_id"]: (t["decision"], t["rating"]) for r in body["rows"]
            for t in r["takes"] if (t["decision"], t["rating"]) != ("none", None)}
