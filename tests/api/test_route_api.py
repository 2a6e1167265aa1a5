"""Routes over the HTTP API (issue 24): ``POST /v1/batches`` takes ``route``,
``route_policy``, ``tolerance`` and ``route_on_policy`` (each refused with a 422 problem
naming it), previews each routed row's candidates and the worst case, and the job views
carry the provider used and the route. The imports here check keys, providers and the
batch's settings: the job's stored ``route`` is the store's part of issue 24, so a job
read back is checked through :func:`job_json` on a Job that carries one."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import httpx2
import jsonschema
import pytest

from reelqueue.api.openapi import openapi_document
from reelqueue.api.server import job_json
from reelqueue.domain.models import Job
from reelqueue.domain.routes import Candidate, Route, RoutePolicy, Tolerance
from reelqueue.domain.states import JobState
from tests.api.live_api import LiveApi

pytestmark = pytest.mark.integration

SHEET = (b"prompt,providers,duration\n"
         b"a cat on a boat,veo|runway|luma,7\n"
         b"a dog,runway,5\n"
         b"nowhere,veo|luma,7\n")


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveApi]:
    with LiveApi(tmp_path_factory.mktemp("routes")) as api:
        yield api


@pytest.fixture
def client(live: LiveApi) -> Iterator[httpx2.Client]:
    with live.client() as client:
        yield client


def check(body: object, name: str) -> None:
    """``body`` is valid by the served document's schema ``name``."""
    document = openapi_document()
    jsonschema.Draft202012Validator(
        {"$ref": f"#/components/schemas/{name}", "components": document["components"]}
    ).validate(body)


def upload(client: httpx2.Client, query: str, content: bytes = SHEET) -> httpx2.Response:
    return client.post(f"/v1/batches?{query}", content=content,
                       headers={"Content-Type": "text/csv"})


def test_a_dry_run_previews_each_candidate_and_the_worst_case(client: httpx2.Client) -> None:
    answer = upload(client, "dry_run=1&filename=shots.csv&route_policy=cheapest"
                            "&tolerance=nearest-duration")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    check(body, "BatchOutcome")
    first = body["preview"][0]
    assert first["provider"] == "luma" and first["params"]["duration"] == 5
    route = first["route"]
    assert route["providers"] == ["luma", "runway", "veo"]
    assert route["policy"] == "cheapest" and route["tolerance"] == "nearest-duration"
    assert [(c["provider"], c["price_usd"], c["changed"]) for c in route["candidates"]] == [
        ("luma", 0.3, {"duration": [7, 5]}), ("runway", 0.84, {}),
        ("veo", 3.2, {"duration": [7, 8]})]
    assert body["preview"][1]["route"] is None  # one provider: as before
    assert body["estimate"]["total_usd"] == pytest.approx(0.3 + 0.6 + 0.3)
    assert body["estimate"]["worst_case_usd"] == pytest.approx(3.2 + 0.6 + 3.2)
    assert body["estimate"]["routed_jobs"] == 2
    assert body["routing"] == {"route": [], "route_policy": "cheapest",
                               "tolerance": "nearest-duration", "route_on_policy": False}
    exact = upload(client, "dry_run=1&filename=shots.csv").json()
    assert [r["row"] for r in exact["refused_rows"]] == [4]
    assert "no provider of the route veo|luma" in exact["refused_rows"][0]["message"]
    assert exact["preview"][0]["route"]["left_out"] == [
        {"provider": "veo", "why": "column 'duration': 7 seconds is not offered by this "
                                  "provider (accepted: one of 4, 6, 8 seconds)"},
        {"provider": "luma", "why": "column 'duration': 7 seconds is not offered by this "
                                   "provider (accepted: one of 5, 10 seconds)"}]


@pytest.mark.parametrize(("query", "field", "words"), [
    ("route_policy=quickest", "route_policy", "one of order, cheapest, fastest, spread"),
    ("tolerance=loose", "tolerance", "one of exact, nearest-duration, nearest"),
    ("route_on_policy=maybe", "route_on_policy", "one of 0, 1"),
    ("route=veo", "route", "names one provider"),
    ("route=veo,nope", "route", "'nope', which is not a provider"),
    ("route=" + "|".join(f"p{i}" for i in range(20)), "route", "at most 12"),
    ("route=" + "v" * 2001, "route", "at most 2000 characters"),
    ("route=veo%00,runway", "route", "cannot be stored"),
])
def test_bad_route_values_are_a_422_naming_the_field(
        client: httpx2.Client, query: str, field: str, words: str) -> None:
    answer = upload(client, f"dry_run=1&filename=shots.csv&{query}")
    assert answer.status_code == 422, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    problem = answer.json()
    check(problem, "Problem")
    assert field in problem["fields"] and words in problem["detail"]


def test_a_json_batch_routes_by_its_provider_and_a_reupload_adds_nothing(
        client: httpx2.Client) -> None:
    rows = [{"prompt": "a red kite", "provider": "veo|runway", "params": {"duration": 8}},
            {"prompt": "a blue boat", "params": {"duration": 4}}]
    first = client.post("/v1/batches?name=kites&route=runway,luma&route_policy=cheapest",
                        json=rows)
    assert first.status_code == 201, first.text
    assert first.json()["added"] == 2
    assert first.json()["routing"]["route"] == ["runway", "luma"]
    jobs = {job["prompt"]: job for job in client.get(
        f"/v1/jobs?batch={first.json()['batch_id']}").json()["jobs"]}
    for job in jobs.values():
        check(job, "Job")
    # Each job is on its best candidate: runway ($0.96) is cheaper than veo ($3.20) at
    # 8 s; the blank provider took the batch route, where luma (5 or 10 s) cannot take 4 s.
    assert jobs["a red kite"]["provider"] == "runway"
    assert jobs["a blue boat"]["provider"] == "runway"
    # A re-upload without route settings reuses the batch's: nothing new.
    again = client.post("/v1/batches?name=kites", json=rows)
    assert again.status_code == 200, again.text
    assert (again.json()["added"], again.json()["already_present"]) == (0, 2)


def test_the_jobs_read_back_carry_their_route(client: httpx2.Client) -> None:
    rows = [{"prompt": "a green kite", "provider": "veo|runway", "params": {"duration": 7}}]
    first = client.post("/v1/batches?name=green&tolerance=nearest-duration", json=rows)
    assert first.status_code == 201, first.text
    (job,) = client.get(f"/v1/jobs?batch={first.json()['batch_id']}").json()["jobs"]
    check(job, "Job")
    assert job["provider"] == "veo" and job["params"]["duration"] == 8
    assert job["route"] == {"providers": ["veo", "runway"], "policy": "order",
                            "tolerance": "nearest-duration", "on_policy": False,
                            "refused": [], "left_out": []}
    assert client.get(f"/v1/jobs/{job['id']}").json()["route"] == job["route"]


def test_a_job_view_carries_the_provider_used_and_its_route() -> None:
    route = Route(RoutePolicy.ORDER,
                  (Candidate("veo", {"duration": 8}, 3.2, refused="duration refused"),
                   Candidate("runway", {"duration": 7}, 0.84)),
                  (("luma", "column 'duration': 7 seconds is not offered"),),
                  Tolerance.NEAREST_DURATION)
    job = Job(
        id=1, batch_id=1, job_key="route:x", row_number=2, name="cat", prompt="a cat",
        provider="runway", params={"duration": 7}, pinned_account=None, priority=0,
        output_path="shots/cat.mp4", state=JobState.QUEUED, attempts=0, max_attempts=3,
        account=None, claim_token=None, lease_owner=None, lease_until=None,
        client_token=None, provider_job_id=None, sub_status=None, progress=None,
        run_after=0.0, output_size=None, output_sha256=None, cost=None, error_class=None,
        error_label=None, error_message=None, created_at=0.0, updated_at=0.0,
        started_at=None, finished_at=None, metadata={}, route=route)
    view = job_json(job)
    check(view, "Job")
    assert view["provider"] == "runway"
    assert view["route"] == {
        "providers": ["veo", "runway"], "policy": "order", "tolerance": "nearest-duration",
        "on_policy": False, "refused": [{"provider": "veo", "why": "duration refused"}],
        "left_out": [{"provider": "luma",
                      "why": "column 'duration': 7 seconds is not offered"}]}
    unrouted = job_json(dataclasses.replace(job, route=None))
    check(unrouted, "Job")
    assert unrouted["route"] is None
