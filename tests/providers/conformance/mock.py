"""The built-in mock provider's fake and its conformance facts.

The mock is our own server, so its reference is its code: the answers below are the shapes
of ``app/reelqueue/mockprovider/handler.py`` (the API in its docstring) and
``state.py`` (``MockState.view``, the poll answer). It differs from a real provider on
purpose where a mock render costs nothing; the facts say where (an unreadable create or
poll answer is a retryable error, not an unknown outcome: ``no_id``/``no_state`` empty).
"""

from __future__ import annotations

from typing import Any

import httpx2
from provider_fakes import WalkingFake, json_response

from conformance import maker, requester
from conformance.facts import RETRYABLE_UNREADABLE, AdapterFacts, EngineFacts, expire_flag
from reelqueue.domain.errors import ErrorClass, ErrorLabel
from reelqueue.domain.states import RemotePhase
from reelqueue.providers.base import LostCreateSearch
from reelqueue.providers.mock import MockProvider

BASE = "http://127.0.0.1:9"
HOST = r"127\.0\.0\.1"
RENDER_ID = "mr_1"
CREATE = rf"{HOST}/v1/renders"
RENDER = rf"{HOST}/v1/renders/{RENDER_ID}"
FILES = rf"{HOST}/v1/files/.*"
_VIEW = {"id": RENDER_ID, "client_token": "tok-1", "job_key": "row-1"}
ANSWERS: dict[str, dict[str, Any]] = {
    "queued": {**_VIEW, "status": "queued"},
    "running": {**_VIEW, "status": "running", "progress": 42.0},
    "succeeded": {**_VIEW, "status": "succeeded", "cost": 0.05,
                  "video_url": f"/v1/files/{RENDER_ID}.mp4?sig=abc"},
    "failed": {**_VIEW, "status": "failed", "error": {
        "code": "render_failed", "message": "The mock render failed (flaky)."}},
    "failed_content_policy": {**_VIEW, "status": "failed", "error": {
        "code": "content_policy", "message": "The prompt was refused."}},
    "cancelled": {**_VIEW, "status": "cancelled"},
}


def refused(status: int, code: str, message: str) -> dict[str, Any]:
    """The mock's error body (``handler.py`` ``_error``)."""
    return {"error": {"code": code, "message": message}}


class FakeMock(WalkingFake):
    """The mock's API: every GET of the render moves it one answer along ``states``."""

    create_route = CREATE

    def __init__(self, states: list[str] | None = None) -> None:
        super().__init__(states, ["queued", "running", "succeeded"])
        self.router.add("POST", CREATE, lambda r, m: json_response(
            201, {"id": RENDER_ID, "status": "queued", "client_token": "tok-1"}))
        self.router.add("GET", RENDER, self._get)
        self.router.add("POST", rf"{RENDER}/cancel", lambda r, m: json_response(200, {}))
        self.router.add("GET", rf"{HOST}/v1/account",
                        lambda r, m: json_response(200, {"account": "acct"}))
        self.router.add("GET", CREATE, lambda r, m: json_response(200, {"data": [
            {**ANSWERS["queued"], "client_token": r.url.params.get("client_token")}]}))
        self.router.add("GET", FILES, self.video(
            lambda: json_response(404, refused(404, "not_found", "no such file"))))

    def _get(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        return json_response(200, ANSWERS[self.step()])


make = maker(MockProvider, "acct", BASE)
request = requester("a fox", duration=4)


def _answer(status: int, body: dict[str, Any]) -> Any:
    return lambda: json_response(status, body)


FACTS = AdapterFacts(
    kind="mock", provider="mock", fake=FakeMock, make=make, request=request,
    create=CREATE, created=201, poll=RENDER, job_id=RENDER_ID, video=FILES, base_url=BASE,
    states=(("queued", RemotePhase.QUEUED, "queued"),
            ("running", RemotePhase.RUNNING, "running"),
            ("succeeded", RemotePhase.SUCCEEDED, "succeeded"),
            ("cancelled", RemotePhase.CANCELLED, "cancelled")),
    finished="succeeded",
    failures=(("failed", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
              ("failed_content_policy", ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY)),
    create_errors=(
        (401, refused(401, "unauthorized", "bad key"), {}, ErrorClass.ACCOUNT,
         ErrorLabel.KEY_REJECTED, None, False),
        (422, refused(422, "content_policy", "The prompt was refused."), {},
         ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY, None, False),
        (400, refused(400, "bad_request", "Bad request"), {}, ErrorClass.PERMANENT,
         ErrorLabel.INVALID_INPUT, None, False),
        (429, refused(429, "rate_limited", "slow down"), {"Retry-After": "3"},
         ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED, 3.0, False),
        (500, refused(500, "internal", "boom"), {}, ErrorClass.RETRYABLE,
         ErrorLabel.PROVIDER_ERROR, None, False),
        (504, refused(504, "timeout", "late"), {}, ErrorClass.RETRYABLE,
         ErrorLabel.TIMED_OUT, None, True)),
    no_id=(), unreadable=(b"<html>ok</html>", b"[]", b""),  # retryable, maybe sent
    unreadable_as=RETRYABLE_UNREADABLE,
    no_file=({**ANSWERS["succeeded"], "video_url": None},),
    id_key="id", reads_as=lambda body, job_id: job_id == body["id"],
    expire=expire_flag, refresh={RENDER: 2},
    check_key=(rf"{HOST}/v1/account", _answer(401, refused(401, "unauthorized", "bad key"))),
    lost_create=LostCreateSearch.LOOKUP, cancel=("POST", rf"{RENDER}/cancel"),
    echo_statuses=(400, 401, 429, 500),
    engine=EngineFacts(
        account="m", prompt="a fox",
        permanent=(("GET", RENDER, _answer(200, ANSWERS["failed_content_policy"]),
                    ErrorLabel.CONTENT_POLICY, "The prompt was refused"),
                   ("POST", CREATE, _answer(400, refused(400, "bad_request", "Bad request")),
                    ErrorLabel.INVALID_INPUT, "Bad request")),
        credits=(_answer(402, refused(402, "out_of_credits", "no credits left")),
                 "no credits left"),
        retryable=(("GET", RENDER, _answer(200, ANSWERS["failed"])),),
        unknown_create=None),  # settled by a lookup (reconcile: key)
)
