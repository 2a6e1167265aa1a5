"""A create answered with a render id no journal should keep (over 1,024 characters, with
control characters, empty, not text: a hostile gateway or a plug-in's slip) names no usable
render: the outcome is unknown, looked for by client token where the provider allows it,
never written as the job's render and never created a second time blindly."""

from __future__ import annotations

from pathlib import Path

import pytest

from reelqueue.domain.models import AccountSpec, Job
from reelqueue.domain.states import JobState
from reelqueue.providers.base import MAX_RENDER_ID_CHARS, RenderRequest, render_id_problem
from reelqueue.store.memory import MemoryStore
from tests.engine.fakes import FakeProvider
from tests.engine.test_engine import add_batch, drain, install

BAD_IDS = ["x" * (MAX_RENDER_ID_CHARS + 1), "r1\nr2", " r1", "", None, 7]


class OddIds(FakeProvider):
    """Creates the render, then answers with ``answer`` as its id."""

    def __init__(self, answer: object, *, supports_lookup: bool = False) -> None:
        super().__init__(supports_lookup=supports_lookup)
        self.answer = answer

    async def submit(self, request: RenderRequest) -> str:
        await super().submit(request)
        return self.answer  # type: ignore[return-value]


async def one_row(tmp_path: Path, provider: FakeProvider) -> Job:
    """One row rendered to its end on one account of ``provider``; the job as it ended."""
    store = MemoryStore()
    add_batch(store, tmp_path, ["p"])
    store.add_account(AccountSpec("a", "fake", 1), 0)
    await drain(store, providers=install(provider))
    (job,) = store.list_jobs()
    return job


@pytest.mark.parametrize("answer", BAD_IDS, ids=lambda a: repr(a)[:12])
async def test_an_unusable_render_id_is_an_unknown_outcome(tmp_path: Path,
                                                           answer: object) -> None:
    provider = OddIds(answer)
    job = await one_row(tmp_path, provider)
    assert job.state is JobState.PARKED and job.error_label == "submit outcome unknown"
    assert job.provider_job_id is None and provider.creates == {"k0": 1}
    assert "render id" in (job.error_message or "")


async def test_with_a_lookup_the_render_is_found_by_client_token(tmp_path: Path) -> None:
    """The create reached the provider: its lookup by our client token finds the render
    under its real id, which is kept; one create in all."""
    provider = OddIds("x" * (MAX_RENDER_ID_CHARS + 1), supports_lookup=True)
    job = await one_row(tmp_path, provider)
    assert job.state is JobState.COMPLETED and job.provider_job_id == "r1"
    assert provider.creates == {"k0": 1} and provider.lookups == 1


def test_usable_ids_pass() -> None:
    assert render_id_problem("models/veo-3.1/operations/abc123") is None
    assert render_id_problem("x" * MAX_RENDER_ID_CHARS) is None
