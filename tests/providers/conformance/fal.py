"""fal's fake (its queue on queue.fal.run: status, then the result with the video link)
and its conformance facts."""

from __future__ import annotations

from typing import Any

import httpx2
from provider_fakes import SENTINEL_KEY, WalkingFake, fixture, json_response

from conformance import maker, requester
from conformance.facts import RETRYABLE_UNREADABLE, AdapterFacts, EngineFacts, expire_flag
from reelqueue.domain.errors import ErrorClass, ErrorLabel
from reelqueue.domain.states import RemotePhase
from reelqueue.providers.adapters import fal
from reelqueue.providers.base import LostCreateSearch

API = "queue.fal.run"
CDN = "v3.fal.media"
REQUEST_ID = "764cabcf-b745-4b3e-ae38-1200304cf45b"
JOB_ID = f"fal-ai/veo3.1/requests/{REQUEST_ID}"
SUBMIT = rf"{API}/fal-ai/veo3\.1(/fast)?(/image-to-video)?"
STATUS = rf"{API}/fal-ai/veo3\.1/requests/{REQUEST_ID}/status"
RESULT = rf"{API}/fal-ai/veo3\.1/requests/{REQUEST_ID}"


class FakeFal(WalkingFake):
    """fal's queue: status walks ``states`` one GET at a time; the result gives the video."""

    create_route = SUBMIT

    def __init__(self, states: list[str] | None = None) -> None:
        super().__init__(states, ["status_in_queue", "status_in_progress", "status_completed"])
        self.router.add("POST", SUBMIT, lambda r, m: json_response(200, fixture("fal", "submit")))
        self.router.add("GET", STATUS, self._status)
        self.router.add("GET", RESULT, lambda r, m: json_response(200, fixture("fal", "result")))
        self.router.add("PUT", rf"{RESULT}/cancel",
                        lambda r, m: json_response(202, {"status": "CANCELLATION_REQUESTED"}))
        self.router.add("GET", rf"{API}/fal-ai/veo3\.1/requests/0+-0+-0+-0+-0+/status",
                        lambda r, m: json_response(404, fixture("fal", "error_404_request")))
        self.router.add("GET", rf"{CDN}/.*", self.video(lambda: httpx2.Response(
            404, content=b"Not Found", headers={"Content-Type": "text/plain"})))

    def _status(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        if request.headers.get("authorization") != f"Key {SENTINEL_KEY}":
            return json_response(401, fixture("fal", "error_401"))
        return json_response(200, fixture("fal", self.step()))


make = maker(fal.create, "fal-1")
request = requester("A glass city")


def status_failure(error_type: str, text: str) -> dict[str, Any]:
    """A finished request whose status reports ``error_type``."""
    body: dict[str, Any] = fixture("fal", "status_completed_error")
    body.update(error=text, error_type=error_type)
    return body


def _answer(status: int, name: str) -> Any:
    return lambda: json_response(status, fixture("fal", name))


FACTS = AdapterFacts(
    kind="fal", provider="fal", fake=FakeFal, make=make, request=request,
    create=SUBMIT, created=200, poll=STATUS, job_id=JOB_ID, video=rf"{CDN}/.*",
    states=(("status_in_queue", RemotePhase.QUEUED, "IN_QUEUE (position 3)"),
            ("status_in_progress", RemotePhase.RUNNING, None),
            ("status_completed", RemotePhase.SUCCEEDED, None)),
    finished="status_completed",
    failures=(("status_completed_error", ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),),
    failed_answers=tuple(
        (status_failure(error_type, "it went wrong"), error_class, label, "it went wrong")
        for error_type, error_class, label in (
            ("content_policy_violation", ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
            ("image_load_error", ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
            ("generation_timeout", ErrorClass.RETRYABLE, ErrorLabel.TIMED_OUT),
            ("downstream_service_unavailable", ErrorClass.RETRYABLE,
             ErrorLabel.PROVIDER_ERROR),
            ("something_new_2027", ErrorClass.PERMANENT, ErrorLabel.PROVIDER_ERROR))),
    create_errors=(
        (401, "error_401", {}, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED, None, False),
        (403, "error_403_locked_balance", {}, ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS,
         None, False),
        (403, "error_403_admin_lock", {}, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED, None,
         False),
        (422, "error_422_validation", {}, ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT,
         None, False),
        (422, "error_422_content_policy", {}, ErrorClass.PERMANENT,
         ErrorLabel.CONTENT_POLICY, None, False),
        (429, "error_429", {"Retry-After": "15"}, ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED,
         15.0, False),
        (500, "error_500", {}, ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR, None, False),
        (504, "error_500", {}, ErrorClass.RETRYABLE, ErrorLabel.TIMED_OUT, None, True)),
    no_id=({}, {"request_id": ""}, {"request_id": None}, {"request_id": {"id": "x"}},
           {"status": "IN_QUEUE", "queue_position": 0}),
    unreadable=(b"<html>502</html>", b'{"request_id": "76', b"[]", b'["764cabcf"]', b""),
    unreadable_as=RETRYABLE_UNREADABLE,
    id_key="request_id",
    reads_as=lambda body, job_id: job_id == f"fal-ai/veo3.1/requests/{body['request_id']}",
    expire=expire_flag, refresh={RESULT: 2},
    check_key=(rf"{API}/fal-ai/veo3\.1/requests/.*/status", _answer(401, "error_401")),
    lost_create=LostCreateSearch.SEARCH_FINDS_ONLY, cancel=("PUT", rf"{RESULT}/cancel"),
    echo_statuses=(400, 401, 403, 422, 500),
    engine=EngineFacts(
        account="fal-1", prompt="A glass city",
        permanent=(
            # Moderation: the status of the finished request says so.
            ("GET", STATUS, lambda: json_response(200, status_failure(
                "content_policy_violation", "flagged by a content checker")),
             ErrorLabel.CONTENT_POLICY, "flagged by a content checker"),
            # Bad input: the create is refused with a validation error.
            ("POST", SUBMIT, _answer(422, "error_422_validation"), ErrorLabel.INVALID_INPUT,
             "Input should be '4s', '6s' or '8s'"),
            # Unreachable image: the result read reports the image could not be loaded.
            ("GET", RESULT, lambda: json_response(422, {"detail": [{
                "loc": ["body", "image_url"], "msg": "Failed to load the image from the URL",
                "type": "image_load_error",
                "url": "https://docs.fal.ai/errors#image_load_error"}]}),
             ErrorLabel.INVALID_INPUT, "Failed to load the image")),
        credits=(_answer(403, "error_403_locked_balance"), "Exhausted balance"),
        retryable=(("GET", STATUS, lambda: json_response(200, status_failure(
            "generation_timeout", "The generation timed out"))),),
        unknown_create=lambda: json_response(200, {"queue_position": 0}),
        no_file=(RESULT, lambda: json_response(200, {"video": {}}), "")),
)
