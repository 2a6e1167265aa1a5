"""An OpenAI-compatible gateway's fake (the ``/v1/videos`` shape; the content endpoint
redirects to a storage host) and its conformance facts."""

from __future__ import annotations

from typing import Any

import httpx2
from provider_fakes import SENTINEL_KEY, WalkingFake, fixture, json_response, video_response

from conformance import maker, requester
from conformance.facts import (
    RETRYABLE_UNREADABLE,
    AdapterFacts,
    EngineFacts,
    expire_flag,
    gone_flag,
)
from reelqueue.domain.errors import ErrorClass, ErrorLabel
from reelqueue.domain.states import RemotePhase
from reelqueue.providers.adapters import openai_compat
from reelqueue.providers.base import LostCreateSearch

GATEWAY = "videos.gateway.example"
BASE_URL = f"https://{GATEWAY}/v1"
STORAGE = "files.gateway-cdn.example"
VIDEO_ID = "video_68d7512d07848190b3e45da0ecbebcde"
CREATE = rf"{GATEWAY}/v1/videos"
VIDEO = rf"{GATEWAY}/v1/videos/{VIDEO_ID}"
CONTENT = rf"{VIDEO}/content"


class FakeGateway(WalkingFake):
    """The /v1/videos shape; the content endpoint redirects to a storage host.

    Attributes:
        poll_after_ms: the ``openai-poll-after-ms`` each video answer carries (None: none,
            so the engine polls at its own fast test pace).
    """

    create_route = CREATE

    def __init__(self, states: list[str] | None = None,
                 poll_after_ms: str | None = "2500") -> None:
        super().__init__(states, ["video_queued", "video_in_progress", "video_completed"])
        self.poll_after_ms = poll_after_ms
        self.router.add("POST", CREATE,
                        lambda r, m: json_response(200, fixture("openai_compat", "create")))
        self.router.add("GET", VIDEO, self._get)
        self.router.add("GET", CONTENT, self._content)
        self.router.add("DELETE", VIDEO, lambda r, m: json_response(
            200, {"id": VIDEO_ID, "deleted": True, "object": "video.deleted"}))
        self.router.add("GET", CREATE,
                        lambda r, m: json_response(200, fixture("openai_compat", "list")))
        self.router.add("GET", rf"{STORAGE}/.*", self._storage)

    def _get(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        headers = {"openai-poll-after-ms": self.poll_after_ms} if self.poll_after_ms else {}
        return json_response(200, fixture("openai_compat", self.step()),
                             headers)

    def _content(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        assert request.headers["authorization"] == f"Bearer {SENTINEL_KEY}"
        assert request.headers["accept"] == "application/binary"
        if self.expire_next_download:
            self.expire_next_download = False
            return json_response(404, {"error": {"message": "Video content not found",
                                                 "code": "not_found"}})
        return httpx2.Response(307, headers={"Location": f"https://{STORAGE}/{VIDEO_ID}.mp4"})

    def _storage(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        assert "authorization" not in request.headers, "key leaked to the storage host"
        return video_response()


make = maker(openai_compat.create, "gw", BASE_URL, model="wan-2.5")
request = requester("A tide pool")


def _answer(status: int, name: str) -> Any:
    return lambda: json_response(status, fixture("openai_compat", name))


FACTS = AdapterFacts(
    kind="openai-compat", provider="openai_compat",
    fake=lambda states=None: FakeGateway(states, poll_after_ms=None), make=make,
    request=request, create=CREATE, created=200, poll=VIDEO, job_id=VIDEO_ID,
    video=rf"{STORAGE}/.*",
    states=(("video_queued", RemotePhase.QUEUED, "queued"),
            ("video_in_progress", RemotePhase.RUNNING, "in_progress"),
            ("video_completed", RemotePhase.SUCCEEDED, "completed")),
    finished="video_completed",
    failures=(
        ("video_failed_moderation", ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
        # "internal_error" is no code OpenAI documents: permanent, never a guessed retry.
        ("video_failed_internal", ErrorClass.PERMANENT, ErrorLabel.PROVIDER_ERROR),
        ("video_failed_server_error", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
        ("video_failed_rate_limited", ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED),
        ("video_failed_invalid", ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
        ("video_expired", ErrorClass.PERMANENT, ErrorLabel.DOWNLOAD_FAILED)),
    create_errors=(
        (401, "error_401", {}, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED, None, False),
        (403, "error_403", {}, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED, None, False),
        (400, "error_400", {}, ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT, None, False),
        (400, "error_400_moderation", {}, ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY,
         None, False),
        (429, "error_429_rate", {"retry-after-ms": "20000"}, ErrorClass.ACCOUNT,
         ErrorLabel.RATE_LIMITED, 20.0, False),
        (429, "error_429_quota", {"Retry-After": "20"}, ErrorClass.ACCOUNT,
         ErrorLabel.OUT_OF_CREDITS, None, False),
        (500, "error_500", {}, ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR, None, False),
        (503, "error_500", {}, ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR, None, False),
        (504, "error_500", {}, ErrorClass.RETRYABLE, ErrorLabel.TIMED_OUT, None, True)),
    no_id=({}, {"id": ""}, {"id": None}, {"object": "video"}, {"data": [{"id": VIDEO_ID}]},
           {"error": None}),
    unreadable=(b"<html>ok</html>", b'{"id": "video_', b"[]", b""),
    unreadable_as=RETRYABLE_UNREADABLE,
    id_key="id", reads_as=lambda body, job_id: job_id == str(body["id"]),
    expire=expire_flag, refresh={VIDEO: 2},
    gone=(("video_completed", "video_expired"), gone_flag, ""),
    check_key=(CREATE, _answer(401, "error_401")),
    lost_create=LostCreateSearch.SEARCH, cancel=("DELETE", VIDEO), base_url=BASE_URL,
    engine=EngineFacts(
        account="gw", prompt="A tide pool", settings={"model": "wan-2.5"},
        permanent=(
            ("GET", VIDEO, _answer(200, "video_failed_moderation"), ErrorLabel.CONTENT_POLICY,
             "blocked by our moderation system"),
            ("POST", CREATE, _answer(400, "error_400"), ErrorLabel.INVALID_INPUT,
             "Invalid type for 'input_reference'"),
            ("GET", VIDEO, _answer(200, "video_failed_image_download"),
             ErrorLabel.INVALID_INPUT, "Failed to download the input_reference image")),
        credits=(_answer(429, "error_429_quota"), ""),
        retryable=(("GET", VIDEO, _answer(200, "video_failed_server_error")),),
        unknown_create=None),
)
