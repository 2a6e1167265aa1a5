"""Luma Dream Machine's (legacy) fake (the create only at ``POST /generations/video``,
lumaai-python 1.18.1 ``api.md``; failures worded as docs.lumalabs.ai/docs/errors) and its
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
    PollShape,
    expire_flag,
)
from reelqueue.domain.errors import ErrorClass, ErrorLabel
from reelqueue.domain.states import RemotePhase
from reelqueue.providers.adapters import luma_legacy
from reelqueue.providers.base import LostCreateSearch

API = "api.lumalabs.ai"
CDN = "storage.cdn-luma.com"
GEN_ID = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
CREATE = rf"{API}/dream-machine/v1/generations/video"
GENERATION = rf"{API}/dream-machine/v1/generations/{GEN_ID}"


class FakeDreamMachine(WalkingFake):
    create_route = CREATE

    def __init__(self, states: list[str] | None = None) -> None:
        super().__init__(states, ["generation_queued", "generation_dreaming",
                                  "generation_completed"])
        self.router.add("POST", CREATE,
                        lambda r, m: json_response(201, fixture("luma_legacy", "create")))
        self.router.add("GET", GENERATION, self._get)
        self.router.add("GET", rf"{API}/dream-machine/v1/credits",
                        lambda r, m: json_response(200, fixture("luma_legacy", "credits")))
        self.router.add("GET", rf"{CDN}/.*", self.video())

    def _get(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        return json_response(200, fixture("luma_legacy", self.step()))


make = maker(luma_legacy.create, "dm")
request = requester("A koi pond")


def _answer(status: int, name: str) -> Any:
    return lambda: json_response(status, fixture("luma_legacy", name))


FACTS = AdapterFacts(
    kind="luma-legacy", provider="luma_legacy", fake=FakeDreamMachine, make=make,
    request=request, create=CREATE, created=201, poll=GENERATION, job_id=GEN_ID,
    video=rf"{CDN}/.*",
    states=(("generation_queued", RemotePhase.QUEUED, "queued"),
            ("generation_dreaming", RemotePhase.RUNNING, "dreaming"),
            ("generation_completed", RemotePhase.SUCCEEDED, "completed")),
    finished="generation_completed",
    failures=(
        ("failed_blacklisted_words", ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
        ("failed_prompt_moderation", ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
        ("failed_frame_moderation", ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
        ("failed_input_frames", ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
        ("failed_prompt_processing", ErrorClass.PERMANENT, ErrorLabel.PROVIDER_ERROR),
        ("failed_job", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
        # Not on Luma's list: permanent (it was retried on a keyword guess before).
        ("failed_internal", ErrorClass.PERMANENT, ErrorLabel.PROVIDER_ERROR)),
    create_errors=(
        (401, "error_401", {}, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED, None, False),
        (400, "error_400", {}, ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT, None, False),
        (400, "error_400_credits", {}, ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS, None,
         False),
        (400, "error_400_moderation", {}, ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY,
         None, False),
        (429, "error_429", {"Retry-After": "12"}, ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED,
         12.0, False),
        (500, "error_500", {}, ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR, None, False),
        (504, "error_500", {}, ErrorClass.RETRYABLE, ErrorLabel.TIMED_OUT, None, True)),
    no_id=({}, {"id": ""}, {"id": None}, {"state": "queued"}, {"generation": {"id": GEN_ID}},
           {"id": {"x": 1}}),
    unreadable=(b"<html>ok</html>", b'{"id": "9a8b', b"[]", b""),
    unreadable_as=RETRYABLE_UNREADABLE,
    no_state=({}, {"id": GEN_ID}, {"state": None}, {"state": 2},
              {"generation": {"state": "completed"}}),
    no_file=({**fixture("luma_legacy", "generation_completed"), "assets": None},),
    id_key="id", reads_as=lambda body, job_id: job_id == str(body["id"]),
    poll_shape=PollShape(
        states=("queued", "dreaming", "completed", "failed"),
        keys=("id", "state", "assets", "failure_reason", "generation_type", "x"),
        state_key="state", ending=("failed",)),
    expire=expire_flag, refresh={GENERATION: 2},
    check_key=(rf"{API}/dream-machine/v1/credits", _answer(401, "error_401")),
    lost_create=LostCreateSearch.SEARCH,
    engine=EngineFacts(
        account="dm", prompt="A koi pond",
        permanent=(
            # moderation: each of these was rendered three times before (issue 10, item 3)
            ("GET", GENERATION, _answer(200, "failed_blacklisted_words"),
             ErrorLabel.CONTENT_POLICY, "Contains blacklisted words"),
            ("GET", GENERATION, _answer(200, "failed_prompt_moderation"),
             ErrorLabel.CONTENT_POLICY, "Advanced prompt moderation failed"),
            # unreachable image
            ("GET", GENERATION, _answer(200, "failed_input_frames"),
             ErrorLabel.INVALID_INPUT, "Failed to read user input frames"),
            # bad input refused by the create
            ("POST", CREATE, _answer(400, "error_400_prompt_short"), ErrorLabel.INVALID_INPUT,
             "Prompt is too short")),
        credits=(_answer(400, "error_400_credits"), ""),
        retryable=(("GET", GENERATION, _answer(200, "failed_job")),),
        unknown_create=lambda: json_response(201, {"state": "queued"})),
)
