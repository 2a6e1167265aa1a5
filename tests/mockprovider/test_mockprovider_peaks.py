"""The mock provider counts the peak number of renders running at once per API key (the
figure the team kill test checks against each account's limit), naming keys by a hash."""

from __future__ import annotations

import hashlib

import httpx2
import pytest

from reelqueue.mockprovider import MockOptions, MockProviderServer

pytestmark = pytest.mark.integration


def _key_id(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def _create(client: httpx2.Client, url: str, key: str, n: int, seconds: float) -> None:
    body = {"prompt": f"shot {n} [[mock:render_seconds={seconds}]]", "client_token": f"t{n}",
            "job_key": f"j{n}", "params": {}}
    response = client.post(f"{url}/v1/renders", json=body,
                           headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 201, response.text


def test_peak_running_renders_are_counted_per_key() -> None:
    with MockProviderServer(MockOptions(seed=1)) as server, httpx2.Client() as client:
        url = server.url
        for n in range(3):  # three long renders at once on key A
            _create(client, url, "key-aaaa", n, 60.0)
        _create(client, url, "key-bbbb", 3, 0.0)  # finished at once: never two running
        _create(client, url, "key-bbbb", 4, 0.0)
        peaks = client.get(f"{url}/_mock/counters").json()["peak_renders_by_key"]
    assert peaks == {_key_id("key-aaaa"): 3, _key_id("key-bbbb"): 1}
    assert "key-aaaa" not in str(peaks)


def test_running_now_timeline_and_poll_hint_are_the_mocks_own() -> None:
    """The in-flight benchmark counts a slot filled by the mock's ``running_now``, takes
    each render's end from ``/_mock/timeline`` and sets the poll hint real providers ask."""
    with MockProviderServer(MockOptions(seed=1, poll_after_seconds=5.0)) as server, \
            httpx2.Client() as client:
        url = server.url
        for n in range(2):
            _create(client, url, "key-aaaa", n, 60.0)
        _create(client, url, "key-aaaa", 2, 0.0)  # already over: not running
        assert client.get(f"{url}/_mock/counters").json()["running_now"] == 2
        timeline = {r["job_key"]: r for r in client.get(f"{url}/_mock/timeline").json()}
        render_id = client.get(f"{url}/v1/renders", params={"client_token": "t0"},
                               headers={"Authorization": "Bearer key-aaaa"}).json()["data"][0]["id"]
        poll = client.get(f"{url}/v1/renders/{render_id}",
                          headers={"Authorization": "Bearer key-aaaa"})
    assert set(timeline) == {"j0", "j1", "j2"}
    assert timeline["j0"]["ends_at"] - timeline["j0"]["created_at"] == pytest.approx(60.0)
    assert timeline["j2"]["ends_at"] == pytest.approx(timeline["j2"]["created_at"])
    assert poll.headers["X-Poll-After"] == "5"


def test_a_poll_hint_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="poll_after_seconds"):
        MockOptions(poll_after_seconds=0)


def test_poll_answers_without_hint_or_progress_on_request() -> None:
    """``--no-hint --no-progress``: answers as Replicate's predictions give them (the
    in-flight benchmark's case where the engine's first poll comes from the typical time)."""
    options = MockOptions(seed=1, send_hint=False, send_progress=False)
    with MockProviderServer(options) as server, httpx2.Client() as client:
        url, auth = server.url, {"Authorization": "Bearer key-aaaa"}
        _create(client, url, "key-aaaa", 0, 5.0)
        render_id = client.get(f"{url}/v1/renders", params={"client_token": "t0"},
                               headers=auth).json()["data"][0]["id"]
        # Read until the render runs (queued for its first second, then running for 4 s).
        for _ in range(20_000):
            poll = client.get(f"{url}/v1/renders/{render_id}", headers=auth)
            if poll.json()["status"] == "running":
                break
        assert poll.json()["status"] == "running"
    assert "progress" not in poll.json()
    assert "X-Poll-After" not in poll.headers
