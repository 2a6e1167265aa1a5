"""``GET /v1/spend?reconcile=1`` gives ``spend --reconcile``'s figures under the document's
``Reconcile`` schema (checked with jsonschema against the served body), and refuses a bad
``reconcile`` or ``days`` with the documented 422; without it, the answer is as before."""

from __future__ import annotations

import jsonschema
import pytest

from reelqueue.api.openapi import openapi_document
from tests.api.live_api import LiveApi
from tests.spend.conftest import Journal, RunwayFake, today, usage_body

pytestmark = pytest.mark.integration


def test_the_reconciliation_is_served_under_its_documented_schema(
        live: tuple[LiveApi, Journal], runway_fake: RunwayFake) -> None:
    api, journal = live
    journal.started(3)
    runway_fake.answer(usage_body(**{"gen4.5": 216}))
    document = openapi_document()
    schema = {**document["components"]["schemas"]["Spend"],
              "components": document["components"]}
    with api.client() as client:
        plain = client.get("/v1/spend")
        assert plain.status_code == 200 and "reconcile" not in plain.json()
        assert not [r for r in runway_fake.requests if r[1] == "/v1/organization/usage"]
        answer = client.get("/v1/spend?reconcile=1&days=3")
        assert answer.status_code == 200, answer.text
        body = answer.json()
        jsonschema.validate(body, schema)
        (account,) = body["reconcile"]["accounts"]
        (day,) = account["days"]
        assert day["day"] == today() and day["kind"] == "price_drift"
        assert day["matching_per_second"] == pytest.approx(14.4)
        for bad in ("reconcile=2", "reconcile=yes", "reconcile=1&days=0",
                    "reconcile=1&days=91"):
            refused = client.get(f"/v1/spend?{bad}")
            assert refused.status_code == 422, bad
            assert refused.headers["content-type"].startswith("application/problem+json")
    assert "422" in document["paths"]["/v1/spend"]["get"]["responses"]
    assert runway_fake.creates() == []

