"""Replicate's fake (predictions on api.replicate.com, files on replicate.delivery) and its
conformance facts."""

from __future__ import annotations

from typing import Any

import httpx2
from provider_fakes import WalkingFake, fixture, json_response

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
from reelqueue.providers.adapters import replicate
from reelqueue.providers.base import LostCreateSearch

API = "api.replicate.com"
CDN = "replicate.delivery"
PRED_ID = "ufawqhfynnddngldkgtslldrkq"
CREATE = rf"{API}/v1/models/google/veo-3\.1[\w-]*/predictions"
PREDICTION = rf"{API}/v1/predictions/{PRED_ID}"


class FakeReplicate(WalkingFake):
    create_route = CREATE

    def __init__(self, states: list[str] | None = None) -> None:
        super().__init__(states, ["prediction_starting", "prediction_processing",
                                  "prediction_succeeded"])
        self.router.add("POST", CREATE,
                        lambda r, m: json_response(201, fixture("replicate", "create")))
        self.router.add("GET", PREDICTION, self._get)
        self.router.add("POST", rf"{PREDICTION}/cancel",
                        lambda r, m: json_response(200, fixture("replicate",
                                                                "prediction_canceled")))
        self.router.add("GET", rf"{API}/v1/account",
                        lambda r, m: json_response(200, fixture("replicate", "account")))
        self.router.add("GET", rf"{CDN}/.*", self.video())

    def _get(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        return json_response(200, fixture("replicate", self.step()))


make = maker(replicate.create, "rep")
request = requester("A lantern festival")


def _answer(status: int, name: str) -> Any:
    return lambda: json_response(status, fixture("replicate", name))


def _failed(text: str | None) -> dict[str, Any]:
    body: dict[str, Any] = fixture("replicate", "prediction_failed_sensitive")
    body["error"] = text
    return body


FACTS = AdapterFacts(
    kind="replicate", provider="replicate", fake=FakeReplicate, make=make, request=request,
    create=CREATE, created=201, poll=PREDICTION, job_id=PRED_ID, video=rf"{CDN}/.*",
    states=(("prediction_starting", RemotePhase.QUEUED, "starting"),
            ("prediction_processing", RemotePhase.RUNNING, "processing"),
            ("prediction_succeeded", RemotePhase.SUCCEEDED, "succeeded"),
            ("prediction_canceled", RemotePhase.CANCELLED, None)),
    finished="prediction_succeeded",
    failures=(
        ("prediction_failed_sensitive", ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
        ("prediction_failed_interrupted", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
        ("prediction_aborted", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR)),
    failed_answers=tuple((_failed(text), error_class, label, "") for text, error_class, label in (
        ("The input or output was flagged as sensitive. (E005)", ErrorClass.PERMANENT,
         ErrorLabel.CONTENT_POLICY),
        ("E1001: Model out of memory", ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
        ("E1000: An unexpected error occurred.", ErrorClass.RETRYABLE,
         ErrorLabel.PROVIDER_ERROR),
        ("E6716: Timeout starting prediction", ErrorClass.RETRYABLE, ErrorLabel.TIMED_OUT),
        ("CUDA error: device-side assert triggered", ErrorClass.PERMANENT,
         ErrorLabel.PROVIDER_ERROR),
        (None, ErrorClass.PERMANENT, ErrorLabel.PROVIDER_ERROR))),
    create_errors=(
        (401, "error_401", {}, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED, None, False),
        (402, "error_402", {}, ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS, None, False),
        (422, "error_422", {}, ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT, None, False),
        (404, "error_404", {}, ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT, None, False),
        (429, "error_429", {}, ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED, 30.0, False),
        (429, "error_429", {"Retry-After": "9"}, ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED,
         9.0, False),
        (500, "error_500", {}, ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR, None, False),
        (504, "error_500", {}, ErrorClass.RETRYABLE, ErrorLabel.TIMED_OUT, None, True)),
    no_id=({}, {"id": ""}, {"id": None}, {"status": "starting"},
           {"prediction": {"id": PRED_ID}}),
    unreadable=(b"<html>ok</html>", b'{"id": "ufaw', b"[]", b""),
    unreadable_as=RETRYABLE_UNREADABLE,
    no_file=({**fixture("replicate", "prediction_succeeded"), "output": None},),
    id_key="id", reads_as=lambda body, job_id: job_id == str(body["id"]),
    expire=expire_flag, refresh={PREDICTION: 2},
    gone=(("prediction_succeeded", "prediction_succeeded_removed"), gone_flag, "one hour"),
    check_key=(rf"{API}/v1/account", _answer(401, "error_401")),
    lost_create=LostCreateSearch.SEARCH, cancel=("POST", rf"{PREDICTION}/cancel"),
    echo_statuses=(400, 401, 422, 429, 500),
    engine=EngineFacts(
        account="rep", prompt="A lantern festival",
        permanent=(
            ("GET", PREDICTION, _answer(200, "prediction_failed_sensitive"),
             ErrorLabel.CONTENT_POLICY, "flagged as sensitive"),
            ("POST", CREATE, _answer(422, "error_422"), ErrorLabel.INVALID_INPUT,
             "duration must be one of the following"),
            ("GET", PREDICTION, _answer(200, "prediction_failed_image"),
             ErrorLabel.PROVIDER_ERROR, "Failed to load image")),
        credits=(_answer(402, "error_402"), ""),
        retryable=(("GET", PREDICTION, _answer(200, "prediction_failed_unknown_e1000")),),
        unknown_create=lambda: json_response(201, {"status": "starting"}),
        no_file=(PREDICTION, lambda: json_response(200, {
            **fixture("replicate", "prediction_succeeded"), "output": None}),
            "not created again")),
)
