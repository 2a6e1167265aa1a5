"""One list call per account instead of one poll per render (issue 33 item 3), on virtual
time (tests/engine/virtual_time.py): the engine's own schedule, counted.

- N renders of one account falling due together: one ``poll_many`` per round instead of N
  polls, each render completed from the list's answers.
- A render missing from the list answer is polled on its own and completes (never
  concluded gone).
- A list call whose answer cannot be read (an error, a value that is no status) never
  fails or concludes a render: that round's renders are polled one by one, and the list
  rests (doubling) before it is tried again.
- A list call refused by a rate limit is each asker's own poll error: the renders wait
  and complete, and the account is not sent N single polls meanwhile.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.models import AccountSpec
from reelqueue.domain.states import JobState, RemotePhase
from reelqueue.engine.engine import Engine
from reelqueue.engine.polling import PollPlanner
from reelqueue.providers.base import RemoteStatus, list_poll_of
from reelqueue.store.memory import MemoryStore
from tests.engine.test_poll_schedule import SteadyProvider, add_jobs, registry, scheduled_polls
from tests.engine.virtual_time import LoopClock, VirtualTimeLoop, run

pytestmark = pytest.mark.unit

LENGTH = 60.0
RENDERS = 20


class ListingProvider(SteadyProvider):
    """:class:`SteadyProvider` whose provider also lists the account's renders: each
    ``poll_many`` is recorded with the ids it was asked; ``hidden`` ids are never in the
    list; ``list_errors`` are raised by the next list calls, one each; ``garbage`` makes
    every list answer hold a value that is no status for every id."""

    def __init__(self, *, hidden: frozenset[str] = frozenset(),
                 list_errors: Sequence[ProviderError] = (), garbage: bool = False) -> None:
        super().__init__(LENGTH, polls_per_minute=600, prefix="ls")
        self.hidden = hidden
        self.list_errors = list(list_errors)
        self.garbage = garbage
        self.list_calls: list[tuple[float, tuple[str, ...]]] = []

    async def poll_many(self, provider_job_ids: Sequence[str]) -> Mapping[str, RemoteStatus]:
        self.list_calls.append((asyncio.get_running_loop().time(), tuple(provider_job_ids)))
        if self.list_errors:
            raise self.list_errors.pop(0)
        if self.garbage:
            return {i: "succeeded" for i in provider_job_ids}  # type: ignore[misc]
        now = asyncio.get_running_loop().time()
        out: dict[str, RemoteStatus] = {}
        for render_id in self.started:  # the whole account's list, not only the asked
            if render_id in self.hidden:
                continue
            if now - self.started[render_id] >= self.seconds:
                out[render_id] = RemoteStatus(RemotePhase.SUCCEEDED, "succeeded", cost=0.1,
                                              video_url=f"mem://{render_id}")
            else:
                out[render_id] = RemoteStatus(RemotePhase.RUNNING, "running")
        return out

    def singles(self) -> int:
        return sum(len(times) for times in self.poll_times.values())


async def _drain(tmp_path: Path, provider: SteadyProvider, count: int = RENDERS
                 ) -> tuple[MemoryStore, PollPlanner]:
    loop = asyncio.get_running_loop()
    assert isinstance(loop, VirtualTimeLoop)
    store = MemoryStore()
    store.add_account(AccountSpec("a", "steady", count), 0)
    add_jobs(store, tmp_path, "steady", count, "j")
    engine = Engine(store, providers=registry({"steady": provider}), clock=LoopClock(loop),
                    rng=random.Random(3))
    await engine.start()
    assert (await engine.run_until_drained()).outcome == "drained"
    await engine.stop()
    engine.close_store()
    return store, engine.polling


def _drained(tmp_path: Path, provider: SteadyProvider) -> tuple[MemoryStore, PollPlanner]:
    loop = VirtualTimeLoop()
    return run(_drain(tmp_path, provider), loop)


def _completed(store: MemoryStore, count: int = RENDERS) -> None:
    jobs = store.list_jobs()
    assert len(jobs) == count
    assert [job.state for job in jobs] == [JobState.COMPLETED] * count, [
        (job.key, job.state, job.error_message) for job in jobs]


def test_renders_due_together_share_one_list_call_per_round(tmp_path: Path) -> None:
    alone = SteadyProvider(LENGTH, polls_per_minute=600, prefix="one")
    store, _ = _drained(tmp_path / "one", alone)
    _completed(store)
    single_requests = len(alone.all_polls())

    listing = ListingProvider()
    assert list_poll_of(listing) is listing and list_poll_of(alone) is None
    store, planner = _drained(tmp_path / "list", listing)
    _completed(store)
    rounds = scheduled_polls(0.0, LENGTH)  # no typical time yet: at once, then back-off
    # Every render was answered by the list; none needed a poll of its own.
    assert listing.singles() == 0
    assert planner.listed["a"] == sum(len(ids) for _, ids in listing.list_calls)
    assert planner.missed.get("a", 0) == 0
    # One list call per round (the claims of one pump pass may split the first round).
    assert rounds <= len(listing.list_calls) <= rounds + 2, (rounds, listing.list_calls)
    assert max(len(ids) for _, ids in listing.list_calls) == RENDERS
    # A list call is one poll against the budget.
    assert planner.polls["a"] == len(listing.list_calls)
    # Requests to the provider: one per round, not one per render per round.
    assert single_requests >= RENDERS * rounds
    assert len(listing.list_calls) <= single_requests / RENDERS + 2


def test_a_render_missing_from_the_list_is_polled_on_its_own_and_completes(
        tmp_path: Path) -> None:
    listing = ListingProvider(hidden=frozenset({"ls-r3"}))
    store, planner = _drained(tmp_path, listing)
    _completed(store)
    assert set(listing.poll_times) == {"ls-r3"}, "only the hidden render polled alone"
    # Each of its polls followed a list call that asked for it and did not answer it.
    assert planner.missed["a"] == len(listing.poll_times["ls-r3"])
    assert all("ls-r3" in ids for _, ids in listing.list_calls)
    # Its last own poll saw it finished: the list's silence never concluded it.
    last = listing.poll_times["ls-r3"][-1]
    assert last - listing.started["ls-r3"] >= LENGTH


def test_an_unreadable_list_answer_never_fails_or_concludes_a_render(
        tmp_path: Path) -> None:
    unreadable = ProviderError("list: the answer is not a page of renders",
                               error_class=ErrorClass.RETRYABLE,
                               label=ErrorLabel.PROVIDER_ERROR)
    listing = ListingProvider(list_errors=[unreadable] * 100)
    store, planner = _drained(tmp_path / "error", listing)
    _completed(store)
    assert planner.list_failed["a"] == len(listing.list_calls) >= 1
    # Each failed round went to single polls; the list then rests (no list call per
    # round while it keeps failing).
    assert listing.singles() >= RENDERS * 2
    assert len(listing.list_calls) < scheduled_polls(0.0, LENGTH)

    garbled = ListingProvider(garbage=True)
    store, planner = _drained(tmp_path / "garbage", garbled)
    _completed(store)
    assert planner.listed.get("a", 0) == 0 and planner.missed["a"] >= RENDERS
    assert set(garbled.poll_times) == set(garbled.started)
    # A list that answers none of its asks rests as a failing one does.
    assert len(garbled.list_calls) < scheduled_polls(0.0, LENGTH)


def test_a_rate_limited_list_call_is_each_askers_own_poll_error(tmp_path: Path) -> None:
    limited = ProviderError("429 slow down", error_class=ErrorClass.ACCOUNT,
                            label=ErrorLabel.RATE_LIMITED, retry_after=7.0, status_code=429)
    listing = ListingProvider(list_errors=[limited])
    store, planner = _drained(tmp_path, listing)
    _completed(store)
    assert listing.singles() == 0, "no render was polled alone into a throttled account"
    first, second = listing.list_calls[0], listing.list_calls[1]
    assert second[0] - first[0] >= 7.0, "the renders waited the provider's Retry-After"
    assert planner.list_failed.get("a", 0) == 0


def test_a_broken_list_rests_then_is_tried_again() -> None:
    """A plug-in whose list call fails with a bug: its renders are polled one by one, the
    list is left alone for its rest (doubling while it keeps failing), then tried again."""

    class Broken:
        def __init__(self) -> None:
            self.lists = 0
            self.polls = 0

        async def poll(self, provider_job_id: str) -> RemoteStatus:
            self.polls += 1
            return RemoteStatus(RemotePhase.RUNNING, "running")

        async def poll_many(self, provider_job_ids: Sequence[str]
                            ) -> Mapping[str, RemoteStatus]:
            self.lists += 1
            raise RuntimeError("a plug-in's bug")

    async def asks() -> tuple[Broken, PollPlanner, list[int]]:
        provider, planner, seen = Broken(), PollPlanner(), []
        for _ in range(4):  # four renders asking together, four times 4 s apart
            await asyncio.gather(*(planner.status("a", provider, f"r{i}") for i in range(4)))
            seen.append(provider.lists)
            await asyncio.sleep(4.0)
        # Two renders each time (a round of one polls it on its own, list or not).
        await asyncio.sleep(10.0)  # 28 s: the second rest (20 s from 14 s) is not over
        await asyncio.gather(*(planner.status("a", provider, f"r{i}") for i in range(2)))
        seen.append(provider.lists)
        await asyncio.sleep(12.0)  # 40 s: it is
        await asyncio.gather(*(planner.status("a", provider, f"r{i}") for i in range(2)))
        seen.append(provider.lists)
        return provider, planner, seen

    provider, planner, seen = run(asks(), VirtualTimeLoop())
    # Tried at 0.5 s (failed: rest 10 s), resting at 4.5 and 9 s, tried at 13.5 s (failed:
    # rest 20 s), resting at 28 s, tried at 40 s.
    assert seen == [1, 1, 1, 2, 2, 3]
    assert provider.polls == 4 * 4 + 2 * 2 and planner.list_failed["a"] == 3


class PacedListingProvider(ListingProvider):
    """:class:`ListingProvider` whose answers carry linear progress and a 5 s hint (as the
    mock's and Runway's): the engine aims a render's last polls at its end. Its budget
    leaves room for all of them at once (they all end together here)."""

    def __init__(self) -> None:
        super().__init__()
        self.polls_per_minute = 60_000

    def _status(self, render_id: str, now: float) -> RemoteStatus:
        done = (now - self.started[render_id]) / self.seconds
        if done >= 1.0:
            return RemoteStatus(RemotePhase.SUCCEEDED, "succeeded", cost=0.1,
                                video_url=f"mem://{render_id}")
        return RemoteStatus(RemotePhase.RUNNING, "running", progress=done, poll_after=5.0)

    async def poll(self, provider_job_id: str) -> RemoteStatus:
        now = asyncio.get_running_loop().time()
        self.poll_times.setdefault(provider_job_id, []).append(now)
        return self._status(provider_job_id, now)

    async def poll_many(self, provider_job_ids: Sequence[str]) -> Mapping[str, RemoteStatus]:
        now = asyncio.get_running_loop().time()
        self.list_calls.append((now, tuple(provider_job_ids)))
        return {i: self._status(i, now) for i in self.started}


def test_a_poll_aimed_at_the_renders_end_asks_alone_and_sees_it_at_once(
        tmp_path: Path) -> None:
    """The hint-paced polls share list calls; the ones the progress aims at the render's
    end go alone, so a finished render is seen well within the list's gathering time."""
    provider = PacedListingProvider()
    store, planner = _drained(tmp_path, provider)
    _completed(store)
    assert provider.list_calls and planner.listed["a"] > RENDERS, "the hint's polls listed"
    late = []
    for render_id, times in provider.poll_times.items():
        end = provider.started[render_id] + LENGTH
        # Alone only near the end: the look before it and the poll aimed at it.
        assert all(t >= end - 1.0 for t in times), (render_id, times, end)
        late.append(max(times) - end)
    assert len(late) == RENDERS
    assert max(late) < 0.1 < planner.gather, late


async def test_the_planners_stop_ends_a_list_read_under_way() -> None:
    """The engine's stop ends every account's list task; an asker still waiting is told
    "not listed", never left waiting for ever."""
    started = asyncio.Event()

    class Slow:
        async def poll_many(self, ids: Sequence[str]) -> Mapping[str, RemoteStatus]:
            started.set()
            await asyncio.Event().wait()  # a list read that never answers
            raise AssertionError("unreachable")

        async def poll(self, provider_job_id: str) -> RemoteStatus:
            raise AssertionError("not asked")

    planner = PollPlanner(gather=0.0)
    askers = [asyncio.create_task(planner._listed_status("a", Slow(), f"r{i}"))  # type: ignore[arg-type]
              for i in range(2)]
    await asyncio.wait_for(started.wait(), 10)
    await planner.stop()
    assert await asyncio.wait_for(asyncio.gather(*askers), 10) == [None, None]


async def test_a_round_of_one_render_polls_it_on_its_own() -> None:
    """One render due: its own poll (a list page is the bigger read); two: one list."""

    class Counting:
        def __init__(self) -> None:
            self.lists = 0

        async def poll_many(self, ids: Sequence[str]) -> Mapping[str, RemoteStatus]:
            self.lists += 1
            return {i: RemoteStatus(RemotePhase.RUNNING, "running") for i in ids}

        async def poll(self, provider_job_id: str) -> RemoteStatus:
            return RemoteStatus(RemotePhase.RUNNING, "alone")

    provider, planner = Counting(), PollPlanner(gather=0.0)
    one = await planner.status("a", provider, "r0")  # type: ignore[arg-type]
    assert one.sub_status == "alone" and provider.lists == 0
    two = await asyncio.gather(*(planner.status("a", provider, f"r{i}")  # type: ignore[arg-type]
                                 for i in range(2)))
    assert [s.sub_status for s in two] == ["running", "running"] and provider.lists == 1


def test_a_render_its_adapter_does_not_list_is_polled_alone_and_the_list_goes_on(
        tmp_path: Path) -> None:
    """An adapter whose list holds only some of its renders (MiniMax: V2 tasks, never V1)
    says so by ``lists_render``: those renders are never asked of a list call, so a round
    of them alone sends no list call and does not rest the list for the others."""

    class PartlyListing(ListingProvider):
        def lists_render(self, provider_job_id: str) -> bool:
            return not provider_job_id.endswith(("0", "2", "4", "6", "8"))

    listing = PartlyListing()
    store, planner = _drained(tmp_path, listing)
    _completed(store)
    unlisted = {r for r in listing.started if not listing.lists_render(r)}
    assert 0 < len(unlisted) < RENDERS
    assert set(listing.poll_times) == unlisted, "only the unlisted renders polled alone"
    assert not any(unlisted & set(ids) for _, ids in listing.list_calls)
    assert planner.missed.get("a", 0) == 0 and planner.list_failed.get("a", 0) == 0
    assert planner.listed["a"] == sum(len(ids) for _, ids in listing.list_calls) > 0


@pytest.mark.expect_warnings("lists_render failed")
def test_a_lists_render_that_raises_ends_list_polls_for_its_adapter(tmp_path: Path
                                                                    ) -> None:
    class Raising(ListingProvider):
        def lists_render(self, provider_job_id: str) -> bool:
            raise RuntimeError("a plug-in's bug")

    raising = Raising()
    assert list_poll_of(raising) is raising and list_poll_of(raising, "x") is None
    assert list_poll_of(raising) is None, "list polls off for this adapter"
    store, _ = _drained(tmp_path, raising)
    _completed(store)
    assert not raising.list_calls and set(raising.poll_times) == set(raising.started)
