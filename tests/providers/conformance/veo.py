"""Veo's fake (the Gemini API's long-running operations and Files download, with its
redirect to a storage host) and its conformance facts."""

from __future__ import annotations

from typing import Any

import httpx2
from provider_fakes import (
    HTML_PAGE,
    SENTINEL_KEY,
    WalkingFake,
    fixture,
    json_response,
    video_response,
)

from conformance import maker, requester
from conformance.facts import RETRYABLE_UNREADABLE, AdapterFacts, EngineFacts, expire_flag
from reelqueue.domain.errors import ErrorClass, ErrorLabel
from reelqueue.domain.states import RemotePhase
from reelqueue.providers.adapters import veo

API = "generativelanguage.googleapis.com"
STORAGE = "video-downloads.storage.googleapis.com"
OP_NAME = "models/veo-3.1-generate-preview/operations/k3x9q2m7v1ab"
CREATE = rf"{API}/v1beta/models/[\w.-]+:predictLongRunning"
OPERATION = rf"{API}/v1beta/{OP_NAME}"
FILE = rf"{API}/v1beta/files/3h2k1l9d0a7e:download"
MODEL = rf"{API}/v1beta/models/veo-3\.1-generate-preview"


class FakeVeo(WalkingFake):
    """The Gemini API's long-running operations and Files download (with a redirect).

    Attributes:
        states: fixture names the operation walks through, one per GET.
        expire_next_download: the next file download answers 404 once (an expired file).
    """

    create_route = CREATE

    def __init__(self, states: list[str] | None = None) -> None:
        super().__init__(states, ["operation_pending", "operation_running", "operation_done"])
        self.router.add("POST", CREATE, lambda r, m: json_response(200, fixture("veo", "create")))
        self.router.add("GET", OPERATION, self._operation)
        self.router.add("GET", rf"{API}/v1beta/models/[\w.-]+",
                        lambda r, m: json_response(200, fixture("veo", "model")))
        self.router.add("GET", FILE, self._file)
        self.router.add("GET", rf"{STORAGE}/.*", self._storage)

    def _operation(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        if request.headers.get("x-goog-api-key") != SENTINEL_KEY:
            return json_response(403, fixture("veo", "error_403"))
        return json_response(200, fixture("veo", self.step()))

    def _file(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        if request.headers.get("x-goog-api-key") != SENTINEL_KEY:
            return json_response(403, fixture("veo", "error_403"))
        if self.expire_next_download:
            self.expire_next_download = False
            return json_response(404, {"error": {"code": 404, "message": "File not found.",
                                                 "status": "NOT_FOUND"}})
        return httpx2.Response(302, headers={
            "Location": f"https://{STORAGE}/3h2k1l9d0a7e.mp4?X-Goog-Signature=abc"})

    def _storage(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        assert "x-goog-api-key" not in request.headers, "key leaked to the storage host"
        return video_response()


make = maker(veo.create, "google")
request = requester("A lighthouse at dusk")


def _answer(status: int, name: str) -> Any:
    return lambda: json_response(status, fixture("veo", name))



def _gone(fake: FakeVeo) -> None:
    """The file answers 404 and so does the operation: gone for good."""
    fake.expire_next_download = True
    fake.router.script("GET", OPERATION, json_response(404, fixture("veo", "error_404")))


FACTS = AdapterFacts(
    kind="veo", provider="veo", fake=FakeVeo, make=make, request=request,
    create=CREATE, created=200, poll=OPERATION, job_id=OP_NAME, video=rf"{STORAGE}/.*",
    states=(("operation_pending", RemotePhase.QUEUED, None),
            ("operation_running", RemotePhase.RUNNING, None),
            ("operation_done", RemotePhase.SUCCEEDED, None)),
    finished="operation_done",
    failures=(
        ("operation_rai_filtered", ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
        ("operation_error_internal", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
        ("operation_error_invalid", ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
        ("operation_error_policy", ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY)),
    failed_answers=tuple(
        ({"name": OP_NAME, "done": True, "error": {"code": code, "message": message}},
         error_class, label, message.rstrip("."))
        for code, message, error_class, label in (
            (3, "Invalid value for durationSeconds.", ErrorClass.PERMANENT,
             ErrorLabel.INVALID_INPUT),
            (4, "Deadline exceeded.", ErrorClass.RETRYABLE, ErrorLabel.TIMED_OUT),
            (7, "The caller does not have permission", ErrorClass.ACCOUNT,
             ErrorLabel.KEY_REJECTED),
            (8, "Resource has been exhausted (e.g. check quota).", ErrorClass.ACCOUNT,
             ErrorLabel.RATE_LIMITED),
            (9, "This model requires billing to be enabled on the project.",
             ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS),
            (9, "User location is not supported for the API use.", ErrorClass.ACCOUNT,
             ErrorLabel.KEY_REJECTED),
            (13, "An internal error has occurred.", ErrorClass.RETRYABLE,
             ErrorLabel.PROVIDER_ERROR),
            (14, "The service is currently unavailable.", ErrorClass.RETRYABLE,
             ErrorLabel.PROVIDER_ERROR),
            (16, "Request had invalid authentication credentials.", ErrorClass.ACCOUNT,
             ErrorLabel.KEY_REJECTED),
            # Undocumented for Veo (UNKNOWN, ABORTED, DATA_LOSS): permanent, never a guess.
            (2, "Unknown error.", ErrorClass.PERMANENT, ErrorLabel.PROVIDER_ERROR),
            (10, "Aborted.", ErrorClass.PERMANENT, ErrorLabel.PROVIDER_ERROR),
            (15, "Data loss.", ErrorClass.PERMANENT, ErrorLabel.PROVIDER_ERROR))),
    create_errors=(
        (400, "error_400_key_invalid", {}, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED, None,
         False),
        (403, "error_403", {}, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED, None, False),
        (400, "error_400_invalid_argument", {}, ErrorClass.PERMANENT,
         ErrorLabel.INVALID_INPUT, None, False),
        (400, "error_400_billing", {}, ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS, None,
         False),
        (400, "error_400_region", {}, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED, None,
         False),
        (404, "error_404", {}, ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT, None, False),
        (429, "error_429", {}, ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED, 37.0, False),
        (429, "error_429", {"Retry-After": "90"}, ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED,
         90.0, False),
        (500, "error_500", {}, ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR, None, False),
        (503, "error_503", {}, ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR, None, False),
        (504, "error_504", {}, ErrorClass.RETRYABLE, ErrorLabel.TIMED_OUT, None, True)),
    no_id=({}, {"name": ""}, {"name": None}, {"name": "models/veo-3.1-generate-preview"},
           {"done": False}, {"operations": [{"name": OP_NAME}]}),
    unreadable=(HTML_PAGE, b'{"name": "models/veo', b"[]", b""),
    unreadable_as=RETRYABLE_UNREADABLE,
    no_file=(fixture("veo", "operation_no_samples"),),
    id_key="name",
    reads_as=lambda body, job_id: job_id == body["name"] and "/operations/" in job_id,
    expire=expire_flag, refresh={OPERATION: 2, FILE: 2},
    gone=(("operation_done",), _gone, ""),
    check_key=(MODEL, _answer(400, "error_400_key_invalid")),
    key_header="x-goog-api-key", echo_statuses=(400, 403, 429, 500),
    engine=EngineFacts(
        account="veo-1", prompt="A lighthouse at dusk",
        permanent=(
            # Moderation: the safety filter's count and reason.
            ("GET", OPERATION, _answer(200, "operation_rai_filtered"),
             ErrorLabel.CONTENT_POLICY, "You have not been charged"),
            # Moderation worded as an INVALID_ARGUMENT operation error.
            ("GET", OPERATION, _answer(200, "operation_error_policy"),
             ErrorLabel.CONTENT_POLICY, "usage guidelines"),
            # Bad input / an image the service could not read.
            ("GET", OPERATION, _answer(200, "operation_error_invalid"),
             ErrorLabel.INVALID_INPUT, "The input image could not be processed"),
            ("POST", CREATE, _answer(400, "error_400_invalid_argument"),
             ErrorLabel.INVALID_INPUT, "durationSeconds")),
        credits=(_answer(400, "error_400_billing"), "billing"),
        retryable=(("GET", OPERATION, _answer(200, "operation_error_internal")),),
        unknown_create=lambda: json_response(200, {"done": False}),
        no_file=(OPERATION, _answer(200, "operation_no_samples"), "")),
)
