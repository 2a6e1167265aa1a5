"""Issue 32 on the HTTP API: ``GET /v1/accounts`` carries each account's provider view
(balance with its unit, when it was read, stale or not, per-model limits), the limit in
force and the balance gate, under the names ``accounts list --json`` gives them, and the
answer is what the OpenAPI document says."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from reelqueue.api.openapi import openapi_document
from reelqueue.credentials import MemoryKeyring
from reelqueue.domain.account_view import AccountView, Balance, ModelLimit
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.store.sqlite import SqliteStore
from tests.api.live_api import LiveApi

pytestmark = pytest.mark.integration


@pytest.fixture
def live(tmp_path: Path, memory_keyring: MemoryKeyring) -> Iterator[LiveApi]:
    api = LiveApi(tmp_path)
    now = time.time()
    store = SqliteStore.open(api.ctx.journal_path, now=now)
    try:
        store.add_account(AccountSpec("rw", "runway", 2), now)
        store.add_account(AccountSpec("m1", "mock", 5), now)
        store.add_account(AccountSpec("fal", "fal", 1), now)
        batch = store.create_batch(BatchSpec("b", "s.csv", "b"), now)
        store.add_jobs(batch.id, [JobSpec(
            "k1", "a fox", "runway", "b/1.mp4", params={"model": "gen4.5", "duration": 5},
            metadata={"price": 0.6})], now)
        store.put_account_view(AccountView("rw", Balance(40.0, "credits"), (), None, now,
                                           "elsewhere"))
        store.put_account_view(AccountView(
            "m1", Balance(4200.0, "credits"), (ModelLimit("mock-1", 2, 50, "utc_day", 12),),
            None, now - 20 * 60, "here"))
    finally:
        store.close()
    with api:
        yield api


def _schema(name: str) -> dict[str, Any]:
    document = openapi_document()
    return {**document["components"]["schemas"][name], "components": document["components"]}


def test_accounts_carry_the_view_the_limit_in_force_and_the_balance_gate(
        live: LiveApi) -> None:
    with live.client() as client:
        response = client.get("/v1/accounts")
    assert response.status_code == 200, response.text
    body = response.json()
    jsonschema.validate(body, _schema("Accounts"))
    accounts = {a["name"]: a for a in body["accounts"]}

    rw = accounts["rw"]
    assert rw["credits"]["words"] == "credits low: 40 left, this render needs 60"
    assert rw["credits"]["low"] is True and rw["credits"]["unit"] == "credits"
    assert rw["view"]["balance"] == {"amount": 40.0, "unit": "credits"}
    assert rw["view"]["stale"] is False

    m1 = accounts["m1"]
    assert m1["view"]["stale"] is True and m1["credits"] is None  # stale: gates nothing
    assert m1["view"]["words"][0].endswith("(stale: 20 min old, gates nothing)")
    assert m1["view"]["limits"][0]["concurrency"] == 2
    assert m1["limit_in_force"]["words"] == (
        "5 set · provider's limits not applied (stale): 2 for mock-1")
    assert m1["limit_in_force"]["applied"] is False

    fal = accounts["fal"]
    assert fal["view"]["published"] is False and fal["credits"] is None
    assert fal["limit_in_force"]["words"] == "1 set"
