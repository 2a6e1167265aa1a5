"""Benchmark: how fast *any* SQLite job life with ReelQueue's guarantees can be (issue 20).

A hand-written loop on a narrow table made for speed, not ReelQueue's schema: the job's
state and claim in a table of their own (12 columns, two indexes: the queue and the live
renders per account, two CHECK constraints), the wide row (prompt, parameters, output)
in another, touched only by the completion; the ledger with its ``ledger_by_job`` and a
partial ``ledger_by_event``. Each job: the claim (the account's live renders counted under
the write lock), the durable intent, the durable provider job id, the switch to
downloading, the durable completion, each fenced by the claim token with its ledger row;
``synchronous`` NORMAL, FULL, FULL, NORMAL, FULL as ReelQueue's store. A second variant
writes the claim and the intent in one durable transaction (four transactions, three
durable); both run in every round.

Against the raw two-transaction loop of benchmarks/compare_sqlite_queues.py (imported),
interleaved rounds, medians, one process. If this loop stays under a target, no store keeping these
guarantees in SQLite reaches it on this machine: the ceiling is the machine's, not the
code's.

    python benchmarks/sqlite_narrow_floor.py [--rounds 5] [--jobs 1000] [--dir /tmp]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from _common import NOW, machine_line, median
from compare_sqlite_queues import raw_setup, raw_work

NARROW = """
CREATE TABLE jobs_wide (id INTEGER PRIMARY KEY, prompt TEXT, params TEXT, metadata TEXT,
                        output_size INTEGER, output_sha256 TEXT);
CREATE TABLE job_state (
    id INTEGER PRIMARY KEY, state TEXT NOT NULL, provider TEXT NOT NULL, account TEXT,
    priority INTEGER NOT NULL DEFAULT 0, claim_token TEXT, lease_owner TEXT,
    lease_until REAL, client_token TEXT, provider_job_id TEXT, attempts INTEGER DEFAULT 0,
    updated_at REAL,
    CHECK (state = 'QUEUED' OR state = 'CLAIMED' OR state = 'SUBMITTING'
           OR state = 'RENDERING' OR state = 'DOWNLOADING' OR state = 'COMPLETED'
           OR state = 'FAILED'),
    CHECK ((claim_token IS NULL) = (state = 'QUEUED' OR state = 'COMPLETED'
                                    OR state = 'FAILED')));
CREATE INDEX state_queued ON job_state (provider, priority DESC, id) WHERE state = 'QUEUED';
CREATE INDEX state_live ON job_state (account, state);
CREATE TABLE ledger (seq INTEGER PRIMARY KEY, at REAL, event TEXT, job_id INTEGER,
                     account TEXT, claim_token TEXT, detail TEXT);
CREATE INDEX ledger_by_job ON ledger (job_id, seq) WHERE job_id IS NOT NULL;
CREATE INDEX ledger_by_event ON ledger (event, job_id)
    WHERE event = 'submitting' OR event = 'completed' OR event = 'spend';
"""

LIVE = ("CLAIMED", "SUBMITTING", "RENDERING", "DOWNLOADING")
AFTER_INTENT = (
    (True, "state = 'RENDERING', provider_job_id = :x", "SUBMITTING", "submitted"),
    (False, "state = 'DOWNLOADING'", "RENDERING", "downloading"),
    (True, "state = 'COMPLETED', claim_token = NULL, lease_owner = NULL, "
           "lease_until = NULL", "DOWNLOADING", "completed"),
)
INTENT = (True, "state = 'SUBMITTING', client_token = :x", "CLAIMED", "submitting")


def _open(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(str(path), isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    return db


def narrow_setup(folder: Path, jobs: int) -> None:
    db = _open(folder / "narrow.sqlite3")
    db.executescript(NARROW)
    db.execute("BEGIN")
    db.executemany("INSERT INTO jobs_wide (id, prompt, params, metadata) "
                   "VALUES (?, ?, '{}', '{}')",
                   ((i, f"a red fox at sunrise #{i}") for i in range(1, jobs + 1)))
    db.executemany("INSERT INTO job_state (id, state, provider) VALUES (?, 'QUEUED', "
                   "'mock')", ((i,) for i in range(1, jobs + 1)))
    db.execute("COMMIT")
    db.close()


def narrow_work(folder: Path, merge: bool) -> int:
    db = _open(folder / "narrow.sqlite3")
    synchronous: list[bool | None] = [None]

    def begin(full: bool) -> None:
        if synchronous[0] is not full:
            db.execute("PRAGMA synchronous = " + ("FULL" if full else "NORMAL"))
            synchronous[0] = full
        db.execute("BEGIN IMMEDIATE")

    def fenced(sets: str, before: str, event: str, job_id: int, token: str) -> None:
        assert db.execute(
            f"UPDATE job_state SET {sets}, updated_at = :now WHERE id = :id "
            f"AND claim_token = :token AND state = '{before}' RETURNING account",
            {"x": uuid.uuid4().hex, "now": NOW, "id": job_id, "token": token},
        ).fetchone() is not None, event
        ledger(event, job_id, token, "{}")

    def ledger(event: str, job_id: int, token: str, detail: str) -> None:
        db.execute("INSERT INTO ledger (at, event, job_id, account, claim_token, detail) "
                   "VALUES (?, ?, ?, 'acct', ?, ?)", (NOW, event, job_id, token, detail))

    done = 0
    try:
        while True:
            token = uuid.uuid4().hex
            begin(merge)
            live = sum(db.execute("SELECT COUNT(*) FROM job_state WHERE account = 'acct' "
                                  "AND state = ?", (state,)).fetchone()[0] for state in LIVE)
            row = db.execute(
                "UPDATE job_state SET state = 'CLAIMED', account = 'acct', claim_token = ?, "
                "lease_owner = 'bench', lease_until = ?, attempts = attempts + 1, "
                "updated_at = ? WHERE id = (SELECT id FROM job_state WHERE state = 'QUEUED' "
                "AND provider = 'mock' ORDER BY priority DESC, id LIMIT 1) RETURNING id",
                (token, NOW + 600, NOW)).fetchone() if live < 1000 else None
            if row is None:
                db.execute("COMMIT")
                return done
            job_id = row[0]
            ledger("claimed", job_id, token, json.dumps({"owner": "bench"}))
            steps = AFTER_INTENT
            if merge:
                fenced(*INTENT[1:], job_id, token)
            else:
                steps = (INTENT, *AFTER_INTENT)
            db.execute("COMMIT")
            for full, sets, before, event in steps:
                begin(full)
                fenced(sets, before, event, job_id, token)
                if event == "completed":
                    db.execute("UPDATE jobs_wide SET output_size = 1000, output_sha256 = ? "
                               "WHERE id = ?", ("ab" * 32, job_id))
                db.execute("COMMIT")
            done += 1
    finally:
        db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    args = parser.parse_args()
    contenders: dict[str, tuple[Callable[[Path, int], None], Callable[[Path], int]]] = {
        "raw": (raw_setup, lambda folder: raw_work(folder, 0)),
        "narrow, 5 transactions": (narrow_setup, lambda f: narrow_work(f, merge=False)),
        "narrow, claim + intent in one (4)": (narrow_setup,
                                              lambda f: narrow_work(f, merge=True)),
    }
    print(machine_line())
    rates: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    for n in range(args.rounds):
        for name in names[n % len(names):] + names[:n % len(names)]:
            setup, work = contenders[name]
            with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
                setup(Path(scratch), args.jobs)
                started = time.perf_counter()
                done = work(Path(scratch))
                rates[name].append(done / (time.perf_counter() - started))
                assert done == args.jobs, f"{name}: {done} of {args.jobs}"
    raw = rates["raw"]
    for name in names:
        per_round = median([x / r for x, r in zip(rates[name], raw, strict=True)])
        print(f"{name:36s} {median(rates[name]):7.0f} jobs/s  {per_round:.2f}x raw "
              "(median of the rounds' ratios)")
    print(machine_line())


if __name__ == "__main__":
    main()
