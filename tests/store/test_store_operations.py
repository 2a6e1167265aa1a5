"""Every store implementation has every Store operation with the protocol's parameters, so
an operation added to the protocol cannot be forgotten in one of them (issue 15: the
PostgreSQL store is the third)."""

from __future__ import annotations

import inspect

import pytest

from reelqueue.store.base import Store
from reelqueue.store.memory import MemoryStore
from reelqueue.store.postgres import PostgresStore
from reelqueue.store.sqlite import SqliteStore

pytestmark = pytest.mark.unit


def differences(protocol: type, implementation: type) -> list[str]:
    problems = []
    for name, operation in vars(protocol).items():
        if not inspect.isfunction(operation) or name.startswith("_"):
            continue
        mine = getattr(implementation, name, None)
        if mine is None or not callable(mine):
            problems.append(f"{name}: missing")
            continue
        want = list(inspect.signature(operation).parameters)
        got = list(inspect.signature(mine).parameters)
        if want != got:
            problems.append(f"{name}: parameters {got} differ from {want}")
    return problems


@pytest.mark.parametrize("implementation", [SqliteStore, MemoryStore, PostgresStore])
def test_every_store_operation_is_implemented(implementation: type) -> None:
    assert differences(Store, implementation) == []


def test_the_check_sees_a_missing_or_different_operation() -> None:
    class Planted:
        def close(self) -> None: ...
        def get_job(self, job_id: int, extra: bool = False) -> None: ...

    class Partial:
        def close(self) -> None: ...
        def get_job(self, job_id: int) -> None: ...

    class Nothing:
        pass

    assert differences(Planted, Partial) == [
        "get_job: parameters ['self', 'job_id'] differ from ['self', 'job_id', 'extra']"]
    assert differences(Planted, Nothing) == ["close: missing", "get_job: missing"]
