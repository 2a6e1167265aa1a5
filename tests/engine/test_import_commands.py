"""An import: journal steps on the journal thread, file steps (folder, manifest) off it,
and a journal changed mid-import read again. (The wake between the two is
``application.imports.apply_import``'s, tested in tests/application.)"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reelqueue.engine import import_commands
from reelqueue.engine.async_store import AsyncStore
from reelqueue.intake import ImportOptions, ImportPlan, StaticCatalog, apply_import, plan_import
from reelqueue.intake.apply import ImportRaced, place_jobs, read_journal, write_jobs
from reelqueue.store.memory import MemoryStore
from tests.intake.conftest import FLEXIBLE, NOW

pytestmark = pytest.mark.unit

SHEET = "name,prompt\nfox,a fox\nowl,an owl\nelk,an elk\n"


def make_plan(tmp_path: Path, store: MemoryStore, **options: Any) -> ImportPlan:
    path = tmp_path / "sheet.csv"
    path.write_text(SHEET, encoding="utf-8")
    return plan_import(path, ImportOptions(output_root=tmp_path / "videos", **options),
                       existing_keys=store.existing_job_keys,
                       catalog=StaticCatalog({"mock": FLEXIBLE}), now=NOW)


def recording(threads: list[tuple[str, str]], name: str,
              fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any) -> Any:
        threads.append((name, threading.current_thread().name))
        return fn(*args)
    return wrapper


def test_file_steps_run_off_the_journal_thread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = MemoryStore()
    journal = AsyncStore(store)
    threads: list[tuple[str, str]] = []
    for name in ("read_journal", "place_jobs", "finish_import"):
        monkeypatch.setattr(import_commands, name,
                            recording(threads, name, getattr(import_commands, name)))
    monkeypatch.setattr(import_commands, "_write",
                        recording(threads, "write", import_commands._write))

    async def run() -> Any:
        try:
            plan = make_plan(tmp_path, store)
            written = await import_commands.write_plan(journal, plan, NOW, max_spend=5.0)
            return await import_commands.finish_plan(plan, written)
        finally:
            journal.shutdown()

    result = asyncio.run(run())
    assert result.added == 3
    on_journal = {name: thread.startswith("journal") for name, thread in threads}
    assert on_journal == {"read_journal": True, "place_jobs": False, "write": True,
                          "finish_import": False}
    assert store.get_batch(result.batch_id).settings["max_spend"] == 5.0  # type: ignore[union-attr]
    assert [job.name for job in store.list_jobs(batch_id=result.batch_id)] == [
        "fox", "owl", "elk"]


def test_a_batch_made_meanwhile_by_another_import_is_noticed(tmp_path: Path) -> None:
    store = MemoryStore()
    plan = make_plan(tmp_path, store)
    reading = read_journal(store, plan)
    specs = place_jobs(plan, reading)
    apply_import(store, plan, NOW)  # another import of the same sheet got there first
    with pytest.raises(ImportRaced):
        write_jobs(store, plan, reading, specs, NOW)
    assert len(store.list_batches()) == 1 and len(store.list_jobs()) == 3


def test_a_plan_that_knows_the_journals_keys_is_not_looked_up_again(tmp_path: Path) -> None:
    lookups: list[int] = []

    class Counting(MemoryStore):
        def existing_job_keys(self, keys: Any) -> set[str]:
            lookups.append(1)
            return super().existing_job_keys(keys)

    store = Counting()
    plan = make_plan(tmp_path, store)
    assert plan.keys_checked and len(lookups) == 1
    assert apply_import(store, plan, NOW).added == 3
    assert len(lookups) == 1
