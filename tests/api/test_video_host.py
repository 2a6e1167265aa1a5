"""Where a video is (issue 23): the API's job names its file relative to the videos folder
and the machine that wrote it; the download reads it under the server's own videos
folder, answers 409 naming host and path when another machine wrote it, and never reads
outside the folder whatever the row says."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from reelqueue.domain.models import BatchSpec, JobSpec
from reelqueue.store.base import this_host
from reelqueue.store.sqlite import SqliteStore
from tests.api.live_api import LiveApi

pytestmark = pytest.mark.integration

VIDEO = b"\x00\x00\x00\x18ftypisom" + b"frames" * 100


def _complete(journal: Path, key: str, host: str, sha256: str, size: int) -> None:
    db = sqlite3.connect(journal)
    with db:
        db.execute("UPDATE jobs SET state = 'COMPLETED', finished_at = 1, output_size = ?, "
                   "output_sha256 = ?, output_host = ? WHERE job_key = ?",
                   (size, sha256, host, key))
    db.close()


def test_the_video_is_read_under_this_machines_folder_or_named_elsewhere(
        tmp_path: Path) -> None:
    api = LiveApi(tmp_path)
    journal = api.ctx.journal_path
    store = SqliteStore.open(journal, now=1.0)
    batch = store.create_batch(BatchSpec("shots", "s.csv", "shots"), 1.0)
    store.add_jobs(batch.id, [
        JobSpec("here", "p", "mock", "shots/here.mp4"),
        JobSpec("there", "p", "mock", "shots/there.mp4"),
        JobSpec("hostile", "p", "mock", "shots/../../secret.mp4"),
    ], 1.0)
    store.close()
    digest = hashlib.sha256(VIDEO).hexdigest()
    (api.ctx.videos_dir / "shots").mkdir(parents=True)
    (api.ctx.videos_dir / "shots" / "here.mp4").write_bytes(VIDEO)
    (tmp_path / "secret.mp4").write_bytes(VIDEO)  # outside the videos folder
    _complete(journal, "here", this_host(), digest, len(VIDEO))
    _complete(journal, "there", "render-02", digest, len(VIDEO))
    _complete(journal, "hostile", this_host(), digest, len(VIDEO))
    with api, api.client() as client:
        jobs = {j["name"] or j["id"]: j for j in client.get("/v1/jobs").json()["jobs"]}
        assert [j["output"] for j in jobs.values()][:2] == [
            {"size": len(VIDEO), "sha256": digest, "path": "shots/here.mp4",
             "host": this_host()},
            {"size": len(VIDEO), "sha256": digest, "path": "shots/there.mp4",
             "host": "render-02"}]
        here = client.get("/v1/jobs/1/video")
        assert here.status_code == 200 and here.content == VIDEO
        there = client.get("/v1/jobs/2/video")
        assert there.status_code == 409, there.text
        assert there.headers["content-type"].startswith("application/problem+json")
        body = there.json()
        assert (body["output_host"], body["output_path"]) == ("render-02", "shots/there.mp4")
        assert "render-02" in body["detail"]
        hostile = client.get("/v1/jobs/3/video")
        assert hostile.status_code == 410, hostile.text  # refused, never read
        assert VIDEO not in hostile.content
