"""The mock provider server over real loopback HTTP, without the adapter."""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any

import httpx2
import pytest
from mockprovider_helpers import FAST, SAMPLE

from reelqueue.mockprovider import MockOptions, MockProviderServer, serve_forever

pytestmark = pytest.mark.integration


def _create(client: httpx2.Client, url: str, prompt: str = "fox", job_key: str = "j1",
            token: str = "t1", **headers: str) -> httpx2.Response:
    body = {"prompt": prompt, "client_token": token, "job_key": job_key, "params": {}}
    return client.post(f"{url}/v1/renders", json=body, headers=headers)


def _wait(client: httpx2.Client, url: str, render_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 5
    seen = set()
    while time.monotonic() < deadline:
        body: dict[str, Any] = client.get(f"{url}/v1/renders/{render_id}").json()
        seen.add(body["status"])
        if body["status"] in ("succeeded", "failed", "cancelled"):
            body["_seen"] = seen
            return body
        time.sleep(0.01)
    raise AssertionError("render did not finish")


def test_render_lifecycle_and_counters(mp_server: MockProviderServer) -> None:
    url = mp_server.url
    assert url.startswith("http://127.0.0.1:") and url.endswith(str(mp_server.port))
    with httpx2.Client(timeout=3) as client:
        created = _create(client, url)
        assert created.status_code == 201
        render = created.json()
        assert render["status"] == "queued" and render["client_token"] == "t1"
        assert render["id"].startswith("mr_")
        polled = client.get(f"{url}/v1/renders/{render['id']}")
        assert polled.headers["X-Poll-After"] == "0.2"
        done = _wait(client, url, render["id"])
        assert done["status"] == "succeeded" and done["cost"] > 0
        assert done["_seen"] <= {"queued", "running", "succeeded"}
        video = client.get(done["video_url"])
        assert video.headers["Content-Type"] == "video/mp4"
        assert int(video.headers["Content-Length"]) == len(SAMPLE)
        assert video.content == SAMPLE
        _create(client, url, job_key="j1", token="t2")
        _create(client, url, job_key="j2", token="t3")
        counters = client.get(f"{url}/_mock/counters").json()
        assert counters == mp_server.counters()
        assert counters["creates_total"] == 3
        assert counters["creates_by_job_key"] == {"j1": 2, "j2": 1}
        assert counters["creates_by_client_token"] == {"t1": 1, "t2": 1, "t3": 1}
        assert counters["polls_total"] >= 2 and counters["downloads_total"] == 1
        assert client.post(f"{url}/_mock/reset").json() == {"ok": True}
        assert mp_server.counters()["creates_total"] == 0


def test_running_progress_and_cancel() -> None:
    slow = dataclasses.replace(FAST, render_seconds_min=2, render_seconds_max=2)
    with MockProviderServer(slow) as server, httpx2.Client(timeout=3) as client:
        render_id = _create(client, server.url).json()["id"]
        time.sleep(0.6)
        body = client.get(f"{server.url}/v1/renders/{render_id}").json()
        assert body["status"] == "running" and 0 < body["progress"] < 100
        cancelled = client.post(f"{server.url}/v1/renders/{render_id}/cancel")
        assert cancelled.json()["status"] == "cancelled"
        again = client.post(f"{server.url}/v1/renders/{render_id}/cancel")
        assert again.status_code == 409


def test_lookup_by_client_token(mp_server: MockProviderServer) -> None:
    with httpx2.Client(timeout=3) as client:
        render_id = _create(client, mp_server.url, token="look-1").json()["id"]
        found = client.get(f"{mp_server.url}/v1/renders", params={"client_token": "look-1"})
        assert [r["id"] for r in found.json()["data"]] == [render_id]
        none = client.get(f"{mp_server.url}/v1/renders", params={"client_token": "nope"})
        assert none.json() == {"data": []}


def test_lookup_disabled() -> None:
    options = dataclasses.replace(FAST, lookup_enabled=False)
    with MockProviderServer(options) as server, httpx2.Client(timeout=3) as client:
        _create(client, server.url, token="look-2")
        answer = client.get(f"{server.url}/v1/renders", params={"client_token": "look-2"})
        assert answer.status_code == 404
        assert answer.json()["error"]["code"] == "lookup_disabled"


def test_accept_keys() -> None:
    options = dataclasses.replace(FAST, accept_keys=frozenset({"good"}))
    with MockProviderServer(options) as server, httpx2.Client(timeout=3) as client:
        for headers in ({}, {"Authorization": "Bearer bad"}):
            answer = client.get(f"{server.url}/v1/account", headers=headers)
            assert answer.status_code == 401
            assert answer.json()["error"]["code"] == "invalid_api_key"
        denied = _create(client, server.url, Authorization="Bearer bad")
        assert denied.status_code == 401
        ok = client.get(f"{server.url}/v1/account", headers={"Authorization": "Bearer good"})
        assert ok.json() == {"ok": True, "credits": 100.0}
        # The test hooks need no key; the refused create was still counted.
        assert client.get(f"{server.url}/_mock/counters").json()["creates_total"] == 1


def test_unknown_paths_and_ids(mp_server: MockProviderServer) -> None:
    with httpx2.Client(timeout=3) as client:
        assert client.get(f"{mp_server.url}/v1/nothing").status_code == 404
        assert client.get(f"{mp_server.url}/v1/renders/mr_missing").status_code == 404
        assert client.get(f"{mp_server.url}/v1/files/mr_missing.mp4").status_code == 404
        assert client.delete(f"{mp_server.url}/v1/renders").status_code == 405
        bad = _create(client, mp_server.url, prompt="[[mock:explode]]")
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "unknown_directive"
        assert client.post(f"{mp_server.url}/v1/renders", content=b"{").status_code == 400
        deep = b"[" * 100_000 + b"]" * 100_000  # valid JSON, nested past the parser
        assert client.post(f"{mp_server.url}/v1/renders", content=deep).status_code == 400
        assert client.post(f"{mp_server.url}/_mock/foreign", content=deep).status_code < 500


def test_probabilistic_faults_are_seeded() -> None:
    with httpx2.Client(timeout=3) as client:
        options = dataclasses.replace(FAST, rate_limit_rate=1.0, retry_after=7)
        with MockProviderServer(options) as server:
            answer = _create(client, server.url)
            assert answer.status_code == 429 and answer.headers["Retry-After"] == "7"
        with MockProviderServer(dataclasses.replace(FAST, server_error_rate=1.0)) as server:
            assert _create(client, server.url).status_code == 500
        with MockProviderServer(dataclasses.replace(FAST, fail_rate=1.0)) as server:
            done = _wait(client, server.url, _create(client, server.url).json()["id"])
            assert done["status"] == "failed" and done["error"]["code"] == "render_failed"

        def outcomes(seed: int) -> list[int]:
            opts = dataclasses.replace(FAST, seed=seed, server_error_rate=0.5)
            with MockProviderServer(opts) as server:
                return [_create(client, server.url, token=f"t{i}").status_code
                        for i in range(12)]

        first = outcomes(3)
        assert first == outcomes(3)
        assert set(first) == {201, 500}


def test_signed_links_expire() -> None:
    options = dataclasses.replace(FAST, link_ttl_seconds=0.3)
    with MockProviderServer(options) as server, httpx2.Client(timeout=3) as client:
        done = _wait(client, server.url, _create(client, server.url).json()["id"])
        link = done["video_url"]
        assert "exp=" in link and "sig=" in link
        assert client.get(link).content == SAMPLE
        unsigned = link.split("?")[0]
        assert client.get(unsigned).json()["error"]["code"] == "bad_signature"
        time.sleep(0.4)
        expired = client.get(link)
        assert expired.status_code == 403
        assert expired.json()["error"]["code"] == "link_expired"


def test_refuses_non_loopback_host() -> None:
    for host in ("0.0.0.0", "192.168.1.10", "example.com"):
        with pytest.raises(ValueError, match="loopback"):
            MockProviderServer(FAST, host=host)


def test_stop_is_prompt_with_hanging_connections() -> None:
    server = MockProviderServer(FAST).start()
    outcome: list[BaseException | httpx2.Response] = []

    def hang() -> None:
        with httpx2.Client(timeout=20) as client:
            try:
                outcome.append(_create(client, server.url, prompt="[[mock:create_timeout]]"))
            except httpx2.HTTPError as exc:
                outcome.append(exc)

    idle = httpx2.Client(timeout=3)  # an idle keep-alive connection, too
    try:
        assert idle.get(f"{server.url}/v1/account").status_code == 200
        thread = threading.Thread(target=hang)
        thread.start()
        deadline = time.monotonic() + 5
        while server.counters()["renders_total"] < 1:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        started = time.monotonic()
        server.stop()
        assert time.monotonic() - started < 1.5
        thread.join(5)
        assert not thread.is_alive()
        assert len(outcome) == 1 and isinstance(outcome[0], httpx2.HTTPError)
        server.stop()  # idempotent
    finally:
        idle.close()


def test_serve_forever_until_stop_event() -> None:
    urls: list[str] = []
    stop = threading.Event()
    options = MockOptions(render_seconds_min=0.01, render_seconds_max=0.02)
    thread = threading.Thread(
        target=serve_forever, args=(options, 0), kwargs={"on_listening": urls.append,
                                                        "stop_event": stop},
    )
    thread.start()
    try:
        deadline = time.monotonic() + 5
        while not urls:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        with httpx2.Client(timeout=3) as client:
            assert client.get(f"{urls[0]}/v1/account").json()["ok"] is True
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()
