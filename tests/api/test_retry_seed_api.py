"""``POST /v1/jobs/{id}/retry?new_seed=N`` (issue 23): a finished job is kept and a new
job renders the seed; the answer names it and its estimated price."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from reelqueue.application.context import AppContext
from reelqueue.domain.states import JobState
from reelqueue.store.sqlite import SqliteStore
from tests.api.live_api import LiveApi
from tests.application.test_seed_variants import finished

pytestmark = pytest.mark.integration


def test_a_new_seed_of_a_finished_job_over_the_api_is_a_new_job(tmp_path: Path) -> None:
    with LiveApi(tmp_path) as api:
        original = finished(AppContext(data_dir=api.ctx.data_dir,
                                       videos_dir=api.ctx.videos_dir))
        with api.client() as client:
            plain = client.post(f"/v1/jobs/{original.id}/retry")
            seeded = client.post(f"/v1/jobs/{original.id}/retry", params={"new_seed": "42"})
            bad = client.post(f"/v1/jobs/{original.id}/retry", params={"new_seed": "-1"})
    assert plain.json() == {"id": original.id, "requeued": False}
    assert seeded.status_code == 200, seeded.text
    new_id = original.id + 1
    assert seeded.json() == {"id": original.id, "requeued": False, "new_seed": 42,
                             "new_jobs": [new_id], "estimate": "est. $0.05"}
    assert bad.status_code == 422 and "new_seed" in bad.json()["fields"]
    store = SqliteStore.open(api.ctx.journal_path, now=time.time())
    try:
        kept, new = store.list_jobs()
    finally:
        store.close()
    assert kept == original
    assert (new.id, new.state, new.params["seed"], new.output_path) == (
        new_id, JobState.QUEUED, 42, "shots/lighthouse-seed42.mp4")
