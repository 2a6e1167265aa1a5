"""The engine end to end against an in-process scripted provider and the memory store."""

from __future__ import annotations

import asyncio
import hashlib
import random
from pathlib import Path

import pytest

from reelqueue.domain.backoff import BackoffPolicy
from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.domain.states import AccountStatus, JobState
from reelqueue.engine.config import EngineConfig
from reelqueue.engine.engine import Engine
from reelqueue.engine.events import EngineStateEvent, JobEvent
from reelqueue.providers.base import ParamSpec
from reelqueue.providers.builtin import builtin_registry
from reelqueue.providers.registry import ProviderInfo, ProviderRegistry
from reelqueue.store.base import Store
from reelqueue.store.memory import MemoryStore
from tests.engine import user_commands
from tests.engine.fakes import VIDEO, FakeProvider, Script

pytestmark = pytest.mark.unit

FAST = EngineConfig(retry_backoff=BackoffPolicy(0.001, 0.01), poll_backoff=BackoffPolicy(
    0.001, 0.01), poll_min_seconds=0.0005, heartbeat_seconds=0.05,
    rate_limit_default_seconds=0.05)


def install(provider: FakeProvider, kind: str = "fake") -> ProviderRegistry:
    """The built-in providers plus ``provider`` as ``kind``: the test's own registry."""
    return builtin_registry().with_provider(ProviderInfo(
        kind, "Fake", lambda client, cfg: provider, ParamSpec(), None, requires_key=False))


def add_batch(store: Store, tmp_path: Path, prompts: list[str], kind: str = "fake",
              max_attempts: int = 3) -> int:
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path / "out"),
                                         max_attempts=max_attempts), 0)
    store.add_jobs(batch.id, [
        JobSpec(f"k{i}", prompt, kind, str(tmp_path / "out" / f"{i:03d}.mp4"), row_number=i + 2)
        for i, prompt in enumerate(prompts)], 0)
    return batch.id


async def drain(store: Store, config: EngineConfig = FAST, **kw: object) -> Engine:
    engine = Engine(store, config=config, rng=random.Random(1), **kw)  # type: ignore[arg-type]
    await engine.start()
    result = await asyncio.wait_for(engine.run_until_drained(), 20)
    await engine.stop()
    engine.close_store()
    engine.last_result = result  # type: ignore[attr-defined]
    return engine


def states(store: Store) -> dict[str, str]:
    return {j.job_key: j.state.value for j in store.list_jobs()}


async def test_batch_completes_with_files_on_disk_and_hashes(tmp_path: Path) -> None:
    provider = FakeProvider()
    providers = install(provider)
    store = MemoryStore()
    add_batch(store, tmp_path, [f"p{i}" for i in range(10)])
    store.add_account(AccountSpec("a", "fake", 3), 0)
    engine = await drain(store, providers=providers)
    assert engine.last_result.outcome == "drained"  # type: ignore[attr-defined]
    assert set(states(store).values()) == {"COMPLETED"}
    for job in store.list_jobs():
        data = Path(job.output_path).read_bytes()
        assert data == VIDEO and job.output_size == len(VIDEO)
        assert job.output_sha256 == hashlib.sha256(VIDEO).hexdigest()
        assert job.cost == 0.25
    assert provider.max_live <= 3
    assert sum(provider.creates.values()) == 10
    assert not list((tmp_path / "out").glob(".*.part"))


async def test_retryable_errors_retry_then_fail_at_the_ceiling(tmp_path: Path) -> None:
    boom = ProviderError("500", error_class=ErrorClass.RETRYABLE, label=ErrorLabel.PROVIDER_ERROR)
    provider = FakeProvider({"flaky": Script(submit_errors=[boom]),
                             "doomed": Script(submit_errors=[boom] * 5)})
    providers = install(provider)
    store = MemoryStore()
    add_batch(store, tmp_path, ["flaky", "doomed"])
    store.add_account(AccountSpec("a", "fake", 2), 0)
    await drain(store, providers=providers)
    jobs = {j.prompt: j for j in store.list_jobs()}
    assert jobs["flaky"].state == JobState.COMPLETED and jobs["flaky"].attempts == 2
    assert jobs["doomed"].state == JobState.FAILED and jobs["doomed"].attempts == 3
    assert jobs["doomed"].error_label == "provider error"
    assert provider.creates == {"k0": 2, "k1": 3}


async def test_permanent_error_fails_at_once(tmp_path: Path) -> None:
    policy = ProviderError("nope", error_class=ErrorClass.PERMANENT,
                           label=ErrorLabel.CONTENT_POLICY)
    provider = FakeProvider({"bad": Script(submit_errors=[policy])})
    providers = install(provider)
    store = MemoryStore()
    add_batch(store, tmp_path, ["bad"])
    store.add_account(AccountSpec("a", "fake", 1), 0)
    await drain(store, providers=providers)
    job = store.list_jobs()[0]
    assert job.state == JobState.FAILED and job.attempts == 1
    assert job.error_class == "permanent" and job.error_label == "content policy"


async def test_rate_limit_pauses_the_account_without_spending_attempts(tmp_path: Path) -> None:
    limited = ProviderError("429", error_class=ErrorClass.ACCOUNT,
                            label=ErrorLabel.RATE_LIMITED, retry_after=0.05)
    provider = FakeProvider({"p": Script(submit_errors=[limited, limited])})
    providers = install(provider)
    store = MemoryStore()
    add_batch(store, tmp_path, ["p"])
    store.add_account(AccountSpec("a", "fake", 1), 0)
    await drain(store, providers=providers)
    job = store.list_jobs()[0]
    assert job.state == JobState.COMPLETED
    assert job.attempts == 1, "the two rate-limited claims were given back"
    events = [e.event for e in store.ledger()]
    assert events.count("released") == 2
    statuses = [e.detail["status"] for e in store.ledger() if e.event == "account_status"]
    assert statuses[:2] == ["rate_limited", "ready"]


async def test_rejected_key_stalls_instead_of_failing_jobs(tmp_path: Path) -> None:
    rejected = ProviderError("401", error_class=ErrorClass.ACCOUNT,
                             label=ErrorLabel.KEY_REJECTED)
    provider = FakeProvider({"p": Script(submit_errors=[rejected])})
    providers = install(provider)
    store = MemoryStore()
    add_batch(store, tmp_path, ["p", "q"])
    store.add_account(AccountSpec("a", "fake", 1), 0)
    engine = await drain(store, providers=providers)
    assert engine.last_result.outcome == "stalled"  # type: ignore[attr-defined]
    assert "key_rejected" in engine.last_result.detail  # type: ignore[attr-defined]
    assert set(states(store).values()) == {"QUEUED"}
    assert store.get_account("a").status == AccountStatus.KEY_REJECTED  # type: ignore[union-attr]


async def test_remote_failure_renders_again_but_download_failure_does_not(
    tmp_path: Path,
) -> None:
    truncated = ProviderError("short read", error_class=ErrorClass.RETRYABLE,
                              label=ErrorLabel.DOWNLOAD_FAILED)
    provider = FakeProvider({"remote": Script(remote_failures=1),
                             "dl": Script(download_errors=[truncated])})
    providers = install(provider)
    store = MemoryStore()
    add_batch(store, tmp_path, ["remote", "dl"])
    store.add_account(AccountSpec("a", "fake", 2), 0)
    await drain(store, providers=providers)
    assert set(states(store).values()) == {"COMPLETED"}
    assert provider.creates == {"k0": 2, "k1": 1}, "a failed download never re-renders"


async def test_html_instead_of_video_is_retried_and_never_saved(tmp_path: Path) -> None:
    provider = FakeProvider({"p": Script(body=b"<html>error</html>")})
    providers = install(provider)
    store = MemoryStore()
    add_batch(store, tmp_path, ["p"], max_attempts=2)
    store.add_account(AccountSpec("a", "fake", 1), 0)
    await drain(store, providers=providers)
    job = store.list_jobs()[0]
    assert job.state == JobState.FAILED and job.error_label == "download failed"
    assert provider.creates == {"k0": 1}
    assert not Path(job.output_path).exists()
    assert not list((tmp_path / "out").glob(".*.part"))


async def test_disk_full_during_download_leaves_the_job_retryable(tmp_path: Path) -> None:
    import errno

    provider = FakeProvider()
    providers = install(provider)
    store = MemoryStore()
    add_batch(store, tmp_path, ["p"])
    store.add_account(AccountSpec("a", "fake", 1), 0)
    engine = Engine(store, providers=providers, config=FAST, rng=random.Random(1))
    failures = [OSError(errno.ENOSPC, "No space left on device")]

    def full_disk(handle: object, chunk: bytes) -> None:
        if failures:
            raise failures.pop()

    engine.writer.fault_hook = full_disk
    await engine.start()
    await asyncio.wait_for(engine.run_until_drained(), 20)
    await engine.stop()
    job = store.list_jobs()[0]
    assert job.state == JobState.COMPLETED and job.attempts == 2
    trail = [e for e in store.ledger(job.id) if e.event == "retry_wait"]
    assert trail[0].detail["label"] == "disk error" and trail[0].detail["keeps_render"]
    assert provider.creates == {"k0": 1}


async def test_unknown_submission_is_reconciled_by_lookup(tmp_path: Path) -> None:
    timeout = ProviderError("read timeout", error_class=ErrorClass.RETRYABLE,
                            label=ErrorLabel.TIMED_OUT, body_maybe_sent=True)
    provider = FakeProvider({"p": Script(submit_errors=[timeout])}, supports_lookup=True)
    providers = install(provider)
    store = MemoryStore()
    add_batch(store, tmp_path, ["p"])
    store.add_account(AccountSpec("a", "fake", 1), 0)
    await drain(store, providers=providers)
    job = store.list_jobs()[0]
    assert job.state == JobState.COMPLETED and provider.creates == {"k0": 1}
    assert [e.detail["found"] for e in store.ledger(job.id) if e.event == "reconciled"] == ["r1"]


async def test_unknown_submission_without_lookup_is_never_resent(tmp_path: Path) -> None:
    timeout = ProviderError("read timeout", error_class=ErrorClass.RETRYABLE,
                            label=ErrorLabel.TIMED_OUT, body_maybe_sent=True)
    provider = FakeProvider({"p": Script(submit_errors=[timeout])}, supports_lookup=False)
    providers = install(provider)
    store = MemoryStore()
    add_batch(store, tmp_path, ["p"])
    store.add_account(AccountSpec("a", "fake", 1), 0)
    await drain(store, providers=providers)
    job = store.list_jobs()[0]
    # Unknown is not a failure (issue 19): parked for the user, holding no slot.
    assert job.state == JobState.PARKED and job.error_label == "submit outcome unknown"
    assert job.error_class == "unknown" and job.claim_token is None
    assert provider.creates == {"k0": 1}


class Crashing(FakeProvider):
    async def submit(self, request):  # type: ignore[no-untyped-def]
        self.creates[request.job_key] = self.creates.get(request.job_key, 0) + 1
        raise ZeroDivisionError("bug in a worker")


@pytest.mark.expect_warnings("unexpected error in the render worker")  # the bug is the point
async def test_a_crashing_worker_ends_failed_after_the_ceiling(tmp_path: Path) -> None:
    # The bug is inside submit, where the create may already have left: the provider is
    # asked by client token (it says "no such submission") before the next try.
    provider = Crashing(supports_lookup=True)
    providers = install(provider)
    store = MemoryStore()
    add_batch(store, tmp_path, ["p"])
    store.add_account(AccountSpec("a", "fake", 1), 0)
    await drain(store, providers=providers)
    job = store.list_jobs()[0]
    assert job.state == JobState.FAILED and job.attempts == 3
    assert job.error_label == "internal error" and "ZeroDivisionError" in (job.error_message or "")
    # Before each new create the earlier one is looked for ("no such submission"), and the
    # create follows on the same claim (issue 19): attempts 2 and 3 each asked once.
    assert provider.lookups == 2 and provider.creates == {"k0": 3}


@pytest.mark.expect_warnings("unexpected error in the render worker")  # the bug is the point
async def test_a_bug_inside_submit_without_lookup_is_an_unknown_outcome(tmp_path: Path) -> None:
    provider = Crashing()
    providers = install(provider)
    store = MemoryStore()
    add_batch(store, tmp_path, ["p"])
    store.add_account(AccountSpec("a", "fake", 1), 0)
    await drain(store, providers=providers)
    job = store.list_jobs()[0]
    assert job.state == JobState.PARKED and job.attempts == 1 and provider.creates == {"k0": 1}
    assert job.error_label == "submit outcome unknown"
    assert "ZeroDivisionError" in (job.error_message or "")


async def test_three_accounts_never_exceed_their_limits(tmp_path: Path) -> None:
    # Renders long enough (many polls) that every account's slots fill up at once.
    providers = {name: FakeProvider({f"p{i}": Script(polls=40) for i in range(40)})
                 for name in ("a", "b", "c")}
    registry = builtin_registry()
    for name, p in providers.items():
        registry = registry.with_provider(ProviderInfo(
            f"fake-{name}", "Fake", lambda client, cfg, p=p: p, ParamSpec(), None,
            requires_key=False))
    store = MemoryStore()
    batch = store.create_batch(BatchSpec("b", "s", str(tmp_path / "out")), 0)
    store.add_jobs(batch.id, [JobSpec(f"k{i}", f"p{i}", f"fake-{'abc'[i % 3]}",
                                      str(tmp_path / "out" / f"{i}.mp4")) for i in range(40)], 0)
    for name, cap in (("a", 1), ("b", 2), ("c", 3)):
        store.add_account(AccountSpec(name, f"fake-{name}", cap), 0)
    seen: list[JobEvent] = []
    engine = Engine(store, config=FAST, rng=random.Random(2), providers=registry)
    engine.bus.subscribe(lambda e: seen.append(e) if isinstance(e, JobEvent) else None)
    await engine.start()
    await asyncio.wait_for(engine.run_until_drained(), 30)
    await engine.stop()
    assert set(states(store).values()) == {"COMPLETED"}
    assert all(providers[n].max_live == cap for n, cap in (("a", 1), ("b", 2), ("c", 3)))
    assert {e.state for e in seen} >= {"CLAIMED", "SUBMITTING", "RENDERING", "DOWNLOADING",
                                       "COMPLETED"}


async def test_pause_stops_new_claims_and_resume_continues(tmp_path: Path) -> None:
    provider = FakeProvider()
    providers = install(provider)
    store = MemoryStore()
    add_batch(store, tmp_path, ["p1", "p2"])
    store.add_account(AccountSpec("a", "fake", 2), 0)
    engine = Engine(store, providers=providers, config=FAST)
    said: list[str] = []
    engine.bus.subscribe(lambda e: said.append(e.state)
                         if isinstance(e, EngineStateEvent) else None)
    await engine.start(paused=True)
    # start() says "paused"; the pump says it again after its first pass (it had said
    # nothing yet): a whole pass ran while paused, and it claimed nothing.
    async def paused_pass() -> None:
        while said.count("paused") < 2:
            await asyncio.sleep(0.01)

    await asyncio.wait_for(paused_pass(), 10)
    assert provider.creates == {}
    assert set(states(store).values()) == {"QUEUED"}
    engine.resume()
    await asyncio.wait_for(engine.run_until_drained(), 20)
    await engine.stop()
    assert set(states(store).values()) == {"COMPLETED"}


async def test_cancel_stops_a_running_render(tmp_path: Path) -> None:
    provider = FakeProvider({"slow": Script(polls=10_000)})
    provider_gate = asyncio.Event()
    provider.gate = provider_gate
    providers = install(provider)
    store = MemoryStore()
    add_batch(store, tmp_path, ["slow"])
    store.add_account(AccountSpec("a", "fake", 1), 0)
    engine = Engine(store, providers=providers, config=FAST)
    await engine.start()
    for _ in range(200):
        if store.list_jobs()[0].state == JobState.RENDERING:
            break
        await asyncio.sleep(0.01)
    job_id = store.list_jobs()[0].id
    assert await user_commands.cancel(engine, [job_id]) == [job_id]
    provider_gate.set()
    result = await asyncio.wait_for(engine.run_until_drained(), 20)
    await engine.stop()
    assert result.outcome == "drained"
    assert store.list_jobs()[0].state == JobState.CANCELLED


async def test_jobs_pinned_to_a_disabled_account_stall_the_run(tmp_path: Path) -> None:
    provider = FakeProvider()
    providers = install(provider)
    store = MemoryStore()
    batch = store.create_batch(BatchSpec("b", "s", str(tmp_path / "out")), 0)
    store.add_jobs(batch.id, [
        JobSpec("pinned", "p0", "fake", str(tmp_path / "out" / "0.mp4"), pinned_account="off"),
        JobSpec("free", "p1", "fake", str(tmp_path / "out" / "1.mp4"))], 0)
    store.add_account(AccountSpec("on", "fake", 1), 0)
    store.add_account(AccountSpec("off", "fake", 1), 0)
    store.update_account("off", 0, enabled=False)
    engine = await drain(store, providers=providers)
    assert engine.last_result.outcome == "stalled"  # type: ignore[attr-defined]
    assert "off: disabled" in engine.last_result.detail  # type: ignore[attr-defined]
    assert states(store) == {"pinned": "QUEUED", "free": "COMPLETED"}


async def test_completion_event_carries_the_cost_the_provider_reported(tmp_path: Path) -> None:
    provider = FakeProvider()
    providers = install(provider)
    store = MemoryStore()
    add_batch(store, tmp_path, ["p"])
    store.add_account(AccountSpec("a", "fake", 1), 0)
    seen: list[JobEvent] = []
    engine = Engine(store, providers=providers, config=FAST)
    engine.bus.subscribe(lambda e: seen.append(e) if isinstance(e, JobEvent) else None)
    await engine.start()
    await asyncio.wait_for(engine.run_until_drained(), 20)
    await engine.stop()
    done = [e for e in seen if e.state == "COMPLETED"]
    assert len(done) == 1 and done[0].cost == 0.25 and done[0].output_path
