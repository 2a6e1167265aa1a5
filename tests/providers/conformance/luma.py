"""Luma Agents' fake (only the API's two endpoints: ``POST /generations`` and
``GET /generations/{id}``; anything else is its JSON 404) and its conformance facts."""

from __future__ import annotations

from typing import Any

import httpx2
from provider_fakes import SENTINEL_KEY, WalkingFake, fixture, json_response, video_response

from conformance import maker, requester
from conformance.facts import RETRYABLE_UNREADABLE, AdapterFacts, EngineFacts, PollShape, expire_url
from reelqueue.domain.errors import ErrorClass, ErrorLabel
from reelqueue.domain.states import RemotePhase
from reelqueue.providers.adapters import luma

API = "agents.lumalabs.ai"
CDN = "storage.cdn-luma.com"
GEN_ID = "4f6c1d2e-8a9b-4c3d-9e1f-2a3b4c5d6e7f"
CREATE = rf"{API}/v1/generations"
GENERATION = rf"{API}/v1/generations/{GEN_ID}"
ANY_GENERATION = rf"{API}/v1/generations/[^/]+"


class FakeLuma(WalkingFake):
    """Generations walk ``states`` one GET at a time; each completed GET re-signs the URL."""

    create_route = CREATE

    def __init__(self, states: list[str] | None = None) -> None:
        super().__init__(states, ["generation_queued", "generation_processing",
                                  "generation_completed"])
        self.signatures = 0
        self.expired: set[str] = set()
        self.router.add("POST", CREATE, self._authorized(
            lambda r, m: json_response(201, fixture("luma", "create"))))
        self.router.add("GET", GENERATION, self._authorized(self._get))
        # Only the two endpoints exist: any other id (or path) is the API's JSON 404.
        self.router.add("GET", ANY_GENERATION, self._authorized(
            lambda r, m: json_response(404, fixture("luma", "error_404"))))
        self.router.add("GET", rf"{API}/.*",
                        lambda r, m: json_response(404, {"detail": "Not Found"}))
        self.router.add("GET", rf"{CDN}/.*", self._video)

    @staticmethod
    def _authorized(handler: Any) -> Any:
        def check(request: httpx2.Request, match: Any) -> httpx2.Response:
            if request.headers.get("authorization") != f"Bearer {SENTINEL_KEY}":
                return json_response(401, fixture("luma", "error_401"))
            result: httpx2.Response = handler(request, match)
            return result
        return check

    def _get(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        generation = fixture("luma", self.step())
        if generation["state"] == "completed":
            self.signatures += 1
            generation["output"][0]["url"] = (
                f"https://{CDN}/agents/{GEN_ID}/video.mp4?X-Amz-Signature=s{self.signatures}")
        return json_response(200, generation)

    def _video(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        if str(request.url) in self.expired:
            return httpx2.Response(403, content=b"<Error><Code>AccessDenied</Code>"
                                  b"<Message>Request has expired</Message></Error>",
                                  headers={"Content-Type": "application/xml"})
        return video_response()


make = maker(luma.create, "luma-main")
request = requester("A paper boat")


def _answer(status: int, name: str) -> Any:
    return lambda: json_response(status, fixture("luma", name))


FACTS = AdapterFacts(
    kind="luma", provider="luma", fake=FakeLuma, make=make, request=request,
    create=CREATE, created=201, poll=GENERATION, job_id=GEN_ID, video=rf"{CDN}/.*",
    states=(("generation_queued", RemotePhase.QUEUED, "queued"),
            ("generation_processing", RemotePhase.RUNNING, "processing"),
            ("generation_completed", RemotePhase.SUCCEEDED, "completed")),
    finished="generation_completed",
    failures=tuple((f"failed_{code}", error_class, label) for code, error_class, label in (
        ("content_moderated", ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
        ("budget_exhausted", ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS),
        ("rate_limited", ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED),
        ("generation_failed", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
        ("output_not_found", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
        ("image_too_large", ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
        ("unsupported_format", ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
        ("corrupt_input", ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
        ("invalid_request", ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT))),
    failed_answers=tuple(  # undocumented codes: permanent, never a guess
        ({**fixture("luma", "failed_generation_failed"), "failure_code": code,
          "failure_reason": "Something new went wrong"}, ErrorClass.PERMANENT,
         ErrorLabel.PROVIDER_ERROR, "Something new went wrong")
        for code in ("a_code_from_next_year", None)),
    create_errors=(
        (401, "error_401", {}, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED, None, False),
        (402, "error_402", {}, ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS, None, False),
        (400, "error_400", {}, ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT, None, False),
        (400, "error_400_moderation", {}, ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY,
         None, False),
        (429, "error_429", {"Retry-After": "30"}, ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED,
         30.0, False),
        (429, "error_429", {"X-RateLimit-Reset": "45"}, ErrorClass.ACCOUNT,
         ErrorLabel.RATE_LIMITED, 45.0, False),
        (500, "error_500", {}, ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR, None, False),
        (504, "error_500", {}, ErrorClass.RETRYABLE, ErrorLabel.TIMED_OUT, None, True)),
    no_id=({}, {"id": ""}, {"id": None}, {"state": "queued"}, {"generation": {"id": GEN_ID}},
           {"id": ["x"]}),
    unreadable=(b"<html>ok</html>", b'{"id": "4f6c', b"[]", b""),
    unreadable_as=RETRYABLE_UNREADABLE,
    no_state=({}, {"id": GEN_ID}, {"state": None}, {"state": 3},
              {"generation": {"state": "completed"}}),
    id_key="id", reads_as=lambda body, job_id: job_id == str(body["id"]),
    poll_shape=PollShape(
        states=("queued", "processing", "completed", "failed"),
        keys=("id", "state", "output", "failure_code", "failure_reason", "type", "x"),
        state_key="state", ending=("failed",)),
    expire=expire_url, refresh={GENERATION: 2},
    check_key=(ANY_GENERATION, _answer(401, "error_401")),
    engine=EngineFacts(
        account="luma-main", prompt="A paper boat",
        permanent=(
            ("GET", GENERATION, _answer(200, "failed_content_moderated"),
             ErrorLabel.CONTENT_POLICY, "content_moderated"),
            # bad input (the image could not be decoded / the request was refused)
            ("GET", GENERATION, _answer(200, "failed_corrupt_input"),
             ErrorLabel.INVALID_INPUT, "corrupt_input"),
            ("GET", GENERATION, _answer(200, "failed_invalid_request"),
             ErrorLabel.INVALID_INPUT, "invalid_request"),
            # unreachable image: "422 Bad media data (base64 or URL)"
            ("POST", CREATE, _answer(422, "error_422_image_url"), ErrorLabel.INVALID_INPUT,
             "could not be fetched")),
        credits=(_answer(402, "error_402"), ""),
        retryable=(("GET", GENERATION, _answer(200, "failed_generation_failed")),),
        unknown_create=lambda: json_response(201, {"state": "queued"})),
)
