"""MiniMax's strict fakes of api.minimax.io (V1 Hailuo and V2 H3) and their conformance
facts, one table per API.

The fakes enforce MiniMax's published schema (tests/fixtures/minimax/SOURCE.md): required
fields, allowed values and the per-model tables, and they refuse unknown fields the way the
real API does (V1: HTTP 200 with ``base_resp`` 2013; V2: HTTP 400 with an ``OaiError``
ending in ``(2013)``). Every refusal is also recorded in ``fake.rejections`` so a test can
show that the adapter's own request was accepted as sent.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
from provider_fakes import HTML_PAGE, SENTINEL_KEY, Router, fixture, json_response, video_response

from conformance import maker, requester
from conformance.facts import AdapterFacts, EngineFacts, expire_url
from reelqueue.domain.errors import ErrorClass, ErrorLabel
from reelqueue.domain.states import RemotePhase
from reelqueue.providers.adapters import minimax

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

# -- the official schema, as the fakes enforce it ----------------------------------------

_SCHEMA = fixture("minimax", "schema")  # the reference's enums and tables (SOURCE.md)
V1_T2V_MODELS, V1_I2V_MODELS, V1_FIELDS = (set(_SCHEMA["v1"][k]) for k in (
    "t2v_models", "i2v_models", "fields"))
# (image-to-video?, model) -> duration -> allowed resolutions (the reference's tables)
V1_TABLE: dict[tuple[bool, str], dict[int, set[str]]] = {
    (row["i2v"], row["model"]): {int(d): set(row[d]) for d in ("6", "10")}
    for row in _SCHEMA["v1"]["resolutions_by_duration"]}
V2_FIELDS, V2_ITEM_FIELDS, V2_ROLES, V2_RATIOS = (set(_SCHEMA["v2"][k]) for k in (
    "fields", "item_fields", "roles", "ratios"))


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


make = maker(minimax.create, "mm")
request = requester("A desert caravan at dusk")


V1_CODES = (
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
)


def _answer(status: int, name: str) -> Any:
    return lambda: json_response(status, fixture("minimax", name))


def _v2_without(content: Any) -> dict[str, Any]:
    return {"task": {**fixture("minimax", "v2_task_succeeded")["task"], "content": content}}


def _expire_v2(fake: FakeMiniMax, status: Any) -> None:
    """V2 links do not change: the dead one stays dead, the next query gives a fresh one."""
    fake.expired.add(status.video_url)
    fresh = fixture("minimax", "v2_task_succeeded")
    fresh["task"]["content"]["url"] += "?fresh=1"
    fake.router.script("GET", V2_QUERY, json_response(200, fresh))


def _refusal(body: dict[str, Any]) -> bool | None:
    """A V1 error code is a refusal (nothing made) unless a task id stands beside it."""
    if minimax._error_code(body)[0] is None:
        return None
    task_id = body.get("task_id")
    return isinstance(task_id, str) and bool(task_id.strip())


V1_TEXT = {"model": "MiniMax-Hailuo-2.3", "duration": 6, "resolution": "1080p"}
V2_TEXT = {"model": "MiniMax-H3", "duration": 8, "resolution": "2K", "aspect_ratio": "16:9"}
VIDEO = (r"(public-cdn-video-data-algeng\.oss-cn-wulanchabu\.aliyuncs\.com"
         r"|video-product\.cdn\.minimax\.io)/.*")
_COMMON: dict[str, Any] = {"kind": "minimax", "provider": "minimax", "make": make,
                           "created": 200, "video": VIDEO, "id_key": "task_id",
                           "check_key": (V1_QUERY, _answer(200, "v1_base_resp_1004")),
                           "unreadable_as": (ErrorClass.PERMANENT, ErrorLabel.SUBMIT_UNKNOWN),
                           "page_5xx_maybe_sent": True,
                           "create_keys": ("base_resp", "status_code", "status_msg", "task",
                                           "type", "message")}

FACTS = AdapterFacts(
    **_COMMON, label="minimax-v1", fake=lambda states=None: FakeMiniMax(v1_states=states),
    request=lambda **params: request(**{**V1_TEXT, **params}),
    create=V1_CREATE, poll=V1_QUERY, job_id=f"v1:{V1_TASK}",
    states=(("v1_query_Preparing", RemotePhase.QUEUED, "Preparing"),
            ("v1_query_Queueing", RemotePhase.QUEUED, "Queueing"),
            ("v1_query_Processing", RemotePhase.RUNNING, "Processing"),
            ("v1_query_Success", RemotePhase.SUCCEEDED, "Success")),
    finished="v1_query_Success",
    failures=(
        # A Fail without a documented reason is not retried on a guess (invariant 11).
        ("v1_query_Fail", ErrorClass.PERMANENT, ErrorLabel.PROVIDER_ERROR),
        ("v1_query_Fail_1000", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
        ("v1_query_Fail_sensitive", ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY)),
    failure_words={"v1_query_Fail": "no reason given", "v1_query_Fail_1000": "unknown error",
                   "v1_query_Fail_sensitive": "output video sensitive"},
    # HTTP 200 with an error status code is a refusal: nothing was created.
    create_errors=(*((200, f"v1_base_resp_{code}", {}, error_class, label, None, False)
                     for code, error_class, label in V1_CODES),
                   (200, {"task_id": "", "base_resp": {"status_code": 7777,  # undocumented
                                                       "status_msg": "something new"}},
                    {}, ErrorClass.PERMANENT, ErrorLabel.PROVIDER_ERROR, None, False)),
    error_words=lambda body: "{status_code}: {status_msg}".format(**body["base_resp"]),
    retry_after=False,  # V1 refuses in HTTP 200 answers (1002/1039): no header to honour
    refusal=_refusal,  # V2 refuses only with an HTTP error: its 2xx is an id or unknown
    no_id=({"base_resp": {"status_code": 0, "status_msg": "success"}},
           {"task_id": "", "base_resp": {"status_code": 0}},
           {"task_id": V1_TASK, "base_resp": {"status_code": 1002}}, [V1_TASK]),
    unreadable=(HTML_PAGE,),
    no_state=({"task_id": V1_TASK, "base_resp": {"status_code": 0}}, {"status": 7}),
    no_file=(fixture("minimax", "v1_query_Success_no_file"),),
    expire=expire_url, refresh={FILES: 2},
    reads_as=lambda body, job_id: job_id == f"v1:{body['task_id']}",
    echo_statuses=(400, 401, 422, 500),
    engine=EngineFacts(
        account="mm-1", prompt="A glass city at dawn", params=V1_TEXT,
        permanent=(
            # Moderation at create (HTTP 200 + base_resp), of the finished render, bad input.
            ("POST", V1_CREATE, _answer(200, "v1_base_resp_1026"), ErrorLabel.CONTENT_POLICY,
             "input new_sensitive"),
            ("GET", V1_QUERY, _answer(200, "v1_query_Fail_sensitive"),
             ErrorLabel.CONTENT_POLICY, "output video sensitive"),
            ("POST", V1_CREATE, _answer(200, "v1_base_resp_2013"), ErrorLabel.INVALID_INPUT,
             "invalid params")),
        credits=(_answer(200, "v1_base_resp_1008"), "insufficient balance"),
        retryable=(("GET", V1_QUERY, _answer(200, "v1_query_Fail_1000")),),
        unknown_create=lambda: json_response(200, {"base_resp": {"status_code": 0,
                                                                 "status_msg": "success"}}),
        no_file=(V1_QUERY, _answer(200, "v1_query_Success_no_file"), "")),
)

FACTS_V2 = AdapterFacts(
    **_COMMON, label="minimax-v2", fake=lambda states=None: FakeMiniMax(v2_states=states),
    request=lambda **params: request(**{"model": "MiniMax-H3", **params}),
    create=V2_CREATE, poll=V2_QUERY, job_id=f"v2:{V2_TASK}",
    states=(("v2_task_queued", RemotePhase.QUEUED, "queued"),
            ("v2_task_running", RemotePhase.RUNNING, "running"),
            ("v2_task_succeeded", RemotePhase.SUCCEEDED, "succeeded"),
            ("v2_task_cancelled", RemotePhase.CANCELLED, None)),
    finished="v2_task_succeeded",
    failures=(
        ("v2_task_failed", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
        ("v2_task_failed_sensitive", ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
        ("v2_task_failed_output_sensitive", ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY)),
    failure_words={"v2_task_failed": "internal error",
                   "v2_task_failed_sensitive": "sensitive content",
                   "v2_task_failed_output_sensitive": "sensitive content"},
    create_errors=(
        (401, "v2_error_401", {}, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED, None, False),
        (402, "v2_error_402", {}, ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS, None, False),
        (422, "v2_error_422", {}, ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY, None,
         False),
        (400, "v2_error_400", {}, ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT, None, False),
        (429, "v2_error_429", {"Retry-After": "20"}, ErrorClass.ACCOUNT,
         ErrorLabel.RATE_LIMITED, 20.0, False),
        (500, "v2_error_500", {}, ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR, None,
         False)),
    error_words=lambda body: body["error"]["message"],
    no_id=({"task": {"id": V2_TASK}}, {"task_id": None}),
    unreadable=(b"<html>ok</html>",),
    no_state=(fixture("minimax", "v2_task_succeeded")["task"],  # not wrapped
              {"task": {"id": V2_TASK}}, {"task": "succeeded"}),
    no_file=(_v2_without({}), _v2_without(None)),
    expire=_expire_v2, refresh={V2_QUERY: 2}, cancel=("DELETE", V2_DELETE),
    reads_as=lambda body, job_id: job_id == f"v2:{body['task_id']}",
    echo_statuses=(400, 401, 422, 500),
    engine=EngineFacts(
        account="mm-1", prompt="A glass city at dawn", params=V2_TEXT,
        permanent=(
            ("POST", V2_CREATE, _answer(422, "v2_error_422"), ErrorLabel.CONTENT_POLICY,
             "sensitive content (1026)"),
            ("GET", V2_QUERY, _answer(200, "v2_task_failed_sensitive"),
             ErrorLabel.CONTENT_POLICY, "sensitive content"),
            ("POST", V2_CREATE, _answer(400, "v2_error_400"), ErrorLabel.INVALID_INPUT,
             "invalid params")),
        credits=(_answer(402, "v2_error_402"), "insufficient balance"),
        retryable=(("GET", V2_QUERY, _answer(200, "v2_task_failed")),),
        unknown_create=lambda: json_response(200, {"id": V2_TASK}),
        no_file=(V2_QUERY, lambda: json_response(200, _v2_without({})), "")),
)
