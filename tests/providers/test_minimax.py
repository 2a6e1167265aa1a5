"""The MiniMax adapter (V1 Hailuo and V2 H3) against strict fakes of api.minimax.io.

The fakes enforce MiniMax's published schema (tests/fixtures/minimax/SOURCE.md): required
fields, allowed values and the per-model tables, and they refuse unknown fields the way the
real API does (V1: HTTP 200 with ``base_resp`` 2013; V2: HTTP 400 with an ``OaiError``
ending in ``(2013)``). Every refusal is also recorded in ``fake.rejections`` so a test can
show that the adapter's own request was accepted as sent.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from provider_fakes import (
    HTML_PAGE,
    SENTINEL_KEY,
    VIDEO_BYTES,
    Router,
    all_texts,
    echo_error,
    fixture,
    json_response,
    read_timeout,
    video_response,
)
from tests.every_key import EveryAccountKey

from reelqueue.domain.backoff import BackoffPolicy
from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.models import AccountSpec, BatchSpec, Job, JobSpec
from reelqueue.domain.states import AccountStatus, JobState, RemotePhase
from reelqueue.engine.config import EngineConfig
from reelqueue.engine.engine import Engine
from reelqueue.intake import ImportOptions, plan_import
from reelqueue.intake.estimate import UNKNOWN, quote_job
from reelqueue.providers.adapters import minimax
from reelqueue.providers.base import (
    ProviderConfig,
    ReconcileMethod,
    RenderRequest,
    SearchableProvider,
    reconcile_method,
    sends_client_token,
)
from reelqueue.providers.builtin import builtin_registry
from reelqueue.store.memory import MemoryStore

API = "api.minimax.io"
V1_TASK = "106916112212032"
V2_TASK = "424010985738629"
FILE_ID = "176844028768320"
V1_CREATE = rf"{API}/v1/video_generation"
V2_CREATE = rf"{API}/v2/video_generation"
V1_QUERY = rf"{API}/v1/query/video_generation"
V2_QUERY = rf"{API}/v2/query/video_generation/{V2_TASK}"
V2_DELETE = rf"{API}/v2/video_generation/{V2_TASK}"
FILES = rf"{API}/v1/files/retrieve"
IMAGE_URL = "https://img.example.test/first.png"
ClientFor = Callable[[Router], httpx2.AsyncClient]

# -- the official schema, as the fakes enforce it ----------------------------------------

V1_T2V_MODELS = {"MiniMax-Hailuo-2.3", "MiniMax-Hailuo-02", "T2V-01-Director", "T2V-01"}
V1_I2V_MODELS = {"MiniMax-Hailuo-2.3", "MiniMax-Hailuo-2.3-Fast", "MiniMax-Hailuo-02",
                 "I2V-01-Director", "I2V-01-live", "I2V-01"}
V1_FIELDS = {"model", "prompt", "prompt_optimizer", "fast_pretreatment", "duration",
             "resolution", "callback_url", "first_frame_image"}
# (image-to-video?, model) -> duration -> allowed resolutions (the reference's tables)
_HAILUO = {6: {"768P", "1080P"}, 10: {"768P"}}
V1_TABLE: dict[tuple[bool, str], dict[int, set[str]]] = {
    (False, "MiniMax-Hailuo-2.3"): _HAILUO, (False, "MiniMax-Hailuo-02"): _HAILUO,
    (True, "MiniMax-Hailuo-2.3"): _HAILUO, (True, "MiniMax-Hailuo-2.3-Fast"): _HAILUO,
    (True, "MiniMax-Hailuo-02"): {6: {"512P", "768P", "1080P"}, 10: {"512P", "768P"}},
}
V2_FIELDS = {"model", "content", "resolution", "duration", "ratio", "callback_url",
             "aigc_watermark"}
V2_ITEM_FIELDS = {"type", "text", "image_url", "video_url", "audio_url", "role"}
V2_ROLES = {"first_frame", "last_frame", "reference_image", "reference_video",
            "reference_audio"}
V2_RATIOS = {"adaptive", "21:9", "16:9", "4:3", "1:1", "3:4", "9:16"}


def v1_problems(body: Any) -> list[str]:
    """What MiniMax's V1 create schema says is wrong with ``body``."""
    if not isinstance(body, dict):
        return ["body is not a JSON object"]
    problems = [f"unknown field {key}" for key in body if key not in V1_FIELDS]
    image = body.get("first_frame_image")
    i2v = image is not None
    if i2v and not (isinstance(image, str) and image.startswith(("https://", "data:image/"))):
        problems.append("first_frame_image must be a public URL or a data URL")
    model = body.get("model")
    if model not in (V1_I2V_MODELS if i2v else V1_T2V_MODELS):
        problems.append(f"model {model!r} not allowed for {'i2v' if i2v else 't2v'}")
    prompt = body.get("prompt")
    if (not i2v or prompt is not None) and not (isinstance(prompt, str) and prompt
                                                and len(prompt) <= 2000):
        problems.append("prompt required (string, at most 2000 characters)")
    duration = body.get("duration", 6)
    resolution = body.get("resolution", "768P")
    if not isinstance(duration, int) or isinstance(duration, bool):
        problems.append("duration must be an integer")
    table = V1_TABLE.get((i2v, str(model)))
    if table is not None and resolution not in table.get(duration, set()):  # type: ignore[arg-type]
        problems.append(f"{model} cannot render {resolution} at {duration} s")
    return problems


def v2_problems(body: Any) -> list[str]:
    """What MiniMax's V2 create schema (VideoGenerationV2Req) says is wrong with ``body``."""
    if not isinstance(body, dict):
        return ["body is not a JSON object"]
    problems = [f"unknown field {key}" for key in body if key not in V2_FIELDS]
    problems += [f"{key} is required" for key in ("model", "content", "resolution",
                                                  "duration") if key not in body]
    if body.get("model", "MiniMax-H3") != "MiniMax-H3":
        problems.append("model must be MiniMax-H3")
    if body.get("resolution", "768P") not in ("768P", "2K"):
        problems.append("resolution must be 768P or 2K")
    duration = body.get("duration", 6)
    if not isinstance(duration, int) or isinstance(duration, bool) or not 4 <= duration <= 15:
        problems.append("duration must be an integer 4-15")
    ratio = body.get("ratio")
    if ratio is not None and ratio not in V2_RATIOS:
        problems.append(f"ratio {ratio!r} not allowed")
    content = body.get("content")
    if not isinstance(content, list) or not content:
        return [*problems, "content must be a non-empty array"]
    texts = 0
    for item in content:
        if not isinstance(item, dict):
            problems.append("content items must be objects")
            continue
        problems += [f"unknown content field {key}" for key in item if key not in V2_ITEM_FIELDS]
        kind = item.get("type")
        if kind == "text":
            text = item.get("text")
            texts += 1
            if not (isinstance(text, str) and text.strip() and len(text) <= 7000):
                problems.append("text must be non-empty, at most 7000 characters")
        elif kind == "image_url":
            image = item.get("image_url")
            if not (isinstance(image, dict) and set(image) == {"url"}
                    and isinstance(image["url"], str)
                    and image["url"].startswith(("https://", "data:image/", "mm_file://"))):
                problems.append("image_url must be {url}")
        else:
            problems.append(f"content type {kind!r} not used by this adapter")
        if "role" in item and item["role"] not in V2_ROLES:
            problems.append(f"role {item['role']!r} not allowed")
    if texts != 1:
        problems.append("content must include exactly one non-empty text item")
    if len(content) == 1 and ratio in (None, "adaptive"):
        problems.append("text-to-video needs a ratio other than adaptive")
    return problems


class FakeMiniMax:
    """Both APIs, strict. V1 tasks walk ``v1_states``, V2 tasks ``v2_states``, one query
    each; every files/retrieve signs a new download URL."""

    def __init__(self, v1_states: list[str] | None = None,
                 v2_states: list[str] | None = None) -> None:
        self.router = Router()
        self.v1_states = v1_states or ["v1_query_Preparing", "v1_query_Queueing",
                                       "v1_query_Processing", "v1_query_Success"]
        self.v2_states = v2_states or ["v2_task_queued", "v2_task_running",
                                       "v2_task_succeeded"]
        self.v1_position = self.v2_position = -1
        self.signatures = 0
        self.expired: set[str] = set()
        self.rejections: list[str] = []
        self.router.add("POST", V1_CREATE, self._v1_create)
        self.router.add("POST", V2_CREATE, self._v2_create)
        self.router.add("GET", V1_QUERY, self._v1_query)
        self.router.add("GET", V2_QUERY, self._v2_query)
        self.router.add("DELETE", V2_DELETE,
                        lambda r, m: json_response(200, fixture("minimax", "v2_delete")))
        self.router.add("GET", FILES, self._file)
        self.router.add("GET", r"(public-cdn-video-data-algeng\.oss-cn-wulanchabu\.aliyuncs\.com"
                        r"|video-product\.cdn\.minimax\.io)/.*", self._video)

    def creates(self) -> int:
        return self.router.count("POST", V1_CREATE) + self.router.count("POST", V2_CREATE)

    def queries(self) -> int:
        return self.router.count("GET", V1_QUERY) + self.router.count("GET", V2_QUERY)

    def sent(self, index: int = 0) -> Any:
        posts = [c for c in self.router.calls if c.method == "POST"]
        return json.loads(posts[index].body)

    @staticmethod
    def _authorized(request: httpx2.Request) -> bool:
        return request.headers.get("authorization") == f"Bearer {SENTINEL_KEY}"

    def _v1_create(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        if not self._authorized(request):
            return json_response(200, fixture("minimax", "v1_base_resp_1004"))
        problems = v1_problems(json.loads(request.content or b"null"))
        if problems:
            self.rejections += problems
            return json_response(200, {"task_id": "", "base_resp": {
                "status_code": 2013, "status_msg": "invalid params, " + "; ".join(problems)}})
        return json_response(200, fixture("minimax", "v1_create"))

    def _v2_create(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        if not self._authorized(request):
            return json_response(401, fixture("minimax", "v2_error_401"))
        problems = v2_problems(json.loads(request.content or b"null"))
        if problems:
            self.rejections += problems
            body = fixture("minimax", "v2_error_400")
            body["error"]["message"] = "invalid params, " + "; ".join(problems) + " (2013)"
            return json_response(400, body)
        return json_response(200, fixture("minimax", "v2_create"))

    def _v1_query(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        if not self._authorized(request):
            return json_response(200, fixture("minimax", "v1_base_resp_1004"))
        if request.url.params.get("task_id") != V1_TASK:
            return json_response(200, fixture("minimax", "v1_query_not_found"))
        self.v1_position = min(self.v1_position + 1, len(self.v1_states) - 1)
        return json_response(200, fixture("minimax", self.v1_states[self.v1_position]))

    def _v2_query(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        if not self._authorized(request):
            return json_response(401, fixture("minimax", "v2_error_401"))
        self.v2_position = min(self.v2_position + 1, len(self.v2_states) - 1)
        return json_response(200, fixture("minimax", self.v2_states[self.v2_position]))

    def _file(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        if request.url.params.get("file_id") != FILE_ID:
            return json_response(200, {"base_resp": {"status_code": 2013,
                                                     "status_msg": "invalid file_id"}})
        self.signatures += 1
        answer = fixture("minimax", "v1_file")
        answer["file"]["download_url"] = answer["file"]["download_url"].replace(
            "Signature=first", f"Signature=s{self.signatures}")
        return json_response(200, answer)

    def _video(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        if str(request.url) in self.expired:
            return httpx2.Response(403, content=b"<Error><Code>AccessDenied</Code></Error>",
                                  headers={"Content-Type": "application/xml"})
        return video_response()


def make(client: httpx2.AsyncClient) -> minimax.MiniMaxProvider:
    return minimax.create(client, ProviderConfig("mm", None, SENTINEL_KEY))


def request(prompt: str = "A desert caravan at dusk", **params: Any) -> RenderRequest:
    return RenderRequest(job_key="row-1", client_token="tok-1", prompt=prompt, params=params)


async def collect(provider: minimax.MiniMaxProvider, job_id: str, status: Any) -> bytes:
    return b"".join([chunk async for chunk in provider.download(job_id, status)])


async def finish(provider: minimax.MiniMaxProvider, job_id: str) -> Any:
    for _ in range(10):
        status = await provider.poll(job_id)
        if status.phase is RemotePhase.SUCCEEDED:
            return status
    raise AssertionError("never finished")


# -- the strict fakes refuse what the schema refuses ---------------------------------------

@pytest.mark.parametrize(("body", "words"), [
    ({"model": "MiniMax-Hailuo-2.3", "prompt": "x", "duration": 10, "resolution": "1080P"},
     "cannot render 1080P at 10"),
    ({"model": "MiniMax-Hailuo-2.3", "prompt": "x", "resolution": "512P"}, "cannot render"),
    ({"model": "MiniMax-Hailuo-2.3-Fast", "prompt": "x"}, "not allowed for t2v"),
    ({"model": "MiniMax-Hailuo-2.3", "prompt": "x", "aspect_ratio": "16:9"}, "unknown field"),
    ({"model": "MiniMax-Hailuo-2.3"}, "prompt required"),
])
def test_the_v1_fake_enforces_the_schema(body: dict[str, Any], words: str) -> None:
    assert any(words in p for p in v1_problems(body))


@pytest.mark.parametrize(("body", "words"), [
    ({"model": "MiniMax-H3", "content": [{"type": "text", "text": "x"}]}, "resolution is"),
    ({"model": "MiniMax-H3", "content": [{"type": "text", "text": "x"}], "resolution": "768P",
      "duration": 6}, "needs a ratio"),
    ({"model": "MiniMax-H3", "content": [{"type": "text", "text": "x"}], "resolution": "1080P",
      "duration": 6, "ratio": "16:9"}, "768P or 2K"),
    ({"model": "MiniMax-H3", "content": [{"type": "text", "text": "x"}], "resolution": "2K",
      "duration": 16, "ratio": "16:9"}, "4-15"),
    ({"model": "MiniMax-H3", "content": [{"type": "text", "text": "x"}], "resolution": "2K",
      "duration": 6, "ratio": "16:9", "seed": 1}, "unknown field"),
    ({"model": "MiniMax-H3-Max", "content": [{"type": "text", "text": "x"}],
      "resolution": "2K", "duration": 6, "ratio": "16:9"}, "model must be"),
])
def test_the_v2_fake_enforces_the_schema(body: dict[str, Any], words: str) -> None:
    assert any(words in p for p in v2_problems(body))


# -- rows complete: exact bodies, every documented state ----------------------------------

@pytest.mark.parametrize(("params", "body"), [
    ({"model": "MiniMax-Hailuo-2.3", "duration": 6, "resolution": "1080p"},
     {"model": "MiniMax-Hailuo-2.3", "prompt": "A desert caravan at dusk", "duration": 6,
      "resolution": "1080P"}),
    ({"model": "MiniMax-Hailuo-2.3-Fast", "duration": 10, "image": IMAGE_URL},
     {"model": "MiniMax-Hailuo-2.3-Fast", "prompt": "A desert caravan at dusk",
      "duration": 10, "first_frame_image": IMAGE_URL}),
    ({"model": "MiniMax-Hailuo-02", "resolution": "512p", "image": IMAGE_URL},
     {"model": "MiniMax-Hailuo-02", "prompt": "A desert caravan at dusk",
      "resolution": "512P", "first_frame_image": IMAGE_URL}),
])
async def test_v1_rows_complete_walking_every_state(
    client_for: ClientFor, params: dict[str, Any], body: dict[str, Any]
) -> None:
    fake = FakeMiniMax()
    provider = make(client_for(fake.router))
    job_id = await provider.submit(request(**params))
    assert job_id == f"v1:{V1_TASK}"
    seen = [await provider.poll(job_id) for _ in range(4)]
    assert [(s.phase, s.sub_status) for s in seen] == [
        (RemotePhase.QUEUED, "Preparing"), (RemotePhase.QUEUED, "Queueing"),
        (RemotePhase.RUNNING, "Processing"), (RemotePhase.SUCCEEDED, "Success")]
    assert seen[0].poll_after == minimax.POLL_SECONDS
    assert await collect(provider, job_id, seen[3]) == VIDEO_BYTES
    assert fake.sent() == body
    assert fake.rejections == []
    assert fake.creates() == 1


@pytest.mark.parametrize(("params", "body"), [
    ({"model": "MiniMax-H3"},
     {"model": "MiniMax-H3", "content": [{"type": "text", "text": "A desert caravan at dusk"}],
      "resolution": "768P", "duration": 6, "ratio": "16:9"}),
    ({"model": "MiniMax-H3", "duration": 15, "resolution": "2K", "aspect_ratio": "9:16"},
     {"model": "MiniMax-H3", "content": [{"type": "text", "text": "A desert caravan at dusk"}],
      "resolution": "2K", "duration": 15, "ratio": "9:16"}),
    ({"model": "MiniMax-H3", "duration": 4, "image": IMAGE_URL},
     {"model": "MiniMax-H3", "content": [
         {"type": "text", "text": "A desert caravan at dusk"},
         {"type": "image_url", "image_url": {"url": IMAGE_URL}, "role": "first_frame"}],
      "resolution": "768P", "duration": 4, "ratio": "adaptive"}),
])
async def test_v2_rows_complete_against_the_official_schema(
    client_for: ClientFor, params: dict[str, Any], body: dict[str, Any]
) -> None:
    fake = FakeMiniMax()
    provider = make(client_for(fake.router))
    job_id = await provider.submit(request(**params))
    assert job_id == f"v2:{V2_TASK}"
    seen = [await provider.poll(job_id) for _ in range(3)]
    assert [(s.phase, s.sub_status) for s in seen] == [
        (RemotePhase.QUEUED, "queued"), (RemotePhase.RUNNING, "running"),
        (RemotePhase.SUCCEEDED, "succeeded")]
    assert seen[2].video_url == fixture("minimax", "v2_task_succeeded")["task"]["content"]["url"]
    assert await collect(provider, job_id, seen[2]) == VIDEO_BYTES
    assert fake.sent() == body
    assert fake.rejections == []
    assert fake.creates() == 1


async def test_v2_image_from_a_file_is_sent_as_a_data_uri(
    client_for: ClientFor, tmp_path: Path
) -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(600)
    (tmp_path / "first.png").write_bytes(png)
    fake = FakeMiniMax()
    await make(client_for(fake.router)).submit(request(model="MiniMax-H3",
                                                       image=str(tmp_path / "first.png")))
    item = fake.sent()["content"][1]
    assert item["role"] == "first_frame"
    assert item["image_url"]["url"].startswith("data:image/png;base64,")
    assert fake.rejections == []


# -- states and failure reasons ------------------------------------------------------------

@pytest.mark.parametrize(
    ("job_id", "fixture_name", "phase", "error_class", "label", "words"),
    [
        # A Fail without a documented reason is not retried on a guess (invariant 11).
        (f"v1:{V1_TASK}", "v1_query_Fail", RemotePhase.FAILED, ErrorClass.PERMANENT,
         ErrorLabel.PROVIDER_ERROR, "no reason given"),
        (f"v1:{V1_TASK}", "v1_query_Fail_1000", RemotePhase.FAILED, ErrorClass.RETRYABLE,
         ErrorLabel.PROVIDER_ERROR, "unknown error"),
        (f"v1:{V1_TASK}", "v1_query_Fail_sensitive", RemotePhase.FAILED, ErrorClass.PERMANENT,
         ErrorLabel.CONTENT_POLICY, "output video sensitive"),
        (f"v2:{V2_TASK}", "v2_task_failed", RemotePhase.FAILED, ErrorClass.RETRYABLE,
         ErrorLabel.PROVIDER_ERROR, "internal error"),
        (f"v2:{V2_TASK}", "v2_task_failed_sensitive", RemotePhase.FAILED,
         ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY, "sensitive content"),
        (f"v2:{V2_TASK}", "v2_task_failed_output_sensitive", RemotePhase.FAILED,
         ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY, "sensitive content"),
        (f"v2:{V2_TASK}", "v2_task_cancelled", RemotePhase.CANCELLED, None, None, ""),
    ],
)
async def test_terminal_states(
    client_for: ClientFor, job_id: str, fixture_name: str, phase: RemotePhase,
    error_class: ErrorClass | None, label: ErrorLabel | None, words: str,
) -> None:
    fake = FakeMiniMax(v1_states=[fixture_name], v2_states=[fixture_name])
    status = await make(client_for(fake.router)).poll(job_id)
    assert status.phase is phase
    if error_class is None:
        assert status.error is None
    else:
        assert status.error is not None
        assert (status.error.error_class, status.error.label) == (error_class, label)
        assert words in str(status.error)


def test_the_v1_cli_spelling_failed_is_a_failure_too() -> None:
    assert "Failed" in minimax._V1_FAILED and "Fail" in minimax._V1_FAILED


@pytest.mark.parametrize(("job_id", "answer"), [
    (f"v1:{V1_TASK}", fixture("minimax", "v1_query_Success_no_file")),
    (f"v2:{V2_TASK}", {"task": {**fixture("minimax", "v2_task_succeeded")["task"],
                                "content": {}}}),
    (f"v2:{V2_TASK}", {"task": {**fixture("minimax", "v2_task_succeeded")["task"],
                                "content": None}}),
])
async def test_finished_without_its_file_is_still_succeeded(
    client_for: ClientFor, job_id: str, answer: dict[str, Any]
) -> None:
    """A render MiniMax finished is paid: SUCCEEDED without a link (the engine reads it
    again and then fails it, never creating it again: see the engine tests below)."""
    fake = FakeMiniMax()
    fake.router.script("GET", V2_QUERY if job_id.startswith("v2") else V1_QUERY,
                       json_response(200, answer))
    status = await make(client_for(fake.router)).poll(job_id)
    assert (status.phase, status.video_url) == (RemotePhase.SUCCEEDED, None)
    assert fake.creates() == 0


async def test_v1_file_without_a_download_link_is_still_succeeded(client_for: ClientFor) -> None:
    fake = FakeMiniMax(v1_states=["v1_query_Success"])
    fake.router.script("GET", FILES, json_response(200, {
        "file": {"file_id": int(FILE_ID)}, "base_resp": {"status_code": 0,
                                                         "status_msg": "success"}}))
    status = await make(client_for(fake.router)).poll(f"v1:{V1_TASK}")
    assert (status.phase, status.video_url) == (RemotePhase.SUCCEEDED, None)


@pytest.mark.parametrize(("job_id", "answer"), [
    (f"v1:{V1_TASK}", {"task_id": V1_TASK, "base_resp": {"status_code": 0}}),
    (f"v1:{V1_TASK}", {"status": 7}),
    (f"v2:{V2_TASK}", fixture("minimax", "v2_task_succeeded")["task"]),  # not wrapped
    (f"v2:{V2_TASK}", {"task": {"id": V2_TASK}}),
    (f"v2:{V2_TASK}", {"task": "succeeded"}),
])
async def test_a_query_answer_of_an_undocumented_shape_is_an_unknown_outcome(
    client_for: ClientFor, job_id: str, answer: dict[str, Any]
) -> None:
    fake = FakeMiniMax()
    fake.router.script("GET", V2_QUERY if job_id.startswith("v2") else V1_QUERY,
                       json_response(200, answer))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).poll(job_id)
    assert (caught.value.error_class, caught.value.label) == (ErrorClass.PERMANENT,
                                                              ErrorLabel.SUBMIT_UNKNOWN)


async def test_a_query_answered_by_a_proxy_page_is_polled_again(client_for: ClientFor) -> None:
    fake = FakeMiniMax()
    fake.router.script("GET", V2_QUERY, httpx2.Response(
        200, content=HTML_PAGE, headers={"Content-Type": "text/html"}))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).poll(f"v2:{V2_TASK}")
    assert caught.value.error_class is ErrorClass.RETRYABLE


# -- create refusals: codes through FailureRules ------------------------------------------

@pytest.mark.parametrize(
    ("code", "error_class", "label"),
    [
        (1002, ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED),
        (1039, ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED),
        (1004, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED),
        (2049, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED),
        (1008, ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS),
        (1026, ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
        (1027, ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
        (2013, ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
        (1000, ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
        (1013, ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
    ],
)
async def test_v1_http_200_with_an_error_status_code_is_a_refusal(
    client_for: ClientFor, code: int, error_class: ErrorClass, label: ErrorLabel
) -> None:
    fake = FakeMiniMax()
    fake.router.script("POST", V1_CREATE,
                       json_response(200, fixture("minimax", f"v1_base_resp_{code}")))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    assert (caught.value.error_class, caught.value.label) == (error_class, label)
    assert caught.value.body_maybe_sent is False
    assert str(code) in str(caught.value)
    assert fake.creates() == 1


async def test_an_undocumented_v1_code_is_permanent(client_for: ClientFor) -> None:
    fake = FakeMiniMax()
    fake.router.script("POST", V1_CREATE, json_response(200, {
        "task_id": "", "base_resp": {"status_code": 7777, "status_msg": "something new"}}))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    assert caught.value.error_class is ErrorClass.PERMANENT
    assert "something new" in str(caught.value)


@pytest.mark.parametrize(
    ("status", "name", "headers", "error_class", "label", "retry_after", "maybe_sent"),
    [
        (401, "v2_error_401", {}, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED, None, False),
        (402, "v2_error_402", {}, ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS, None, False),
        (422, "v2_error_422", {}, ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY, None,
         False),
        (400, "v2_error_400", {}, ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT, None, False),
        (429, "v2_error_429", {"Retry-After": "20"}, ErrorClass.ACCOUNT,
         ErrorLabel.RATE_LIMITED, 20.0, False),
        (500, "v2_error_500", {}, ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR, None,
         False),
    ],
)
async def test_v2_http_errors_are_classified_by_their_code(
    client_for: ClientFor, status: int, name: str, headers: dict[str, str],
    error_class: ErrorClass, label: ErrorLabel, retry_after: float | None, maybe_sent: bool,
) -> None:
    fake = FakeMiniMax()
    fake.router.script("POST", V2_CREATE, json_response(status, fixture("minimax", name),
                                                        headers))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request(model="MiniMax-H3"))
    error = caught.value
    assert (error.error_class, error.label) == (error_class, label)
    assert error.retry_after == retry_after
    assert error.body_maybe_sent is maybe_sent
    assert error.status_code == status
    assert fake.creates() == 1


@pytest.mark.parametrize("status", [502, 504])
async def test_a_bare_5xx_page_to_a_create_leaves_its_outcome_open(
    client_for: ClientFor, status: int
) -> None:
    """Not MiniMax's error body: something in between answered; the create may have run."""
    fake = FakeMiniMax()
    fake.router.script("POST", V2_CREATE, httpx2.Response(
        status, content=HTML_PAGE, headers={"Content-Type": "text/html"}))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request(model="MiniMax-H3"))
    assert caught.value.body_maybe_sent is True
    assert fake.creates() == 1


@pytest.mark.parametrize(("model", "pattern"), [("MiniMax-Hailuo-02", V1_CREATE),
                                                ("MiniMax-H3", V2_CREATE)])
async def test_create_timeout_is_never_resent(
    client_for: ClientFor, model: str, pattern: str
) -> None:
    fake = FakeMiniMax()
    fake.router.script("POST", pattern, read_timeout)
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request(model=model))
    assert caught.value.body_maybe_sent is True
    assert len(fake.router.calls) == 1


@pytest.mark.parametrize(("model", "pattern", "answer"), [
    ("MiniMax-Hailuo-2.3", V1_CREATE, {"base_resp": {"status_code": 0,
                                                     "status_msg": "success"}}),
    ("MiniMax-Hailuo-2.3", V1_CREATE, {"task_id": "", "base_resp": {"status_code": 0}}),
    ("MiniMax-Hailuo-2.3", V1_CREATE, {"task_id": V1_TASK,
                                       "base_resp": {"status_code": 1002}}),
    ("MiniMax-Hailuo-2.3", V1_CREATE, [V1_TASK]),
    ("MiniMax-H3", V2_CREATE, {"task": {"id": V2_TASK}}),
    ("MiniMax-H3", V2_CREATE, {"task_id": None}),
    ("MiniMax-H3", V2_CREATE, "<html>ok</html>"),
])
async def test_an_unreadable_create_answer_is_an_unknown_outcome(
    client_for: ClientFor, model: str, pattern: str, answer: Any
) -> None:
    fake = FakeMiniMax()
    if isinstance(answer, str):
        fake.router.script("POST", pattern, httpx2.Response(200, content=answer.encode()))
    else:
        fake.router.script("POST", pattern, json_response(200, answer))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request(model=model))
    error = caught.value
    assert (error.error_class, error.label) == (ErrorClass.PERMANENT,
                                                ErrorLabel.SUBMIT_UNKNOWN)
    assert error.body_maybe_sent is True
    assert fake.creates() == 1


async def test_lookup_never_says_absent(client_for: ClientFor) -> None:
    fake = FakeMiniMax()
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).lookup(request())
    assert caught.value.label is ErrorLabel.SUBMIT_UNKNOWN
    assert fake.router.calls == []


# -- property: no create answer is read as "nothing was created" --------------------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2_000_000) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["task_id", "base_resp", "status_code", "status_msg", "task", "type",
                         "error", "message", "x"]), inner, max_size=4),
    max_leaves=12)
_ANSWERS = st.one_of(_JSON.map(lambda body: json.dumps(body).encode()),
                     st.binary(max_size=40))


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=_ANSWERS, v2=st.booleans())
async def test_property_a_create_answer_is_a_task_id_a_refusal_or_unknown(
    client_for: ClientFor, raw: bytes, v2: bool
) -> None:
    """Random and malformed 2xx create answers: a job id only from a readable task_id;
    a definite refusal only from a MiniMax error code; anything else may have been
    billed (permanent, body maybe sent: the engine never resends it)."""
    fake = FakeMiniMax()
    fake.router.script("POST", V2_CREATE if v2 else V1_CREATE, httpx2.Response(200, content=raw))
    try:
        job_id = await make(client_for(fake.router)).submit(
            request(model="MiniMax-H3" if v2 else "MiniMax-Hailuo-2.3"))
    except ProviderError as error:
        if not error.body_maybe_sent:  # a refusal: only from a documented error code
            body = json.loads(raw)
            assert isinstance(body, dict)
            assert minimax._error_code(body)[0] is not None
        else:
            assert (error.error_class, error.label) == (ErrorClass.PERMANENT,
                                                        ErrorLabel.SUBMIT_UNKNOWN)
    else:
        body = json.loads(raw)
        task_id = body["task_id"]
        assert job_id == f"{'v2' if v2 else 'v1'}:{task_id}" and str(task_id).strip()
    assert fake.creates() == 1


# -- downloads, reattach, cancel, key -----------------------------------------------------

async def test_expired_download_url_is_signed_again(client_for: ClientFor) -> None:
    fake = FakeMiniMax(v1_states=["v1_query_Success"])
    provider = make(client_for(fake.router))
    job_id = f"v1:{V1_TASK}"
    status = await provider.poll(job_id)
    assert status.video_url is not None
    fake.expired.add(status.video_url)
    assert await collect(provider, job_id, status) == VIDEO_BYTES
    assert fake.signatures == 2
    assert fake.creates() == 0


async def test_expired_v2_link_is_refreshed_by_a_new_query(client_for: ClientFor) -> None:
    fake = FakeMiniMax(v2_states=["v2_task_succeeded"])
    provider = make(client_for(fake.router))
    job_id = f"v2:{V2_TASK}"
    status = await provider.poll(job_id)
    fresh = fixture("minimax", "v2_task_succeeded")
    fresh["task"]["content"]["url"] += "?fresh=1"
    fake.router.script("GET", V2_QUERY, json_response(200, fresh))
    assert status.video_url is not None
    fake.expired.add(status.video_url)
    assert await collect(provider, job_id, status) == VIDEO_BYTES
    assert fake.router.count("GET", V2_QUERY) == 2
    assert fake.creates() == 0


@pytest.mark.parametrize("model", ["MiniMax-Hailuo-2.3", "MiniMax-H3"])
async def test_new_instance_reattaches_by_job_id(client_for: ClientFor, model: str) -> None:
    fake = FakeMiniMax()
    job_id = await make(client_for(fake.router)).submit(request(model=model))
    second = make(client_for(fake.router))
    status = await finish(second, job_id)
    assert await collect(second, job_id, status) == VIDEO_BYTES
    assert fake.creates() == 1
    assert second.supports_lookup is False


async def test_cancel_deletes_only_a_queued_v2_task(client_for: ClientFor) -> None:
    fake = FakeMiniMax(v2_states=["v2_task_queued", "v2_task_succeeded"])
    provider = make(client_for(fake.router))
    await provider.cancel(f"v1:{V1_TASK}")
    assert fake.router.calls == []  # V1 has no cancel
    await provider.cancel(f"v2:{V2_TASK}")
    assert fake.router.count("DELETE", V2_DELETE) == 1
    # A finished task: DELETE would delete its record (and the paid video), so none is sent.
    await provider.cancel(f"v2:{V2_TASK}")
    assert fake.router.count("DELETE", V2_DELETE) == 1


@pytest.mark.parametrize("status", [400, 401, 422, 500])
async def test_key_never_appears_in_errors_even_when_echoed(
    client_for: ClientFor, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake = FakeMiniMax()
    fake.router.script("POST", V2_CREATE, lambda r: echo_error(status, r))
    fake.router.script("GET", V2_QUERY, lambda r: echo_error(status, r))
    provider = make(client_for(fake.router))
    for call in (provider.submit(request(model="MiniMax-H3")), provider.poll(f"v2:{V2_TASK}")):
        with pytest.raises(ProviderError) as caught:
            await call
        assert SENTINEL_KEY not in all_texts(caught.value)
    fake.router.script("POST", V1_CREATE, lambda r: json_response(200, {
        "base_resp": {"status_code": 1004, "status_msg": "bad key "
                      + r.headers["authorization"]}}))
    fake.router.script("POST", V2_CREATE, lambda r: json_response(401, {
        "type": "error", "error": {"type": "authorized_error", "message": "bad key "
                                   + r.headers["authorization"] + " (1004)"}}))
    for call in (provider.submit(request()), provider.submit(request(model="MiniMax-H3"))):
        with pytest.raises(ProviderError) as caught:
            await call
        assert caught.value.label is ErrorLabel.KEY_REJECTED
        assert SENTINEL_KEY not in all_texts(caught.value)
    assert SENTINEL_KEY not in caplog.text


async def test_check_key(client_for: ClientFor) -> None:
    fake = FakeMiniMax()
    await make(client_for(fake.router)).check_key()  # "invalid params" means the key works
    bad = minimax.create(client_for(fake.router), ProviderConfig("mm", None, "wrong-key"))
    with pytest.raises(ProviderError) as caught:
        await bad.check_key()
    assert caught.value.label is ErrorLabel.KEY_REJECTED
    assert fake.creates() == 0


# -- rows MiniMax would refuse are refused before anything is sent -------------------------

@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"model": "MiniMax-Hailuo-02", "resolution": "512p", "image": IMAGE_URL}, None),
        ({"model": "MiniMax-Hailuo-02", "resolution": "512p"}, "512p"),  # text-only
        ({"model": "MiniMax-Hailuo-2.3", "resolution": "512p", "image": IMAGE_URL}, "512p"),
        ({"model": "MiniMax-Hailuo-2.3", "resolution": "1080p", "duration": 10}, "1080p"),
        ({"model": "MiniMax-Hailuo-2.3", "resolution": "1080p", "duration": 6}, None),
        ({"model": "MiniMax-Hailuo-2.3", "duration": 8}, "6 or 10"),
        ({"model": "MiniMax-Hailuo-2.3", "resolution": "2K"}, "2K"),
        ({"model": "MiniMax-Hailuo-2.3-Fast"}, "image-to-video only"),
        ({"model": "MiniMax-Hailuo-2.3-Fast", "image": IMAGE_URL}, None),
        ({"aspect_ratio": "16:9"}, "aspect ratio"),
        ({"duration": 6}, None),
        ({"model": "MiniMax-H3", "resolution": "1080p"}, "768P or 2K"),
        ({"model": "MiniMax-H3", "resolution": "512p"}, "768P or 2K"),
        ({"model": "MiniMax-H3", "resolution": "2K", "duration": 15}, None),
        ({"model": "MiniMax-H3", "aspect_ratio": "21:9"}, None),
        ({"model": "MiniMax-H3", "aspect_ratio": "2:1"}, "aspect ratios"),
        ({"model": "MiniMax-H3", "aspect_ratio": "16:9", "image": IMAGE_URL}, "first frame"),
        ({"model": "MiniMax-H3", "duration": 6.5}, "whole number"),
    ],
)
def test_extra_validation(params: dict[str, Any], words: str | None) -> None:
    problems = minimax.extra_validation(params)
    if words is None:
        assert problems == []
    else:
        assert any(words in p.message for p in problems), problems


@pytest.mark.parametrize(("prompt", "params"), [
    ("x" * 2001, {"model": "MiniMax-Hailuo-2.3"}),
    ("   ", {"model": "MiniMax-H3"}),
    ("ok", {"model": "MiniMax-H3-Max"}),  # not in the V2 create schema's model enum
    ("ok", {"model": "MiniMax-H3", "duration": 3}),
    ("ok", {"model": "MiniMax-H3", "aspect_ratio": "adaptive"}),
])
async def test_rows_the_api_would_refuse_are_not_sent(
    client_for: ClientFor, prompt: str, params: dict[str, Any]
) -> None:
    fake = FakeMiniMax()
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request(prompt, **params))
    assert caught.value.label is ErrorLabel.INVALID_INPUT
    assert fake.router.calls == []


def test_sheet_rows_without_duration_or_ratio_cells_import_for_both_apis(
    tmp_path: Path,
) -> None:
    """The intake fills empty cells from PARAMS: those defaults must suit V1 and V2."""
    sheet = tmp_path / "sheet.csv"
    sheet.write_text("prompt,model,duration,aspect ratio\n"
                     "a,MiniMax-Hailuo-2.3,,\n"      # 6 s, no ratio
                     "b,MiniMax-H3,,\n"              # 6 s, 16:9 at send time
                     "c,MiniMax-H3,12,9:16\n"
                     "d,MiniMax-Hailuo-2.3,,16:9\n"  # V1 takes no ratio
                     "e,MiniMax-H3,5,\n", encoding="utf-8")  # 5 s not offered (see PARAMS)
    plan = plan_import(sheet, ImportOptions(provider="minimax", output_root=tmp_path / "v"),
                       now=1_790_000_000.0)
    assert [job.row_number for job in plan.jobs] == [2, 3, 4]
    assert sorted({e.row_number for e in plan.errors}) == [5, 6]
    assert [job.params.get("duration") for job in plan.jobs] == [6, 6, 12]
    assert [job.params.get("aspect_ratio") for job in plan.jobs] == [None, None, "9:16"]


def test_registered() -> None:
    info = builtin_registry().get("minimax")
    assert info.factory is minimax.create
    assert info.default_base_url == "https://api.minimax.io"
    assert builtin_registry().get("minimax").rules is minimax.extra_validation


# -- prices (platform.minimax.io/docs/guides/pricing-paygo; SOURCE.md "Prices") ---------

# The page's "Video" section, "Legacy Models": USD per whole video, as MiniMax lists them.
PAGE_V1_PRICES = [
    ("MiniMax-Hailuo-2.3-Fast", "768P", 6, 0.19),
    ("MiniMax-Hailuo-2.3-Fast", "768P", 10, 0.32),
    ("MiniMax-Hailuo-2.3-Fast", "1080P", 6, 0.33),
    ("MiniMax-Hailuo-2.3", "768P", 6, 0.28),
    ("MiniMax-Hailuo-2.3", "768P", 10, 0.56),
    ("MiniMax-Hailuo-2.3", "1080P", 6, 0.49),
    ("MiniMax-Hailuo-02", "768P", 6, 0.28),
    ("MiniMax-Hailuo-02", "768P", 10, 0.56),
    ("MiniMax-Hailuo-02", "1080P", 6, 0.49),
    ("MiniMax-Hailuo-02", "512P", 6, 0.10),
    ("MiniMax-Hailuo-02", "512P", 10, 0.15),
]


def quote(model: str, resolution: str | None, seconds: int) -> Any:
    row: dict[str, Any] = {"model": model, "duration": seconds}
    if resolution is not None:
        row["resolution"] = resolution
    return quote_job("minimax", row, None, minimax.PARAMS)


@pytest.mark.parametrize(("model", "resolution", "seconds", "usd"), PAGE_V1_PRICES)
def test_each_documented_v1_video_costs_the_pages_price(
        model: str, resolution: str, seconds: int, usd: float) -> None:
    for cell in (resolution, resolution.lower()):  # a sheet says "768p"
        priced = quote(model, cell, seconds)
        assert priced.usd == usd, (model, cell, seconds)
        assert "pricing-paygo" in priced.source and "Legacy Models" in priced.source
        assert "2026-12-06" in priced.source


@pytest.mark.parametrize(("model", "resolution", "seconds"), [
    ("MiniMax-Hailuo-2.3", "1080P", 10),       # MiniMax renders 1080P at 6 s only
    ("MiniMax-Hailuo-2.3-Fast", "1080P", 10),
    ("MiniMax-Hailuo-02", "1080P", 10),
    ("MiniMax-Hailuo-2.3", "512P", 6),         # 512P is Hailuo-02's only
    ("MiniMax-Hailuo-2.3-Fast", "512P", 10),
    ("MiniMax-Hailuo-02", "2K", 6),            # H3's resolution
    ("MiniMax-Hailuo-02", "720P", 6),
    ("MiniMax-Hailuo-2.3", "768P", 8),         # V1 renders 6 or 10 s
    ("MiniMax-Hailuo-02", None, 6),            # the intake always fills a resolution
])
def test_an_undocumented_v1_video_stays_price_unknown_never_zero(
        model: str, resolution: str | None, seconds: int) -> None:
    priced = quote(model, resolution, seconds)
    assert priced.usd is None and priced.source == ""
    assert priced.unknown.startswith(UNKNOWN)


@pytest.mark.parametrize(("resolution", "seconds", "usd"), [
    ("768P", 6, 0.48), ("2K", 10, 1.3), ("768p", 15, 1.2)])
def test_minimax_h3_keeps_its_price_per_second(resolution: str | None, seconds: int,
                                               usd: float) -> None:
    assert quote("MiniMax-H3", resolution, seconds).usd == usd  # $0.08/s, $0.13/s


def test_a_sheet_of_v1_rows_is_priced_row_by_row(tmp_path: Path) -> None:
    (tmp_path / "frame.png").write_bytes(bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082"))
    sheet = tmp_path / "sheet.csv"
    sheet.write_text("prompt,model,image,duration,resolution\n"
                     "a,MiniMax-Hailuo-2.3,,,\n"                   # filled: 768p, 6 s
                     "b,MiniMax-Hailuo-2.3-Fast,frame.png,10,\n"   # filled: 768p
                     "c,MiniMax-Hailuo-02,frame.png,6,512p\n"
                     "d,MiniMax-Hailuo-2.3,,6,1080p\n", encoding="utf-8")
    plan = plan_import(sheet, ImportOptions(provider="minimax", output_root=tmp_path / "v"),
                       now=1_790_000_000.0)
    assert not plan.errors
    prices = [plan.price_of(job) for job in plan.jobs]
    assert [p.usd if p else None for p in prices] == [0.28, 0.32, 0.10, 0.49]


# -- through the real engine (MemoryStore), counting creates at the fake ------------------

FAST = EngineConfig(retry_backoff=BackoffPolicy(0.001, 0.01), poll_backoff=BackoffPolicy(
    0.001, 0.01), poll_min_seconds=0.0005, heartbeat_seconds=0.05,
    rate_limit_default_seconds=0.05)


async def run_engine(tmp_path: Path, router: Router, params: dict[str, Any]
                     ) -> tuple[Job, MemoryStore]:
    """One row on one MiniMax account, run until nothing more can happen."""
    store = MemoryStore()
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path / "out")), 0)
    store.add_jobs(batch.id, [JobSpec("k0", "A glass city at dawn", "minimax",
                                      str(tmp_path / "out" / "0.mp4"), params=params,
                                      row_number=2)], 0)
    store.add_account(AccountSpec("mm-1", "minimax", 1, None, "ref"), 0)
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(router))
    engine = Engine(store, config=FAST, keys=EveryAccountKey(SENTINEL_KEY),
                    http_client=client, rng=random.Random(1))
    try:
        await engine.start()
        await asyncio.wait_for(engine.run_until_drained(), 20)
    finally:
        await engine.stop()
        engine.close_store()
        await client.aclose()
    return store.list_jobs()[0], store


def engine_fake() -> FakeMiniMax:
    """A fake whose tasks are finished at the first query: MiniMax's poll hint is 10 s."""
    return FakeMiniMax(v1_states=["v1_query_Success"], v2_states=["v2_task_succeeded"])


V1_TEXT = {"model": "MiniMax-Hailuo-2.3", "duration": 6, "resolution": "1080p"}
V1_IMAGE = {"model": "MiniMax-Hailuo-2.3-Fast", "duration": 10, "image": IMAGE_URL}
V2_TEXT = {"model": "MiniMax-H3", "duration": 8, "resolution": "2K", "aspect_ratio": "16:9"}
V2_IMAGE = {"model": "MiniMax-H3", "duration": 4, "image": IMAGE_URL}


@pytest.mark.parametrize("params", [V1_TEXT, V1_IMAGE, V2_TEXT, V2_IMAGE],
                         ids=["v1-text", "v1-image", "v2-text", "v2-image"])
async def test_engine_completes_text_and_image_rows(tmp_path: Path,
                                                    params: dict[str, Any]) -> None:
    fake = engine_fake()
    job, _ = await run_engine(tmp_path, fake.router, params)
    assert job.state is JobState.COMPLETED, job.error_message
    assert Path(job.output_path).read_bytes() == VIDEO_BYTES
    assert fake.rejections == []
    assert fake.creates() == 1


@pytest.mark.parametrize(("params", "route", "answer"), [
    (V1_TEXT, V1_QUERY, json_response(200, fixture("minimax", "v1_query_Success_no_file"))),
    (V2_TEXT, V2_QUERY, json_response(200, {"task": {
        **fixture("minimax", "v2_task_succeeded")["task"], "content": {}}})),
], ids=["v1-success-empty-file-id", "v2-succeeded-without-url"])
async def test_engine_finished_without_a_file_is_never_created_again(
    tmp_path: Path, params: dict[str, Any], route: str, answer: httpx2.Response
) -> None:
    fake = engine_fake()
    fake.router.add("GET", route, lambda r, m: answer)
    fake.router.routes.insert(0, fake.router.routes.pop())  # ahead of the normal query
    job, _ = await run_engine(tmp_path, fake.router, params)
    assert job.state is JobState.FAILED
    assert fake.creates() == 1
    assert fake.queries() >= 2  # read again before giving up


@pytest.mark.parametrize(("params", "method", "route", "answer", "label", "words"), [
    # Moderation at create (V1: HTTP 200 + base_resp; V2: HTTP 422).
    (V1_TEXT, "POST", V1_CREATE, json_response(200, fixture("minimax", "v1_base_resp_1026")),
     ErrorLabel.CONTENT_POLICY, "input new_sensitive"),
    (V2_TEXT, "POST", V2_CREATE, json_response(422, fixture("minimax", "v2_error_422")),
     ErrorLabel.CONTENT_POLICY, "sensitive content (1026)"),
    # Moderation of the finished render.
    (V1_IMAGE, "GET", V1_QUERY, json_response(200, fixture("minimax",
                                                           "v1_query_Fail_sensitive")),
     ErrorLabel.CONTENT_POLICY, "output video sensitive"),
    (V2_IMAGE, "GET", V2_QUERY, json_response(200, fixture("minimax",
                                                           "v2_task_failed_sensitive")),
     ErrorLabel.CONTENT_POLICY, "sensitive content"),
    # Bad input (e.g. an unreachable first frame is refused as invalid params).
    (V1_IMAGE, "POST", V1_CREATE, json_response(200, fixture("minimax", "v1_base_resp_2013")),
     ErrorLabel.INVALID_INPUT, "invalid params"),
    (V2_IMAGE, "POST", V2_CREATE, json_response(400, fixture("minimax", "v2_error_400")),
     ErrorLabel.INVALID_INPUT, "invalid params"),
], ids=["v1-moderation", "v2-moderation", "v1-output-moderation", "v2-output-moderation",
        "v1-bad-input", "v2-bad-input"])
async def test_engine_documented_permanent_failure_one_create_then_failed(
    tmp_path: Path, params: dict[str, Any], method: str, route: str, answer: httpx2.Response,
    label: ErrorLabel, words: str,
) -> None:
    fake = engine_fake()
    fake.router.add(method, route, lambda r, m: answer)
    fake.router.routes.insert(0, fake.router.routes.pop())  # every time, not just once
    job, _ = await run_engine(tmp_path, fake.router, params)
    assert job.state is JobState.FAILED
    assert job.error_label == label.value
    assert words in (job.error_message or "")
    assert fake.creates() == 1


@pytest.mark.parametrize(("params", "route", "answer"), [
    (V1_TEXT, V1_CREATE, json_response(200, fixture("minimax", "v1_base_resp_1008"))),
    (V2_TEXT, V2_CREATE, json_response(402, fixture("minimax", "v2_error_402"))),
], ids=["v1", "v2"])
async def test_engine_out_of_credits_pauses_the_account_and_creates_nothing_more(
    tmp_path: Path, params: dict[str, Any], route: str, answer: httpx2.Response
) -> None:
    """Out of credits is account-level (DESIGN.md invariant 6): the row waits, unfailed."""
    fake = engine_fake()
    fake.router.add("POST", route, lambda r, m: answer)
    fake.router.routes.insert(0, fake.router.routes.pop())
    job, store = await run_engine(tmp_path, fake.router, params)
    assert job.state is JobState.QUEUED
    assert fake.creates() == 1
    account = store.get_account("mm-1")
    assert account is not None and account.status is AccountStatus.OUT_OF_CREDITS
    assert "insufficient balance" in (account.status_detail or "")


@pytest.mark.parametrize(("params", "route", "answer"), [
    (V1_TEXT, V1_QUERY, json_response(200, fixture("minimax", "v1_query_Fail_1000"))),
    (V2_TEXT, V2_QUERY, json_response(200, fixture("minimax", "v2_task_failed"))),
], ids=["v1", "v2"])
async def test_engine_documented_retryable_failure_is_rendered_again(
    tmp_path: Path, params: dict[str, Any], route: str, answer: httpx2.Response
) -> None:
    fake = engine_fake()
    fake.router.script("GET", route, answer)
    job, _ = await run_engine(tmp_path, fake.router, params)
    assert job.state is JobState.COMPLETED, job.error_message
    assert fake.creates() == 2


@pytest.mark.parametrize(("params", "route", "answer"), [
    (V1_TEXT, V1_CREATE, {"base_resp": {"status_code": 0, "status_msg": "success"}}),
    (V2_TEXT, V2_CREATE, {"id": V2_TASK}),
], ids=["v1", "v2"])
async def test_engine_unreadable_create_answer_is_unknown_without_a_second_create(
    tmp_path: Path, params: dict[str, Any], route: str, answer: dict[str, Any]
) -> None:
    fake = engine_fake()
    fake.router.script("POST", route, json_response(200, answer))
    job, _ = await run_engine(tmp_path, fake.router, params)
    # unknown is not a failure: parked for the user (issue 19)
    assert job.state is JobState.PARKED and job.error_class == "unknown"
    assert job.error_label == ErrorLabel.SUBMIT_UNKNOWN.value
    assert fake.creates() == 1


# -- reconciliation: NONE (docs/reconciliation/minimax.md) --------------------------------

# Every field of the documented V2 list's VideoTask (tests/fixtures/minimax/SOURCE.md, V2L).
V2_TASK_FIELDS = {"id", "model", "status", "error", "created_at", "updated_at", "content",
                  "resolution", "duration", "usage", "ratio", "task_type", "modality"}


def test_minimax_is_not_searched_and_keeps_no_client_token(client_for: ClientFor) -> None:
    provider = make(client_for(Router()))
    assert getattr(provider, "supports_search", False) is False
    assert not isinstance(provider, SearchableProvider)
    assert reconcile_method(provider) is ReconcileMethod.NONE
    assert sends_client_token(provider) is False


def test_the_v2_list_echoes_neither_prompt_nor_image() -> None:
    """Why MiniMax is NONE: what the V2 list says of a task is the same for any prompt."""
    page = fixture("minimax", "v2_list_page")
    assert isinstance(page["total"], int)

    def keys(value: Any) -> set[str]:
        if isinstance(value, dict):
            return set(value) | {k for v in value.values() for k in keys(v)}
        if isinstance(value, list):
            return {k for v in value for k in keys(v)}
        return set()

    for item in page["items"]:
        assert set(item) <= V2_TASK_FIELDS
        assert set(item.get("content") or {}) <= {"url"}  # the output, not the input
        assert not keys(item) & {"text", "prompt", "image_url", "first_frame_image"}
