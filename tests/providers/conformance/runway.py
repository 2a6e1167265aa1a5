"""Runway's fake (its task API, from the documented shapes) and its conformance facts."""

from __future__ import annotations

from typing import Any

import httpx2
from provider_fakes import WalkingFake, fixture, json_response, video_response

from conformance import maker, requester
from conformance.facts import RETRYABLE_UNREADABLE, AdapterFacts, EngineFacts, PollShape, expire_url
from reelqueue.domain.errors import ErrorClass, ErrorLabel
from reelqueue.domain.states import RemotePhase
from reelqueue.providers.adapters import runway

API = "api.dev.runwayml.com"
CDN = "dnznrvs05pmza.cloudfront.net"
TASK_ID = "17f20503-6c24-4c16-946b-35dbbce2af2f"
CREATE = rf"{API}/v1/(text|image)_to_video"
TASK = rf"{API}/v1/tasks/{TASK_ID}"


class FakeRunway(WalkingFake):
    """Runway's task API: every GET of a task moves it one state further along ``states``.

    Attributes:
        router: the MockTransport handler (and its request log).
        states: fixture names a task walks through.
        link_generation: bumped on every GET of a finished task (Runway re-signs links).
        expired: output links that now answer 403.
    """

    create_route = CREATE

    def __init__(self, states: list[str] | None = None) -> None:
        super().__init__(states, ["task_pending", "task_throttled", "task_running",
                                  "task_succeeded"])
        self.link_generation = 0
        self.expired: set[str] = set()
        self.router.add("POST", CREATE, lambda r, m: json_response(200, fixture("runway",
                                                                                "create")))
        self.router.add("GET", rf"{API}/v1/tasks/(?P<id>[\w-]+)", self._get)
        self.router.add("DELETE", rf"{API}/v1/tasks/(?P<id>[\w-]+)",
                        lambda r, m: httpx2.Response(204))
        self.router.add("GET", rf"{API}/v1/organization",
                        lambda r, m: json_response(200, fixture("runway", "organization")))
        self.router.add("GET", rf"{CDN}/.*", self._video)

    def _get(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        if match["id"] != TASK_ID:
            return json_response(404, {"error": "Task not found"})
        task = fixture("runway", self.step())
        if task["status"] == "SUCCEEDED":
            self.link_generation += 1
            task["output"] = [f"https://{CDN}/{TASK_ID}/video.mp4?_jwt=gen{self.link_generation}"]
        return json_response(200, task)

    def _video(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        if str(request.url) in self.expired:
            return httpx2.Response(403, content=b"<Error><Code>AccessDenied</Code></Error>",
                                  headers={"Content-Type": "application/xml"})
        return video_response()


make = maker(runway.create, "studio")
request = requester("A red fox in snow")


def _answer(status: int, name: str) -> Any:
    return lambda: json_response(status, fixture("runway", name))



def _gone(fake: FakeRunway) -> None:
    """The link is refused and the task is deleted: gone for good."""
    fake.router.script("GET", rf"{CDN}/.*", httpx2.Response(403))
    fake.router.script("GET", TASK, json_response(404, {"error": "Task not found"}))


FACTS = AdapterFacts(
    kind="runway", provider="runway", fake=FakeRunway, make=make, request=request,
    create=CREATE, created=200, poll=TASK, job_id=TASK_ID, video=rf"{CDN}/.*",
    states=(("task_pending", RemotePhase.QUEUED, "PENDING"),
            ("task_throttled", RemotePhase.QUEUED, "THROTTLED"),
            ("task_running", RemotePhase.RUNNING, "RUNNING"),
            ("task_succeeded", RemotePhase.SUCCEEDED, "SUCCEEDED"),
            ("task_cancelled", RemotePhase.CANCELLED, None)),
    finished="task_succeeded",
    failures=(
        ("task_failed_safety", ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
        ("task_failed_safety_output", ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
        ("task_failed_preprocessing", ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
        ("task_failed_bad_output", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
        # No retry advice in the docs: permanent, never rendered again on a guess.
        ("task_failed_preprocessing_internal", ErrorClass.PERMANENT,
         ErrorLabel.PROVIDER_ERROR)),
    failed_answers=tuple(
        ({**fixture("runway", "task_failed_bad_output"), "failureCode": code}, error_class,
         label, "") for code, error_class, label in (
            ("INTERNAL.TIMEOUT", ErrorClass.PERMANENT, ErrorLabel.PROVIDER_ERROR),
            ("INPUT_PREPROCESSING.IMAGE", ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
            ("SAFETYNET", ErrorClass.PERMANENT, ErrorLabel.PROVIDER_ERROR),
            (None, ErrorClass.PERMANENT, ErrorLabel.PROVIDER_ERROR),
            (42, ErrorClass.PERMANENT, ErrorLabel.PROVIDER_ERROR))),
    create_errors=(
        (401, "error_401", {}, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED, None, False),
        (400, "error_400_validation", {}, ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT,
         None, False),
        (400, "error_400_credits", {}, ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS, None,
         False),
        (429, "error_429_daily", {"Retry-After": "120"}, ErrorClass.ACCOUNT,
         ErrorLabel.RATE_LIMITED, 120.0, False),
        (429, "error_429_daily", {}, ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED,
         runway.DAILY_CAP_COOLDOWN, False),
        (502, "error_503", {}, ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR, None, False),
        (503, "error_503", {"Retry-After": "7"}, ErrorClass.RETRYABLE,
         ErrorLabel.PROVIDER_ERROR, 7.0, False),
        (504, "error_503", {}, ErrorClass.RETRYABLE, ErrorLabel.TIMED_OUT, None, True)),
    no_id=({}, {"id": ""}, {"id": None}, {"status": "PENDING"}, {"task": {"id": TASK_ID}},
           {"id": [TASK_ID]}),
    unreadable=(b"<html>oops</html>",),
    unreadable_as=RETRYABLE_UNREADABLE,
    no_state=({}, {"id": TASK_ID}, {"status": None}, {"status": 1},
              {"task": {"status": "SUCCEEDED"}}),
    no_file=({**fixture("runway", "task_succeeded"), "output": []},),
    id_key="id", reads_as=lambda body, job_id: job_id == str(body["id"]),
    poll_shape=PollShape(
        states=("PENDING", "THROTTLED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"),
        keys=("id", "status", "output", "failure", "failureCode", "progress", "x"),
        state_key="status", ending=("FAILED", "CANCELLED")),
    expire=expire_url, refresh={TASK: 2},
    gone=(("task_succeeded",), _gone, ""),
    check_key=(rf"{API}/v1/organization", _answer(401, "error_401")),
    cancel=("DELETE", TASK), echo_statuses=(400, 401, 403, 429, 500),
    engine=EngineFacts(
        account="studio", prompt="A red fox in snow",
        permanent=(
            # moderation (the raw moderation text is not shown; the code is)
            ("GET", TASK, _answer(200, "task_failed_safety"), ErrorLabel.CONTENT_POLICY,
             "SAFETY.INPUT.TEXT"),
            ("GET", TASK, _answer(200, "task_failed_safety_output"),
             ErrorLabel.CONTENT_POLICY, "SAFETY.OUTPUT.VIDEO"),
            ("POST", CREATE, _answer(400, "error_400_validation"), ErrorLabel.INVALID_INPUT,
             "Validation of body failed"),
            # unreachable image (troubleshooting: "Failed to fetch asset", a 400 on create)
            ("POST", CREATE, _answer(400, "error_400_asset"), ErrorLabel.INVALID_INPUT,
             "Failed to fetch asset")),
        credits=(_answer(400, "error_400_credits"), ""),
        retryable=(("GET", TASK, _answer(200, "task_failed_bad_output")),),
        unknown_create=lambda: json_response(200, {"status": "PENDING"})),
)
