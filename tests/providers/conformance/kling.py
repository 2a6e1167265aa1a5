"""Kling's strict fake of its classic ``/v1`` task API and its conformance facts.

``StrictKling`` enforces the API reference (tests/fixtures/kling/SOURCE.md): the paths, the
JWT (HS256, iss/exp/nbf, signed with the secret key), the exact request fields and their
types (``duration`` a string), the envelope and the error table. Anything else gets the
documented 1201/1202/100x answer, so an adapter that drifts from the docs cannot pass.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from collections.abc import Callable
from typing import Any

import httpx2
from provider_fakes import HTML_PAGE, SENTINEL_KEY, Router, fixture, json_response, video_response

from conformance import maker, requester
from conformance.facts import AdapterFacts, EngineFacts, expire_flag
from reelqueue.domain.errors import ErrorClass, ErrorLabel
from reelqueue.domain.states import RemotePhase
from reelqueue.providers.adapters import kling
from reelqueue.providers.base import LostCreateSearch

API = "api-singapore.klingai.com"
CDN = "v16-kling-fdl.klingai.com"
ACCESS = "AKID-7Q2"
KEY = f"{ACCESS}:{SENTINEL_KEY}"  # the keyring entry: ACCESS_KEY:SECRET_KEY
ENDPOINTS = ("text2video", "image2video")
CREATE = rf"{API}/v1/videos/(text2video|image2video)"
ClientFor = Callable[[Router], httpx2.AsyncClient]
PNG = b"\x89PNG\r\n\x1a\n" + bytes(64)
ERRORS: dict[str, Any] = fixture("kling", "errors")

_SCHEMA = fixture("kling", "schema")  # the request fields and models of T2V/I2V (SOURCE.md)
_TYPES: dict[str, type] = {"str": str, "float": float, "dict": dict}
TEXT_FIELDS, IMAGE_FIELDS = ({name: _TYPES[kind] for name, kind in {
    **_SCHEMA["common_fields"], **_SCHEMA[f"{endpoint}_fields"]}.items()} for endpoint in ENDPOINTS)
TEXT_MODELS = set(_SCHEMA["text2video_models"])
IMAGE_MODELS = TEXT_MODELS | set(_SCHEMA["image2video_only_models"])


def kling_error(code: int, detail: str = "") -> httpx2.Response:
    """The documented answer for ``code`` (General Info > Error Code)."""
    entry = ERRORS[str(code)]
    body = dict(entry["body"])
    if detail:
        body["message"] = f"{body['message']}: {detail}"
    return json_response(entry["http_status"], body)


class StrictKling:
    """Kling's classic video task API as its reference describes it.

    Attributes:
        tasks: task id -> {endpoint, external, body, step}, in creation order.
        steps: the fixtures a task's queries walk through, one per query.
    """

    def __init__(self, steps: list[str] | None = None, secret: str = SENTINEL_KEY,
                 clock: Callable[[], float] = time.time) -> None:
        self.router = Router()
        self.clock = clock
        self.steps = steps or ["query_submitted", "query_processing", "query_succeed"]
        self.secret = secret
        self.tasks: dict[str, dict[str, Any]] = {}
        self.expire_next_download = False
        self.router.add("POST", CREATE, self._create)
        self.router.add("GET", rf"{API}/v1/videos/(text2video|image2video)/([^/]+)",
                        self._query)
        self.router.add("GET", rf"{API}/v1/videos/(text2video|image2video)", self._list)
        self.router.add("GET", rf"{CDN}/video/.*", self._video)
        for method in ("GET", "POST", "PUT", "DELETE"):
            self.router.add(method, rf"{API}/.*", lambda r, m: kling_error(1202, r.url.path))

    def creates(self) -> int:
        return self.router.count("POST", CREATE)

    posts = creates

    # -- the rules ------------------------------------------------------------------------

    def _auth_problem(self, request: httpx2.Request) -> httpx2.Response | None:
        value = request.headers.get("authorization", "")
        if not value:
            return kling_error(1001)
        scheme, _, token = value.partition(" ")
        parts = token.split(".")
        if scheme != "Bearer" or len(parts) != 3:
            return kling_error(1002, "not a Bearer JWT")
        try:
            header, claims = (json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))
                              for p in parts[:2])
            signature = base64.urlsafe_b64decode(parts[2] + "=" * (-len(parts[2]) % 4))
        except (ValueError, binascii.Error):
            return kling_error(1002, "unreadable JWT")
        expected = hmac.new(self.secret.encode(), f"{parts[0]}.{parts[1]}".encode(),
                            hashlib.sha256).digest()
        if header != {"alg": "HS256", "typ": "JWT"} or not hmac.compare_digest(signature,
                                                                               expected):
            return kling_error(1002, "bad header or signature")
        if set(claims) != {"iss", "exp", "nbf"} or claims["iss"] != ACCESS:
            return kling_error(1002, "bad claims")
        now = self.clock()
        if not all(isinstance(claims[k], int) for k in ("exp", "nbf")):
            return kling_error(1002, "times must be integers")
        if claims["nbf"] > now:
            return kling_error(1003)
        if claims["exp"] <= now or claims["exp"] - now > 1800:
            return kling_error(1004)
        return None

    def _body_problem(self, endpoint: str, body: Any) -> str:
        if not isinstance(body, dict):
            return "the body must be a JSON object"
        fields = TEXT_FIELDS if endpoint == "text2video" else IMAGE_FIELDS
        for name, value in body.items():
            kind = fields.get(name)
            if kind is None:
                return f"unknown field {name}"
            if kind is float and (isinstance(value, bool) or not isinstance(value, int | float)):
                return f"{name} must be a number"
            if kind is not float and not isinstance(value, kind):
                return f"{name} must be a {kind.__name__}"
        model = body.get("model_name", "kling-v1")
        if model not in (TEXT_MODELS if endpoint == "text2video" else IMAGE_MODELS):
            return f"model_name {model} is not offered here"
        if endpoint == "text2video" and not body.get("prompt"):
            return "prompt is required"
        for name in ("prompt", "negative_prompt"):
            if len(body.get(name, "")) > 2500:
                return f"{name} is over 2500 characters"
        allowed = [str(s) for s in range(3, 16)] if model == "kling-v3" else ["5", "10"]
        if "duration" in body and body["duration"] not in allowed:
            return f"duration must be one of {allowed}"
        if body.get("mode", "std") not in ("std", "pro"):
            return "mode must be std or pro"
        if "sound" in body and (body["sound"] not in ("on", "off")
                                or model not in ("kling-v2-6", "kling-v3")):
            return "sound is on/off, V2.6 and later"
        if body.get("aspect_ratio", "16:9") not in ("16:9", "9:16", "1:1"):
            return "bad aspect_ratio"
        if "cfg_scale" in body and (model.startswith("kling-v2") or model == "kling-v3"
                                    or not 0 <= body["cfg_scale"] <= 1):
            return "cfg_scale is [0, 1] and not for v2.x"
        if endpoint == "image2video":
            image = body.get("image", "")
            if image.startswith("data:"):
                return "image: no data: prefix on base64"
            if not image.startswith("https://"):
                try:
                    base64.b64decode(image, validate=True)
                except (ValueError, binascii.Error):
                    return "image must be a URL or base64"
        external = body.get("external_task_id")
        if external and any(t["external"] == external for t in self.tasks.values()):
            return "external_task_id must be unique in the account"
        return ""

    # -- the routes -----------------------------------------------------------------------

    def _create(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        problem = self._auth_problem(request)
        if problem is not None:
            return problem
        if request.url.query or request.headers.get("content-type") != "application/json":
            return kling_error(1200, "JSON body, no query")
        try:
            body = json.loads(request.content)
        except ValueError:
            return kling_error(1200, "not JSON")
        why = self._body_problem(match.group(1), body)
        if why:
            return kling_error(1201, why)
        task_id = str(867283741759111202 + len(self.tasks))
        self.tasks[task_id] = {"endpoint": match.group(1), "body": body, "step": 0,
                               "external": body.get("external_task_id")}
        answer = fixture("kling", "create")
        answer["data"]["task_id"] = task_id
        answer["data"]["task_info"] = ({"external_task_id": body["external_task_id"]}
                                       if "external_task_id" in body else {})
        return json_response(200, answer)

    def _task_answer(self, task_id: str, advance: bool) -> dict[str, Any]:
        task = self.tasks[task_id]
        answer = fixture("kling", self.steps[min(task["step"], len(self.steps) - 1)])
        if advance:
            task["step"] += 1
        data = answer["data"]
        data["task_id"] = task_id
        data["task_info"] = {"external_task_id": task["external"]} if task["external"] else {}
        for video in (data.get("task_result") or {}).get("videos", []):
            video["url"] = f"https://{CDN}/video/{task_id}.mp4"
        return answer

    def _query(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        problem = self._auth_problem(request)
        if problem is not None:
            return problem
        if request.url.query:
            return kling_error(1201, "the id goes in the path")
        endpoint, wanted = match.group(1), match.group(2)
        for task_id, task in self.tasks.items():
            if task["endpoint"] == endpoint and wanted in (task_id, task["external"]):
                return json_response(200, self._task_answer(task_id, advance=True))
        return kling_error(1203, f"task {wanted}")

    def _list(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        problem = self._auth_problem(request)
        if problem is not None:
            return problem
        try:
            page = int(request.url.params.get("pageNum", "1"))
            size = int(request.url.params.get("pageSize", "30"))
        except ValueError:
            return kling_error(1201, "pageNum/pageSize are integers")
        if not 1 <= page <= 1000 or not 1 <= size <= 500:
            return kling_error(1201, "pageNum 1-1000, pageSize 1-500")
        mine = [t for t, v in reversed(self.tasks.items()) if v["endpoint"] == match.group(1)]
        chosen = mine[(page - 1) * size:page * size]
        answer = fixture("kling", "list")
        answer["data"] = [self._task_answer(t, advance=False)["data"] for t in chosen]
        return json_response(200, answer)

    def _video(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        if "authorization" in request.headers:
            return httpx2.Response(400)  # the key never goes to the CDN
        if self.expire_next_download:
            self.expire_next_download = False
            return httpx2.Response(403)
        return video_response()


make = maker(kling.create, "kl", key=KEY)
request = requester("A snow leopard")


EXPECTED = {
    **{c: (ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED)
       for c in (1000, 1001, 1002, 1003, 1004, 1100, 1103, 1304)},
    1101: (ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS),
    1102: (ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS),
    **{c: (ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT) for c in (1200, 1201, 1202, 1203)},
    1300: (ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
    1301: (ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
    1302: (ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED),
    1303: (ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED),
    5000: (ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
    5001: (ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
    5002: (ErrorClass.RETRYABLE, ErrorLabel.TIMED_OUT),
}


SEEDED = "867283741759111201"  # a task the conformance fake knows before any create
TASK = rf"{API}/v1/videos/text2video/{SEEDED}"


def seeded(states: list[str] | None = None) -> StrictKling:
    """A strict fake that already holds one text task (the suite polls it by its id)."""
    fake = StrictKling(steps=states)
    fake.tasks[SEEDED] = {"endpoint": "text2video", "body": {}, "step": 0, "external": None}
    return fake


def _code(body: dict[str, Any]) -> int | None:
    """The envelope's code: an integer, or its ASCII digits."""
    code = body.get("code")
    if isinstance(code, str) and code.isascii() and code.isdigit():
        return int(code)
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _failed(message: str | None) -> dict[str, Any]:
    answer: dict[str, Any] = fixture("kling", "query_failed")
    answer["data"].update(task_id=SEEDED, task_status_msg=message)
    return answer


def _finished_without_file() -> dict[str, Any]:
    answer: dict[str, Any] = fixture("kling", "query_succeed")
    answer["data"].update(task_id=SEEDED, task_info={}, task_result={"videos": []})
    return answer


FACTS = AdapterFacts(
    kind="kling", provider="kling", fake=seeded, make=make, request=request,
    create=CREATE, created=200, poll=TASK, job_id=f"text2video/{SEEDED}",
    video=rf"{CDN}/video/.*", key=KEY,
    states=(("query_submitted", RemotePhase.QUEUED, "submitted"),
            ("query_processing", RemotePhase.RUNNING, "processing"),
            ("query_succeed", RemotePhase.SUCCEEDED, "succeed")),
    finished="query_succeed",
    # Kling lists no retryable reason for a failed task.
    failures=(("query_failed", ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),),
    failed_answers=tuple((_failed(message), ErrorClass.PERMANENT, label, message or "")
                         for message, label in (
        ("Failure to pass the risk control system", ErrorLabel.CONTENT_POLICY),
        ("internal error, please retry", ErrorLabel.PROVIDER_ERROR),
        (None, ErrorLabel.PROVIDER_ERROR))),
    # Every documented code, as its HTTP status and again inside an HTTP 200.
    create_errors=tuple(
        (status or ERRORS[str(code)]["http_status"], ERRORS[str(code)]["body"], {},
         *classified, 1.0 if code == 1303 else None, code == 5002)
        for code, classified in sorted(EXPECTED.items()) for status in (None, 200)),
    error_words=lambda body: body["message"], refusal_in_200_status=200,
    retry_after=False,  # a full pack (1303) waits a second, as documented; no header
    no_id=(*({"code": 0, "message": "SUCCEED", **extra} for extra in (
        {"data": {}}, {"data": {"task_id": ""}}, {"data": {"task_id": None}},
        {"data": [{"task_id": "1"}]}, {"data": None}, {})),
        {"data": {"task_id": "1"}},
        {"code": 0, "data": {"task_id": "1", "task_info": {"external_task_id": "other"}}}, []),
    unreadable=(HTML_PAGE, b'{"code": 0, "data": {"task_id": "86728', b""),
    unreadable_as=(ErrorClass.PERMANENT, ErrorLabel.SUBMIT_UNKNOWN), page_5xx_maybe_sent=True,
    no_state=tuple({"code": 0, "data": data} for data in (
        {}, {"task_id": "999"}, {"task_id": SEEDED, "task_status": 3}, [], None)),
    no_file=(_finished_without_file(),),
    id_key="task_id", create_keys=("code", "message", "task_info", "external_task_id",
                                   "task_status"),
    envelope=lambda data: {"code": 0, "data": data},
    unknown_as=(ErrorClass.PERMANENT, ErrorLabel.SUBMIT_UNKNOWN),
    # A code other than 0 is a refusal; only the server timeout (5002) may have created.
    refusal=lambda body: None if _code(body) in (None, 0) else _code(body) == 5002,
    reads_as=lambda body, job_id: _code(body) == 0
    and job_id == f"text2video/{body['data']['task_id']}",
    expire=expire_flag, refresh={TASK: 2},
    check_key=(rf"{API}/v1/videos/text2video", lambda: kling_error(1002)),
    lost_create=LostCreateSearch.LOOKUP,
    engine=EngineFacts(
        account="kl", prompt="A snow leopard",
        permanent=tuple(
            ("POST", CREATE, lambda code=code: kling_error(code), label,
             ERRORS[str(code)]["body"]["message"])
            for code, (_, label) in sorted(EXPECTED.items())
            if code in (1200, 1201, 1202, 1203, 1300, 1301)),
        credits=(lambda: kling_error(1102), ""),
        retryable=tuple(("POST", CREATE, lambda code=code: kling_error(code))
                        for code in (5000, 5001)),
        unknown_create=None),  # settled by a lookup: test_kling.py
)
