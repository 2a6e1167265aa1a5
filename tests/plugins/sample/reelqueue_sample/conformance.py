"""The Sample Video API's fake and its facts for ReelQueue's provider conformance suite
(tests/providers/conformance/; the suite finds this table through the entry-point group
``reelqueue.providers.conformance``). Only ReelQueue's tests import it: it uses their fake
HTTP router and table types."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
from conformance.facts import AdapterFacts, EngineFacts, PollShape, expire_url
from provider_fakes import SENTINEL_KEY, Router, json_response, video_response

from reelqueue.domain.errors import ErrorClass, ErrorLabel
from reelqueue.domain.states import RemotePhase
from reelqueue.providers.base import ProviderConfig, RenderRequest
from reelqueue.providers.httpx_session import HttpxSession
from reelqueue_sample import provider

# An absolute folder: the suite's fixture(provider, name) reads FIXTURES / provider / name.
FIXTURES = str(Path(__file__).resolve().parent / "fixtures")
API = r"api\.sample-video\.example"
CDN = r"cdn\.sample-video\.example"
VIDEO_ID = "vid_8c1f2a"
CREATE = rf"{API}/v1/videos$"
VIDEO = rf"{API}/v1/videos/{VIDEO_ID}"
ACCOUNT = rf"{API}/v1/account"


def _fixture(name: str) -> Any:
    import json

    return json.loads((Path(FIXTURES) / f"{name}.json").read_text(encoding="utf-8"))


class FakeSampleApi:
    """The Sample Video API: every GET of the video moves it one state along ``states``;
    each read of a finished video signs its link anew.

    Attributes:
        router: the MockTransport handler (and its request log).
        expired: links that answer 403 from now on.
    """

    def __init__(self, states: list[str] | None = None) -> None:
        self.router = Router()
        self.states = states or ["video_queued", "video_running", "video_succeeded"]
        self.position = -1
        self.signature = 0
        self.expired: set[str] = set()
        self.router.add("POST", CREATE, lambda r, m: json_response(201, _fixture("create")))
        self.router.add("GET", rf"{API}/v1/videos/(?P<id>[\w-]+)", self._get)
        self.router.add("DELETE", rf"{API}/v1/videos/(?P<id>[\w-]+)",
                        lambda r, m: httpx2.Response(204))
        self.router.add("GET", ACCOUNT, lambda r, m: json_response(200, _fixture("account")))
        self.router.add("GET", rf"{CDN}/.*", self._video)

    def creates(self) -> int:
        return self.router.count("POST", CREATE)

    def _get(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        if match["id"] != VIDEO_ID:
            return json_response(404, {"error": {"code": "not_found", "message": "No video"}})
        self.position = min(self.position + 1, len(self.states) - 1)
        video = _fixture(self.states[self.position])
        if video["status"] == "succeeded" and video.get("video_url"):
            self.signature += 1
            video["video_url"] = (f"https://cdn.sample-video.example/{VIDEO_ID}.mp4"
                                  f"?sig={self.signature}")
        return json_response(200, video)

    def _video(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        if str(request.url) in self.expired:
            return httpx2.Response(403, content=b"<Error>AccessDenied</Error>",
                                   headers={"Content-Type": "application/xml"})
        return video_response()


def make(client: httpx2.AsyncClient, **settings: Any) -> provider.SampleProvider:
    """The adapter as the engine builds it: through ReelQueue's own session."""
    config = ProviderConfig(account="studio", base_url=None, api_key=SENTINEL_KEY,
                            settings=settings)
    return provider.create(HttpxSession(client), config)


def request(**params: Any) -> RenderRequest:
    return RenderRequest(job_key="row-1", client_token="tok-1", prompt="A paper boat at dusk",
                         params=params)


def _answer(status: int, name: str, headers: dict[str, str] | None = None) -> Any:
    return lambda: json_response(status, _fixture(name), headers)


FACTS = AdapterFacts(
    kind=provider.KIND, provider=FIXTURES, label="sample-plugin", fake=FakeSampleApi,
    make=make, request=request, create=CREATE, created=201, poll=VIDEO, job_id=VIDEO_ID,
    video=rf"{CDN}/.*",
    states=(("video_queued", RemotePhase.QUEUED, "queued"),
            ("video_running", RemotePhase.RUNNING, "running"),
            ("video_succeeded", RemotePhase.SUCCEEDED, "succeeded"),
            ("video_cancelled", RemotePhase.CANCELLED, "cancelled")),
    finished="video_succeeded",
    failures=(("video_failed_policy", ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
              ("video_failed_input", ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
              ("video_failed_internal", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
              ("video_failed_undocumented", ErrorClass.PERMANENT, ErrorLabel.PROVIDER_ERROR),
              ("video_failed_bare", ErrorClass.PERMANENT, ErrorLabel.PROVIDER_ERROR)),
    create_errors=(
        (401, "error_401", {}, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED, None, False),
        (400, "error_400", {}, ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT, None, False),
        (402, "error_402", {}, ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS, None, False),
        (429, "error_429", {"Retry-After": "30"}, ErrorClass.ACCOUNT,
         ErrorLabel.RATE_LIMITED, 30.0, False),
        (503, "error_503", {}, ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR, None, False),
        (504, "error_503", {}, ErrorClass.RETRYABLE, ErrorLabel.TIMED_OUT, None, True)),
    no_id=({}, {"id": ""}, {"id": None}, {"status": "queued"}, {"video": {"id": VIDEO_ID}},
           {"id": [VIDEO_ID]}, {"id": 17}),
    unreadable=(b"<html>oops</html>", b"\xff\xfe"),
    unreadable_as=(ErrorClass.PERMANENT, ErrorLabel.SUBMIT_UNKNOWN),
    no_state=({}, {"id": VIDEO_ID}, {"status": None}, {"status": 3}, {"status": "paused"}),
    no_file=({**_fixture("video_succeeded"), "video_url": None},
             {**_fixture("video_succeeded"), "video_url": "ftp://example/video.mp4"}),
    id_key="id", reads_as=lambda body, job_id: body.get("id") == job_id,
    poll_shape=PollShape(
        states=("queued", "running", "succeeded", "failed", "cancelled"),
        keys=("id", "status", "progress", "video_url", "error", "x"),
        state_key="status", ending=("failed", "cancelled")),
    expire=expire_url, refresh={VIDEO: 2},
    check_key=(ACCOUNT, _answer(401, "error_401")),
    cancel=("DELETE", VIDEO),
    engine=EngineFacts(
        account="studio", prompt="A paper boat at dusk",
        permanent=(
            ("GET", VIDEO, _answer(200, "video_failed_policy"), ErrorLabel.CONTENT_POLICY,
             "content_policy"),
            ("POST", CREATE, _answer(400, "error_400"), ErrorLabel.INVALID_INPUT,
             "prompt must be at most 2000 characters"),
            ("GET", VIDEO, _answer(200, "video_failed_input"), ErrorLabel.INVALID_INPUT,
             "reference image could not be fetched")),
        credits=(_answer(402, "error_402"), ""),
        retryable=(("GET", VIDEO, _answer(200, "video_failed_internal")),),
        unknown_create=lambda: json_response(201, {"status": "queued"}),
        no_file=(VIDEO, lambda: json_response(200, {**_fixture("video_succeeded"),
                                                     "video_url": None}), "")),
)
