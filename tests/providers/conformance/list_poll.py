"""The list-poll rows of the adapters that offer ``poll_many`` (issue 33 item 3): each
one's list page fixture (tests/fixtures/<provider>/list_poll.json, or the page the
provider's reference gives, see its SOURCE.md) and what the page says of each render.

Not here: Kling and Luma legacy (their lists state no order, docs/providers.md), V1
MiniMax (no list)."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx2
from provider_fakes import SENTINEL_KEY

from conformance.facts import ListPollFacts
from reelqueue.domain.errors import ErrorClass, ErrorLabel
from reelqueue.domain.states import RemotePhase
from reelqueue.providers import mock
from reelqueue.providers.adapters import minimax, openai_compat, replicate
from reelqueue.providers.base import ProviderConfig

MOCK_BASE = "http://127.0.0.1:8765"
MOCK_LIST = r"127\.0\.0\.1/v1/renders"
REPLICATE = r"api\.replicate\.com/v1/predictions"
GATEWAY = "videos.gateway.example"
VIDEOS = rf"{GATEWAY}/v1/videos"
MINIMAX_LIST = r"api\.minimax\.io/v2/query/video_generation"


def _mock(client: httpx2.AsyncClient) -> mock.MockProvider:
    return mock.MockProvider(client, ProviderConfig("acct", MOCK_BASE, SENTINEL_KEY))


def _openai(client: httpx2.AsyncClient) -> openai_compat.OpenAICompatProvider:
    return openai_compat.OpenAICompatProvider(client, ProviderConfig(
        "acct", f"https://{GATEWAY}/v1", SENTINEL_KEY, settings={"model": "wan-2.5"}))


def _replicate(client: httpx2.AsyncClient) -> replicate.ReplicateProvider:
    return replicate.ReplicateProvider(client, ProviderConfig("acct", None, SENTINEL_KEY))


def _replicate_more(page: dict[str, Any]) -> dict[str, Any]:
    return {**page, "next": "https://api.replicate.com/v1/predictions?cursor=cj0xJnA9MjAy"}


def _mock_more(page: dict[str, Any]) -> dict[str, Any]:
    return {**page, "has_more": True, "next_cursor": page["data"][-1]["id"]}


def _openai_more(page: dict[str, Any]) -> dict[str, Any]:
    return {**page, "has_more": True}


def _set(key: str, value: object) -> Any:
    def edit(item: dict[str, Any]) -> None:
        item[key] = value
    return edit


def _drop(key: str) -> Any:
    def edit(item: dict[str, Any]) -> None:
        item.pop(key, None)
    return edit


def _refused(code: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": f"no: Bearer {SENTINEL_KEY}"}}


def _openai_refused(code: str) -> dict[str, Any]:
    return {"error": {"message": f"no: Bearer {SENTINEL_KEY}", "type": code, "code": code}}


UNREADABLE = (b"<html>gateway</html>", b'{"data": "none"}', b"[]",
              json.dumps({"data": {"id": SENTINEL_KEY}}).encode())

MOCK = ListPollFacts(
    label="mock", provider="mock", page="list_poll", items="data", make=_mock, route=MOCK_LIST,
    poll=lambda render_id: rf"127\.0\.0\.1/v1/renders/{re.escape(render_id)}",
    phases={"mr_89b6711c5231e41b": RemotePhase.QUEUED,
            "mr_f1d15ad773582798": RemotePhase.RUNNING,
            "mr_4056bd6f8ee30872": RemotePhase.FAILED,
            "mr_ec96286cf8265bde": RemotePhase.SUCCEEDED},
    more=_mock_more, budget=mock.POLL_MANY_PAGE_BUDGET,
    errors=((401, _refused("invalid_api_key"), ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED),
            (429, _refused("rate_limited"), ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED),
            (500, _refused("boom"), ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR)),
    unreadable=(*UNREADABLE, b'{"data": [], "has_more": true}'),
    # A state the mock does not have, and a finished render without its link (the list
    # may lag its file): left out, its own poll decides.
    bad_items=(_set("status", "exploded"), _drop("video_url")),
    off=(404, {"error": {"code": "list_disabled", "message": "no list"}}))

OPENAI_COMPAT = ListPollFacts(
    label="openai-compat", provider="openai_compat", page="list_poll", items="data",
    make=_openai,
    route=VIDEOS, poll=lambda video_id: rf"{VIDEOS}/{re.escape(video_id)}",
    phases={"video_68d7512d07848190b3e45da0ecbe0100": RemotePhase.QUEUED,
            "video_68d7512d07848190b3e45da0ecbe0101": RemotePhase.RUNNING,
            "video_68d7512d07848190b3e45da0ecbe0102": RemotePhase.SUCCEEDED,
            "video_68d7512d07848190b3e45da0ecbe0103": RemotePhase.FAILED,
            "video_68d7512d07848190b3e45da0ecbe0104": RemotePhase.FAILED,
            "video_68d7512d07848190b3e45da0ecbe0105": RemotePhase.FAILED},
    more=_openai_more, budget=openai_compat.POLL_MANY_PAGE_BUDGET,
    errors=((401, _openai_refused("invalid_api_key"), ErrorClass.ACCOUNT,
             ErrorLabel.KEY_REJECTED),
            (429, _openai_refused("rate_limit_exceeded"), ErrorClass.ACCOUNT,
             ErrorLabel.RATE_LIMITED),
            (500, _openai_refused("server_error"), ErrorClass.RETRYABLE,
             ErrorLabel.PROVIDER_ERROR)),
    unreadable=UNREADABLE,
    # A listed video without a readable id: the page is of a shape the API does not
    # document, and the call raises (the engine polls that round one by one).
    bad_items=(_drop("id"), _set("id", 7)),
    off=(404, {"error": {"message": "Not found", "type": "invalid_request_error"}}))

REPLICATE_ROW = ListPollFacts(
    label="replicate", provider="replicate", page="list_poll", items="results",
    make=_replicate,
    route=REPLICATE, poll=lambda prediction_id: rf"{REPLICATE}/{re.escape(prediction_id)}",
    phases={"ufawqhfynnddngldkgtsll0000": RemotePhase.QUEUED,
            "ufawqhfynnddngldkgtsll0001": RemotePhase.RUNNING,
            "ufawqhfynnddngldkgtsll0002": RemotePhase.SUCCEEDED,
            "ufawqhfynnddngldkgtsll0003": RemotePhase.FAILED,
            "ufawqhfynnddngldkgtsll0004": RemotePhase.CANCELLED,
            "ufawqhfynnddngldkgtsll0005": RemotePhase.FAILED},
    more=_replicate_more, budget=replicate.POLL_MANY_PAGE_BUDGET,
    errors=((401, {"detail": f"Invalid token {SENTINEL_KEY}", "status": 401},
             ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED),
            (429, {"detail": "Request was throttled. Your rate limit resets in ~30s.",
                   "status": 429}, ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED),
            (500, {"detail": "Internal server error"}, ErrorClass.RETRYABLE,
             ErrorLabel.PROVIDER_ERROR)),
    unreadable=UNREADABLE,
    # A succeeded prediction listed without its output (a list read never ends a paid
    # render for want of a file), and one without a readable id: left out.
    bad_items=(_set("output", None), _drop("id"), _set("id", 7)),
    off=(404, {"detail": "Not found", "status": 404}))

def _minimax(client: httpx2.AsyncClient) -> minimax.MiniMaxProvider:
    return minimax.MiniMaxProvider(client, ProviderConfig("acct", None, SENTINEL_KEY))


def _minimax_error(status: int, kind: str, message: str, code: str) -> dict[str, Any]:
    """V2's ``OaiError`` (SOURCE.md, V2C), echoing the key to show it is scrubbed."""
    return {"type": "error", "request_id": "021785229015510a2c883cf675b9804d",
            "error": {"type": kind, "http_code": str(status),
                      "message": f"{message}: Bearer {SENTINEL_KEY} ({code})"}}


MINIMAX_V2 = ListPollFacts(
    label="minimax-v2", provider="minimax", page="v2_list_page", items="items",
    make=_minimax, route=MINIMAX_LIST,
    poll=lambda task_id: rf"{MINIMAX_LIST}/{re.escape(task_id)}",
    poll_answer=lambda item: {"task": item}, render_id=lambda task_id: f"v2:{task_id}",
    phases={"v2:424635601932571": RemotePhase.SUCCEEDED,
            "v2:424635601932588": RemotePhase.RUNNING,
            "v2:424635601932587": RemotePhase.QUEUED,
            "v2:424635601932586": RemotePhase.FAILED},
    # One read asks for the ids themselves (filter.task_ids): a larger total is never paged.
    more=lambda page: {**page, "total": 10_000}, budget=1,
    errors=((401, _minimax_error(401, "authorized_error", "login fail", "1004"),
             ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED),
            (429, _minimax_error(429, "rate_limit_error", "rate limit", "1002"),
             ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED),
            (500, _minimax_error(500, "server_error", "internal error", "1000"),
             ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR)),
    unreadable=(*UNREADABLE, b'{"items": {"id": "424635601932571"}, "total": 1}'),
    # A listed task without a readable id or status: left out, its own poll decides.
    bad_items=(_drop("id"), _set("id", 424635601932571), _drop("status"), _set("status", "")),
    off=(404, {"message": "404 page not found"}))

LIST_POLLS = [MOCK, OPENAI_COMPAT, REPLICATE_ROW, MINIMAX_V2]
