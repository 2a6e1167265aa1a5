"""A render this instance resumes acts on the job's whole row, never on a listing's cut
value (issue 34: listings cut long text, store/listing.py)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from reelqueue.domain.models import AccountSpec, Claim
from reelqueue.engine.engine import Engine
from reelqueue.store.base import ClaimParams
from reelqueue.store.listing import LIST_PROMPT_CHARS
from reelqueue.store.memory import MemoryStore
from tests.engine.fakes import FakeProvider, Script
from tests.engine.test_engine import FAST, add_batch, install

pytestmark = pytest.mark.unit


async def test_a_resumed_render_gets_the_whole_prompt(tmp_path: Path) -> None:
    prompt = "a long but honest prompt " * 200  # 5,000 characters: a listing cuts it
    assert len(prompt) > LIST_PROMPT_CHARS
    store = MemoryStore()
    add_batch(store, tmp_path, [prompt])
    store.add_account(AccountSpec("a", "fake", 1), 0)
    assert store.claim_next_job(ClaimParams("a", "me", 1.0, 600.0)) is not None
    engine = Engine(store, providers=install(FakeProvider({prompt: Script()})), config=FAST,
                    rng=random.Random(1), instance_id="me")
    started: list[Claim] = []
    engine._start_worker = lambda claim, provider: started.append(claim)  # type: ignore[method-assign]
    await engine._resume_owned()
    engine.close_store()
    assert [claim.job.prompt for claim in started] == [prompt]
