"""GET /v1/batches/{id}/takes and POST /v1/jobs/{id}/review (issue 35 item 3), on a live
API over a real journal: decisions, the one pick per row, "changed by X meanwhile" (409),
refusals, scopes, and every answer valid against the OpenAPI document."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import jsonschema
import pytest

from reelqueue.api.openapi import openapi_document
from reelqueue.domain.models import BatchSpec, JobSpec
from reelqueue.store.sqlite import SqliteStore
from reelqueue.store.tokens import TokenStore
from tests.api.live_api import LiveApi

pytestmark = pytest.mark.integration


def documented(response: httpx2.Response, path: str, method: str) -> Any:
    document = openapi_document()
    op = document["paths"][path][method]
    status = str(response.status_code)
    assert status in op["responses"], (status, response.text)
    media = response.headers["content-type"].split(";")[0]
    schema = {**op["responses"][status]["content"][media]["schema"],
              "components": document["components"]}
    body = response.json()
    jsonschema.validate(body, schema, cls=jsonschema.Draft202012Validator)
    return body


def test_takes_and_reviews_over_http(tmp_path: Path) -> None:
    with LiveApi(tmp_path) as api:
        store = SqliteStore.open(api.ctx.journal_path, now=1.0)
        try:
            batch = store.create_batch(BatchSpec("shots", "s.csv", "shots"), 1.0)
            ids = list(store.add_jobs(batch.id, [
                JobSpec(job_key=key, prompt=f"p {key}", provider="mock",
                        output_path=f"shots/{i}.mp4", row_number=2 + i // 2)
                for i, key in enumerate(["a", "a#2", "b", "b#2"])], 1.0).job_ids)
            store.cancel_jobs([ids[3]], 2.0)
        finally:
            store.close()
        tokens = TokenStore(api.ctx.journal_path)
        try:
            reader = tokens.add("viewer", "read", 0.0)
            ana = tokens.add("ana", "submit", 0.0)
            bo = tokens.add("bo", "submit", 0.0)
        finally:
            tokens.close()
        takes_path, review_path = "/v1/batches/{batch_id}/takes", "/v1/jobs/{job_id}/review"
        with api.client(reader) as read, api.client(ana) as as_ana, api.client(bo) as as_bo:
            got = documented(read.get(f"/v1/batches/{batch.id}/takes"), takes_path, "get")
            assert [len(r["takes"]) for r in got["rows"]] == [2, 2]
            assert got["progress"] == "0 of 0 reviewed"  # nothing finished yet
            # a read token may not decide
            assert read.post(f"/v1/jobs/{ids[0]}/review",
                             json={"decision": "pick", "version": 0}).status_code == 403
            first = documented(as_ana.post(f"/v1/jobs/{ids[0]}/review", json={
                "decision": "pick", "rating": 4, "version": 0}), review_path, "post")
            assert first["review"]["decided_by"] == "ana" and first["review"]["version"] == 1
            moved = documented(as_bo.post(f"/v1/jobs/{ids[1]}/review", json={
                "decision": "pick", "version": 0}), review_path, "post")
            assert moved["moved_from"] == [ids[0]]
            # ana changes take 1 from what she saw (version 1): bo moved it meanwhile
            stale = as_ana.post(f"/v1/jobs/{ids[0]}/review",
                                json={"decision": "reject", "version": 1})
            body = documented(stale, review_path, "post")
            assert stale.status_code == 409 and "changed by bo meanwhile" in body["detail"]
            assert body["current"]["version"] == 2
            refused = as_ana.post(f"/v1/jobs/{ids[3]}/review",
                                  json={"decision": "reject", "version": 0})
            assert refused.status_code == 409, refused.text
            assert "failed or was cancelled" in refused.json()["detail"]
            documented(refused, review_path, "post")
            bad = as_ana.post(f"/v1/jobs/{ids[2]}/review", json={"decision": "maybe"})
            assert bad.status_code == 422
            assert set(documented(bad, review_path, "post")["fields"]) == {
                "decision", "version"}
            assert as_ana.post("/v1/jobs/999/review", json={
                "decision": "pick", "version": 0}).status_code == 404
            assert read.get("/v1/batches/999/takes").status_code == 404
            after = documented(read.get(f"/v1/batches/{batch.id}/takes"), takes_path, "get")
            decisions = {t["job_id"]: (t["decision"], t["rating"], t["decided_by"])
                         for r in after["rows"] for t in r["takes"]}
            assert decisions == {ids[0]: ("none", 4, "bo"), ids[1]: ("pick", None, "bo"),
                                 ids[2]: ("none", None, None), ids[3]: ("none", None, None)}
            assert after["rows"][0]["picked"] == ids[1]
