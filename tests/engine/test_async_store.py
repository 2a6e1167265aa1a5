"""AsyncStore has one typed async twin of every Store operation, so a new store operation
cannot be forgotten, and each twin really runs its operation on the journal thread."""

from __future__ import annotations

import asyncio
import inspect
import threading
from typing import Any

import pytest

from reelqueue.domain.models import Job
from reelqueue.engine.async_store import AsyncStore
from reelqueue.store.base import Store
from reelqueue.store.memory import MemoryStore

pytestmark = pytest.mark.unit


# What AsyncStore itself calls on the journal thread, never a caller's operation: the
# group commit of the render transitions (Store.write_group; each write in it is a twin's).
JOURNAL_THREAD_HOOKS = frozenset({"write_group"})


def store_operations(protocol: type) -> dict[str, Any]:
    """The public methods a store protocol declares (not inherited from Protocol), but
    the journal thread's own hooks."""
    return {name: value for name, value in vars(protocol).items()
            if inspect.isfunction(value) and not name.startswith("_")
            and name not in JOURNAL_THREAD_HOOKS}


def missing_twins(protocol: type, wrapper: type) -> list[str]:
    """What ``wrapper`` lacks or gets wrong: an operation with no ``async def`` of the same
    name, or one whose parameters or result differ."""
    problems = []
    for name, operation in store_operations(protocol).items():
        twin = getattr(wrapper, name, None)
        if twin is None or not inspect.iscoroutinefunction(twin):
            problems.append(f"{name}: no async twin")
            continue
        want, got = inspect.signature(operation), inspect.signature(twin)
        if list(want.parameters.values()) != list(got.parameters.values()):
            problems.append(f"{name}: parameters {got} differ from {want}")
        elif want.return_annotation != got.return_annotation:
            problems.append(f"{name}: returns {got.return_annotation}, "
                            f"not {want.return_annotation}")
    return problems


def test_every_store_operation_has_an_async_twin_with_the_same_signature() -> None:
    assert len(store_operations(Store)) > 40
    assert missing_twins(Store, AsyncStore) == []


def test_the_check_fails_on_a_missing_or_different_twin() -> None:
    class Planted:
        """A protocol with one operation AsyncStore lacks, one whose parameters differ
        from its twin's, one whose result differs, and one it matches."""

        def forgotten(self, job_id: int) -> int: ...
        def get_job(self, job_id: int, extra: bool = False) -> Job | None: ...
        def count_waiting(self) -> str: ...
        counts = Store.counts

    assert missing_twins(Planted, AsyncStore) == [
        "forgotten: no async twin",
        "get_job: parameters (self, job_id: 'int') -> 'Job | None' differ from "
        "(self, job_id: 'int', extra: 'bool' = False) -> 'Job | None'",
        "count_waiting: returns int, not str",
    ]


def test_twins_run_their_operation_on_the_journal_thread() -> None:
    seen: list[str] = []

    class Recording(MemoryStore):
        def count_waiting(self) -> int:
            seen.append(threading.current_thread().name)
            return super().count_waiting()

    astore = AsyncStore(Recording())
    try:
        assert asyncio.run(astore.count_waiting()) == 0
    finally:
        astore.shutdown()
    assert len(seen) == 1 and seen[0].startswith("journal")
