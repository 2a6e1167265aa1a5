"""Reconciliation for the OpenAI-compatible /v1/videos adapter: ``search()`` and ``echo()``
against a fake gateway whose list follows the SDK (``GET /videos`` with ``after``, ``limit``,
``order``; a ``ConversationCursorPage`` of ``Video`` objects; see
tests/fixtures/openai_compat/SOURCE.md, "Reconciliation")."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

import httpx2
from provider_fakes import SENTINEL_KEY, Router, fixture, json_response, read_timeout

from conformance import requester
from conformance.facts import SearchFacts
from reelqueue.domain.errors import ErrorClass, ErrorLabel
from reelqueue.providers.adapters import openai_compat
from reelqueue.providers.base import ProviderConfig, RemoteRecord

GATEWAY = "videos.gateway.example"
BASE_URL = f"https://{GATEWAY}/v1"
VIDEOS = rf"{GATEWAY}/v1/videos"
T0 = 1_790_000_000.0
HOUR = 3600.0

@dataclass
class Listed:
    video: dict[str, Any]
    visible_at: float


def form_fields(body_bytes: bytes) -> dict[str, str]:
    """The text parts of a multipart create (the file part has a filename and is skipped)."""
    body = body_bytes.decode("utf-8", "replace")
    return dict(re.findall(r'name="(\w+)"\r\n\r\n(.*?)\r\n--', body, flags=re.DOTALL))


class FakeVideoList:
    """A gateway with the /v1/videos list as the SDK documents it.

    ``GET /videos`` pages newest first (``order=desc``, the default here) or oldest first,
    ``limit`` 0-100 (the API reference's range; 20 when absent; more is a 400), ``after``
    the id of the previous page's last video. A video made by ``POST /videos`` is listed
    only after a random delay (the settle) drawn from a seeded generator; ``now`` is the
    fake's clock, shared with the adapter. ``ignore_order`` / ``ignore_after`` play a
    gateway that implements the list badly.
    """

    def __init__(self, *, seed: int = 7, max_delay: float = 90.0) -> None:
        self.router = Router()
        self.now = T0
        self.listed: list[Listed] = []
        self.rng = random.Random(seed)
        self.max_delay = max_delay
        self.ignore_order = False
        self.ignore_after = False
        self.router.add("POST", VIDEOS, self._create)
        self.router.add("GET", VIDEOS, self._list)

    def add(self, prompt: str | None, created_at: float, *, model: str = "wan-2.5",
            seconds: str = "8", size: str = "1280x720", status: str = "completed",
            visible_at: float | None = None) -> str:
        """A video made by anyone on this key (another client too), listed from
        ``visible_at`` (default: at once)."""
        video_id = f"video_{len(self.listed):032x}"
        video = fixture("openai_compat", "video_completed")
        video.update(id=video_id, created_at=int(created_at), model=model, seconds=seconds,
                     size=size, status=status, prompt=prompt)
        self.listed.append(Listed(video, created_at if visible_at is None else visible_at))
        return video_id

    def list_calls(self) -> list[httpx2.URL]:
        return [c.url for c in self.router.calls
                if c.method == "GET" and c.url.path == "/v1/videos"]

    def _create(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        sent = form_fields(request.content)
        video_id = self.add(sent["prompt"], self.now, model=sent["model"],
                            seconds=sent.get("seconds", "4"), size=sent.get("size", "720x1280"),
                            status="queued",
                            visible_at=self.now + self.rng.uniform(1.0, self.max_delay))
        return json_response(200, self.listed[-1].video | {"id": video_id})

    def _list(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        query = request.url.params
        limit = int(query.get("limit", "20"))
        if not 0 <= limit <= 100:
            return json_response(400, {"error": {"message": "limit must be 0-100",
                                                 "type": "invalid_request_error",
                                                 "param": "limit", "code": None}})
        newest_first = query.get("order", "desc") == "desc" and not self.ignore_order
        visible = sorted((x.video for x in self.listed if x.visible_at <= self.now),
                         key=lambda v: (v["created_at"], v["id"]), reverse=newest_first)
        after = query.get("after")
        if after and not self.ignore_after:
            ids = [v["id"] for v in visible]
            if after not in ids:
                return json_response(404, {"error": {"message": f"No video {after}"}})
            visible = visible[ids.index(after) + 1:]
        page = visible[:limit]
        return json_response(200, {
            "object": "list", "data": page, "has_more": len(visible) > limit,
            "first_id": page[0]["id"] if page else None,
            "last_id": page[-1]["id"] if page else None})


def make(client: httpx2.AsyncClient, fake: FakeVideoList,
         **settings: Any) -> openai_compat.OpenAICompatProvider:
    config = ProviderConfig("gw", BASE_URL, SENTINEL_KEY,
                            settings={"model": "wan-2.5", **settings})
    return openai_compat.OpenAICompatProvider(client, config, clock=lambda: fake.now)


request = requester("A tide pool")


def matches(records: tuple[RemoteRecord, ...], echo: Any, since: float, until: float
            ) -> list[str]:
    """What the engine would take as candidates: same echo (or none to compare) in the
    window (or of unknown time)."""
    return [r.provider_job_id for r in records
            if (r.echo is None or r.echo == echo)
            and (r.created_at is None or since <= r.created_at <= until)]


def _videos(count: int) -> FakeVideoList:
    fake = FakeVideoList()
    for n in range(count):
        fake.add("A tide pool", T0 - n)
    return fake


SEARCH = SearchFacts(
    label="openai-compat", provider="openai_compat", listing=_videos, make=make,
    route=VIDEOS, window=(T0 - 3 * HOUR, T0), page=openai_compat.LIST_PAGE_SIZE,
    budget=openai_compat.LIST_PAGE_BUDGET, hosts=(GATEWAY,),
    first_errors=((401, "error_401", ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED),
                  (429, "error_429_rate", ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED),
                  (500, "error_500", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR)),
    failures=(lambda: json_response(500, fixture("openai_compat", "error_500")),
              lambda: json_response(429, fixture("openai_compat", "error_429_rate")),
              lambda: read_timeout,
              lambda: json_response(404, {"error": {"message": "No video with that id"}})),
    unreadable=(b"<html>ok</html>", b"", b"[]", b'{"data": "none"}', b'{"object": "list"}',
                b'{"data": [{"object": "video"}], "has_more": false}',
                b'{"data": [{"id": ""}], "has_more": false}',
                b'{"data": ["video_1"], "has_more": false}',
                b'{"data": [], "has_more": "no"}', b'{"data": [], "has_more": true}',
                b'{"data": [{"id": "video_1"}], "has_more": true, "last_id": 7}'),
    off=(lambda client: make(client, FakeVideoList()), VIDEOS), settle=300.0, keeps_hours=24.0,
    off_words="no list of videos")
