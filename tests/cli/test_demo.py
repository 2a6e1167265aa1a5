"""``reelqueue demo`` is paced so a newcomer sees it run, and ``--reset`` starts it over
(issue 13). Measured from the demo journal's ledger, never by sleeping."""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from pathlib import Path

import pytest

from reelqueue.cli.cmd_demo import DEMO_ACCOUNTS, DEMO_RENDER_SECONDS
from reelqueue.store.lockfile import DataDirLock, make_private_dir
from tests.cli.test_cli_e2e import rq

pytestmark = pytest.mark.integration


def _ledger(journal: Path) -> list[tuple[float, str, int | None, str | None]]:
    with sqlite3.connect(journal) as db:
        return list(db.execute("SELECT at, event, job_id, account FROM ledger ORDER BY seq"))


def _in_flight_seconds(journal: Path) -> dict[str, float]:
    """Per account: how long it had at least one render in flight (claimed -> completed,
    the union of the intervals)."""
    claimed: dict[int, tuple[float, str]] = {}
    spans: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for at, event, job_id, account in _ledger(journal):
        if event == "claimed" and job_id is not None and account:
            claimed[job_id] = (at, account)
        elif event == "completed" and job_id in claimed:
            start, owner = claimed.pop(job_id)
            spans[owner].append((start, at))
    covered: dict[str, float] = {}
    for account, intervals in spans.items():
        total, end = 0.0, float("-inf")
        for start, stop in sorted(intervals):
            if stop > end:
                total += stop - max(start, end)
                end = stop
        covered[account] = total
    return covered


@pytest.mark.slow
def test_the_demo_is_paced_on_every_account_and_reset_starts_it_over(tmp_path: Path) -> None:
    data, videos = tmp_path / "data", tmp_path / "videos"
    done = rq(data, "demo", "--no-gui", videos=videos, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Finished: 12 completed, 0 failed, 0 cancelled." in done.stdout
    journal = data / "demo" / "journal.sqlite3"
    events = _ledger(journal)
    started = min(at for at, event, *_ in events if event == "claimed")
    ended = max(at for at, event, *_ in events if event == "completed")
    assert ended - started >= 20, "the whole demo lasts at least 20 s"
    covered = _in_flight_seconds(journal)
    assert set(covered) == {name for name, _ in DEMO_ACCOUNTS}
    for account, seconds in covered.items():
        assert seconds >= DEMO_RENDER_SECONDS[0] - 0.5, (account, seconds)
    # The headless progress line shows the renders running on each account.
    assert all(f"{name}:" in done.stdout for name, _ in DEMO_ACCOUNTS), done.stdout
    assert "rendering" in done.stdout
    old_videos = sorted(p for p in (videos / "demo").rglob("*.mp4"))
    assert len(old_videos) == 12
    # Videos/ReelQueue/demo/, not demo/demo/ (issue 23); the run's record beside them.
    assert all(p.parent == videos / "demo" for p in old_videos)
    assert list((videos / "demo").glob("manifest-*.json"))

    again = rq(data, "demo", "--no-gui", videos=videos, timeout=60)
    assert "0 new jobs" in again.stdout and "'reelqueue demo --reset'" in again.stdout

    sheet = tmp_path / "one.csv"
    sheet.write_text("name,prompt\nonly,One short scene\n", "utf-8")
    reset = rq(data, "demo", "--no-gui", "--reset", "--sheet", str(sheet), videos=videos,
               timeout=120)
    assert reset.returncode == 0, reset.stdout + reset.stderr
    assert "Demo reset: its journal and " in reset.stdout
    assert "Demo: 1 new jobs" in reset.stdout
    assert "Finished: 1 completed, 0 failed, 0 cancelled." in reset.stdout
    assert not any(p.exists() for p in old_videos), "the old demo videos are gone"
    with sqlite3.connect(journal) as db:
        assert db.execute("SELECT COUNT(*) FROM jobs").fetchone()[0] == 1
        assert db.execute("SELECT COUNT(*) FROM ledger WHERE event = 'completed'"
                          ).fetchone()[0] == 1, "a fresh journal, not the old one"
    assert len(list((videos / "demo").rglob("*.mp4"))) == 1


def test_reset_is_refused_while_the_demo_is_open(tmp_path: Path) -> None:
    data, videos = tmp_path / "data", tmp_path / "videos"
    folder = data / "demo"
    make_private_dir(data)
    make_private_dir(folder)
    (folder / "journal.sqlite3").write_bytes(b"")
    lock = DataDirLock(folder)
    lock.acquire()
    try:
        refused = rq(data, "demo", "--no-gui", "--reset", videos=videos, timeout=60)
    finally:
        lock.release()
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert (folder / "journal.sqlite3").exists(), "nothing removed under an open demo"
