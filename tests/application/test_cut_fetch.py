"""``reelqueue cut --from-api URL``: a take held by another machine, fetched through its
API, bounded by the journal's size and checked against its sha256."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import httpx2
import pytest

from reelqueue.application.cut_fetch import ApiFetcher
from reelqueue.domain.errors import InputError
from tests.application.test_cut import _job

VIDEO = b"\x00\x00\x00\x18ftypisom" + bytes(range(256)) * 40
SHA = hashlib.sha256(VIDEO).hexdigest()


def _fetcher(answer: httpx2.Response, seen: list[httpx2.Request]) -> ApiFetcher:
    def route(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return answer

    return ApiFetcher("https://box:8765/", "tok", transport=httpx2.MockTransport(route))


def test_a_take_is_fetched_with_the_token_and_checked(tmp_path: Path) -> None:
    seen: list[httpx2.Request] = []
    job = _job(7, "row:a", 1, "a.mp4", SHA, output_size=len(VIDEO))
    target = tmp_path / "a.mp4"
    fetch = _fetcher(httpx2.Response(200, content=VIDEO), seen)
    fetch(job, target)
    assert target.read_bytes() == VIDEO
    assert str(seen[0].url) == "https://box:8765/v1/jobs/7/video"
    assert seen[0].headers["Authorization"] == "Bearer tok"
    fetch.close()


@pytest.mark.parametrize(("answer", "size", "words"), [
    (httpx2.Response(401, json={"title": "no"}), None, "REELQUEUE_API_TOKEN"),
    (httpx2.Response(409, json={}), None, "does not hold it either"),
    (httpx2.Response(200, content=VIDEO + b"more"), len(VIDEO), "more than the"),
    (httpx2.Response(200, content=VIDEO[:-1] + b"!"), len(VIDEO), "sha256 differs"),
])
def test_a_bad_answer_is_refused_and_leaves_nothing(tmp_path: Path, answer: httpx2.Response,
                                                    size: int | None, words: str) -> None:
    job = replace(_job(7, "row:a", 1, "a.mp4", SHA), output_size=size)
    with pytest.raises(InputError, match=words):
        _fetcher(answer, [])(job, tmp_path / "a.mp4")
    assert list(tmp_path.iterdir()) == []


def test_an_address_that_is_no_url_is_refused() -> None:
    with pytest.raises(InputError, match="the API's address"):
        ApiFetcher("box:8765", None)
