"""The import's pause of the garbage collector is confined to the main thread: a worker
thread (the window's import) never switches it off under the GUI and the engine."""

from __future__ import annotations

import gc
import threading

import pytest

from reelqueue.intake.planner import bulk_allocation

pytestmark = pytest.mark.unit


def test_the_main_thread_pauses_the_collector_and_restores_it() -> None:
    assert gc.isenabled()
    with bulk_allocation():
        inside = gc.isenabled()
    assert (inside, gc.isenabled()) == (False, True)


def test_a_worker_thread_leaves_the_collector_alone() -> None:
    seen: list[bool] = []

    def worker() -> None:
        with bulk_allocation():
            seen.append(gc.isenabled())
        seen.append(gc.isenabled())

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen == [True, True]


def test_a_pause_inside_another_leaves_it_off_until_the_outer_one_ends() -> None:
    with bulk_allocation():
        with bulk_allocation():
            pass
        still_paused = not gc.isenabled()
    assert still_paused and gc.isenabled()
