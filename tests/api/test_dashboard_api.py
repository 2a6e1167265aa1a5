"""The web dashboard's routes (issue 37) on a served API with a real journal: a job's
history in the window's words (and where the ledger was pruned), batches counted by
state, the needs-attention list, a retry's plan and price before acting, resolve, pause
and resume of a batch and of an account, search, machines, thumbnails and short-lived
links; scopes (a read token acts on nothing: 403); the page's safety headers on every
answer; an event stream of a revoked token ends within 5 s."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import jsonschema
import pytest

from reelqueue.api.dashboard import CSP
from reelqueue.api.links import FileLinks
from reelqueue.api.openapi import openapi_document
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.store.base import this_host
from reelqueue.store.sqlite import SqliteStore
from reelqueue.store.tokens import TokenStore
from tests.api.live_api import LiveApi

pytestmark = pytest.mark.integration

SAMPLE = Path(__file__).resolve().parents[2] / "resources" / "sample.mp4"
HOSTILE = "<img src=x onerror=alert(1)> \u202e evil"


def check(body: object, name: str) -> None:
    document = openapi_document()
    jsonschema.Draft202012Validator(
        {"$ref": f"#/components/schemas/{name}", "components": document["components"]}
    ).validate(body)


def _sql(journal: Path, statement: str, *args: object) -> None:
    db = sqlite3.connect(journal)
    with db:
        db.execute(statement, args)
    db.close()


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveApi]:
    """Two batches: 'shots' (done, failed, parked, unknown, waiting) and 'more' (two
    waiting), an account 'acct'; a read token beside the admin one."""
    api = LiveApi(tmp_path_factory.mktemp("dashboard"))
    journal = api.ctx.journal_path
    store = SqliteStore.open(journal, now=1.0)
    shots = store.create_batch(BatchSpec("shots", "s.csv", "shots"), 1.0)
    store.add_jobs(shots.id, [
        JobSpec(f"k{i}", prompt, "mock", f"shots/{i}.mp4", name=name,
                params={"model": "mock-1", "duration": 5}, metadata={"price": 0.05})
        for i, (name, prompt) in enumerate([
            ("done", "a lighthouse at dusk"), ("failed", "a red fox in snow"),
            ("parked", HOSTILE), ("unknown", "a boat"), ("waiting", "a lighthouse far")])
    ], 1.0)
    more = store.create_batch(BatchSpec("more", "m.csv", "more"), 2.0)
    store.add_jobs(more.id, [JobSpec(f"m{i}", f"more {i}", "mock", f"more/{i}.mp4")
                             for i in range(2)], 2.0)
    store.add_account(AccountSpec("acct", "mock", 2, "http://127.0.0.1:9"), 1.0)
    store.close()
    (api.ctx.videos_dir / "shots").mkdir(parents=True)
    shutil.copy(SAMPLE, api.ctx.videos_dir / "shots" / "0.mp4")
    digest = hashlib.sha256(SAMPLE.read_bytes()).hexdigest()
    _sql(journal, "UPDATE jobs SET state = 'COMPLETED', finished_at = 1, output_size = ?, "
                  "output_sha256 = ?, output_host = ? WHERE job_key = 'k0'",
         SAMPLE.stat().st_size, digest, this_host())
    _sql(journal, "UPDATE jobs SET state = 'FAILED', finished_at = 1, attempts = 3, "
                  "error_label = 'provider error', error_message = 'javascript:alert(1)' "
                  "WHERE job_key = 'k1'")
    _sql(journal, "UPDATE jobs SET state = 'PARKED', provider_job_id = 'pj-9', "
                  "client_token = 'ct-2', account = 'acct', error_label = 'parked' "
                  "WHERE job_key = 'k2'")
    _sql(journal, "UPDATE jobs SET state = 'PARKED', client_token = 'ct-3', "
                  "account = 'acct', error_label = 'submit outcome unknown' WHERE job_key = 'k3'")
    tokens = TokenStore(journal)
    try:
        api.read_token = tokens.add("viewer", "read", 0.0)  # type: ignore[attr-defined]
    finally:
        tokens.close()
    with api:
        yield api


@pytest.fixture
def client(live: LiveApi) -> Iterator[httpx2.Client]:
    with live.client() as client:
        yield client


@pytest.fixture
def reader(live: LiveApi) -> Iterator[httpx2.Client]:
    with live.client(live.read_token) as client:  # type: ignore[attr-defined]
        yield client


def test_a_jobs_history_is_in_the_windows_words_and_says_where_it_was_pruned(
        live: LiveApi, client: httpx2.Client) -> None:
    whole = client.get("/v1/jobs/2/history")
    assert whole.status_code == 200, whole.text
    body = whole.json()
    check(body, "History")
    assert body["pruned_before"] is None
    assert client.post("/v1/jobs/7/cancel").json()["cancelled"]
    (cancelled,) = client.get("/v1/jobs/7/history").json()["entries"]
    assert (cancelled["event"], cancelled["words"]) == ("cancelled", "cancelled")
    assert cancelled["detail"] == "was: queued"  # the state's one name
    # The ledger pruned by age: its oldest rows go (the batches' import, before the jobs'
    # first entries); the history says from when it is whole.
    _sql(live.ctx.journal_path, "DELETE FROM ledger WHERE at < 100")
    db = sqlite3.connect(live.ctx.journal_path)
    (oldest,) = db.execute("SELECT MIN(at) FROM ledger").fetchone()
    db.close()
    assert client.get("/v1/jobs/2/history").json()["pruned_before"] == oldest
    assert client.get("/v1/jobs/999/history").status_code == 404


def test_batches_are_counted_by_state_and_paused_and_resumed(
        client: httpx2.Client, reader: httpx2.Client) -> None:
    answer = client.get("/v1/batches")
    assert answer.status_code == 200, answer.text
    check(answer.json(), "Batches")
    shots, more = answer.json()["batches"]
    assert shots["name"] == "shots" and shots["jobs"] == 5
    assert shots["counts"] == {"COMPLETED": 1, "FAILED": 1, "PARKED": 2, "QUEUED": 1}
    assert more["counts"] == {"QUEUED": 1, "CANCELLED": 1} and not more["paused"]
    assert answer.json()["by_account"] == {"acct": {"PARKED": 2}}
    assert answer.json()["state_names"]["QUEUED"] == "queued"
    assert reader.post(f"/v1/batches/{more['id']}/pause").status_code == 403
    paused = client.post(f"/v1/batches/{more['id']}/pause")
    assert paused.json() == {"id": more["id"], "paused": True}
    assert client.get("/v1/batches").json()["batches"][1]["paused"] is True
    assert client.post(f"/v1/batches/{more['id']}/resume").json()["paused"] is False
    assert client.post("/v1/batches/999/pause").status_code == 404


def test_the_needs_attention_list_says_what_the_user_can_do(client: httpx2.Client) -> None:
    answer = client.get("/v1/attention")
    assert answer.status_code == 200, answer.text
    check(answer.json(), "Attention")
    jobs = {j["name"]: j for j in answer.json()["jobs"]}
    assert set(jobs) == {"parked", "unknown"}
    assert jobs["parked"]["prompt"] == HOSTILE  # data, never interpreted by the API
    assert not jobs["parked"]["unknown"] and jobs["parked"]["what_to_do"]
    assert jobs["unknown"]["unknown"]
    assert "resolve 4" in jobs["unknown"]["what_to_do"]


def test_a_retry_shows_its_price_first_then_requeues(
        client: httpx2.Client, reader: httpx2.Client) -> None:
    plan = reader.get("/v1/jobs/2/retry-plan")  # a read token may look
    assert plan.status_code == 200, plan.text
    check(plan.json(), "RetryPlan")
    assert plan.json()["retryable"] and plan.json()["pays"]
    assert plan.json()["price"] == "est. $0.05"
    assert reader.post("/v1/jobs/2/retry").status_code == 403  # but not act
    assert client.get("/v1/jobs/2").json()["state"] == "FAILED"  # looking wrote nothing
    assert client.post("/v1/jobs/2/retry").json()["requeued"] is True
    assert client.get("/v1/jobs/2").json()["state"] == "QUEUED"
    done = client.get("/v1/jobs/1/retry-plan").json()
    assert not done["retryable"] and done["price"] is None


def test_resolve_only_an_unknown_create_with_a_render_or_by_creating_it_again(
        client: httpx2.Client, reader: httpx2.Client) -> None:
    assert reader.post("/v1/jobs/4/resolve/create-again").status_code == 403
    assert reader.post("/v1/jobs/4/resolve/render?render=r-1").status_code == 403
    assert client.post("/v1/jobs/4/resolve/render").status_code == 422
    assert client.post("/v1/jobs/4/resolve/render?render=%20").status_code == 422
    assert client.post("/v1/jobs/3/resolve/create-again").status_code == 409  # parked
    assert client.post("/v1/jobs/3/resolve/render?render=r-1").status_code == 409
    answer = client.post("/v1/jobs/4/resolve/create-again")
    assert answer.status_code == 200, answer.text
    check(answer.json(), "Resolved")
    assert "may already be charged" in answer.json()["summary"]
    assert client.get("/v1/jobs/4").json()["state"] == "QUEUED"


def test_an_account_is_paused_and_resumed(live: LiveApi, client: httpx2.Client,
                                          reader: httpx2.Client) -> None:
    assert reader.post("/v1/accounts/acct/pause").status_code == 403
    assert client.post("/v1/accounts/acct/pause").json() == {"name": "acct",
                                                             "enabled": False}
    account = client.get("/v1/accounts").json()["accounts"][0]
    assert account["enabled"] is False
    assert client.post("/v1/accounts/acct/resume").json()["enabled"] is True
    assert client.post("/v1/accounts/nobody/pause").status_code == 404


def test_search_finds_words_in_prompts_and_names_paged_on_the_server(
        client: httpx2.Client) -> None:
    found = client.get("/v1/jobs", params={"q": "LIGHTHOUSE"}).json()
    assert [j["name"] for j in found["jobs"]] == ["done", "waiting"]
    first = client.get("/v1/jobs", params={"q": "lighthouse", "limit": 1}).json()
    assert [j["name"] for j in first["jobs"]] == ["done"] and first["next_cursor"] == 1
    rest = client.get("/v1/jobs", params={"q": "lighthouse", "limit": 1,
                                          "cursor": first["next_cursor"]}).json()
    assert [j["name"] for j in rest["jobs"]] == ["waiting"]
    assert client.get("/v1/jobs", params={"q": "fox failed"}).json()["jobs"][0]["id"] == 2
    assert client.get("/v1/jobs", params={"q": "x" * 201}).status_code == 422


def test_a_token_knows_its_scope(client: httpx2.Client, reader: httpx2.Client) -> None:
    assert client.get("/v1/token").json() == {"name": "fuzz", "scope": "admin"}
    assert reader.get("/v1/token").json() == {"name": "viewer", "scope": "read"}


def test_the_machines_are_listed_with_their_heartbeats(client: httpx2.Client) -> None:
    answer = client.get("/v1/instances")
    assert answer.status_code == 200, answer.text
    check(answer.json(), "Machines")
    (machine,) = answer.json()["machines"]
    assert machine["this_machine"] and machine["state"] == "running"
    # Which providers this machine has (issue 36): the built-ins at least, checked by
    # the schema (a list of at most 64 names, or null for unknown).
    assert {"mock", "runway", "veo"} <= set(machine["providers"])


def test_a_thumbnail_and_short_lived_links_serve_one_file_to_get_only(
        live: LiveApi, client: httpx2.Client, reader: httpx2.Client) -> None:
    picture = reader.get("/v1/jobs/1/thumbnail")
    assert picture.status_code == 200, picture.text
    assert picture.headers["content-type"] == "image/png"
    assert picture.content.startswith(b"\x89PNG\r\n\x1a\n")
    assert client.get("/v1/jobs/2/thumbnail").status_code == 409
    made = reader.post("/v1/jobs/1/links", params={"kind": "video"})
    assert made.status_code == 201, made.text
    check(made.json(), "FileLink")
    url = made.json()["url"]
    assert url.startswith("/links/") and made.json()["expires_at"] > time.time() + 60
    with httpx2.Client(base_url=live.url) as anonymous:  # no token: the link is enough
        whole = anonymous.get(url)
        assert whole.status_code == 200 and whole.content == SAMPLE.read_bytes()
        part = anonymous.get(url, headers={"Range": "bytes=0-9"})
        assert part.status_code == 206 and part.content == SAMPLE.read_bytes()[:10]
        assert anonymous.post(url).status_code == 405
        assert anonymous.get("/links/" + "A" * 43).status_code == 404
        token = url.removeprefix("/links/")
        bearer = {"Authorization": f"Bearer {token}"}
        assert anonymous.get("/v1/jobs", headers=bearer).status_code == 401
        thumb = reader.post("/v1/jobs/1/links", params={"kind": "thumbnail"}).json()["url"]
        assert anonymous.get(thumb).content == picture.content
    assert reader.post("/v1/jobs/2/links").status_code == 409
    assert reader.post("/v1/jobs/1/links", params={"kind": "file"}).status_code == 422


def test_a_link_expires_and_the_table_is_bounded() -> None:
    now = [100.0]
    links = FileLinks(clock=lambda: now[0], seconds=60, max_links=3)
    first = links.issue(1, "video")
    assert links.find(first.token) == first
    now[0] += 61
    assert links.find(first.token) is None
    made = [links.issue(i, "thumbnail") for i in range(5)]
    assert len(links) == 3 and links.find(made[0].token) is None
    assert links.find(made[4].token) is not None
    assert len({link.token for link in made}) == 5


def test_every_answer_carries_the_pages_safety_headers(
        live: LiveApi, client: httpx2.Client) -> None:
    with httpx2.Client(base_url=live.url) as anonymous:
        page = anonymous.get("/")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        assert 'lang="en"' in page.text
        for answer in (page, client.get("/v1/jobs"), anonymous.get("/v1/jobs"),
                       anonymous.get("/static/nothing.js")):
            assert answer.headers["content-security-policy"] == CSP
            assert answer.headers["x-content-type-options"] == "nosniff"
            assert answer.headers["referrer-policy"] == "no-referrer"
        for name in ("..%2Fserver.py", "%2E%2E", "index.html", "app.py", "x.JS"):
            assert anonymous.get(f"/static/{name}").status_code == 404, name


def test_an_event_stream_of_a_revoked_token_ends_within_5_s(live: LiveApi) -> None:
    tokens = TokenStore(live.ctx.journal_path)
    try:
        token = tokens.add("short-lived", "read", 0.0)
    finally:
        tokens.close()
    with live.client(token) as client, client.stream(
            "GET", "/v1/events", timeout=httpx2.Timeout(30.0)) as stream:
        assert stream.status_code == 200
        lines = stream.iter_lines()
        assert next(lines) == ": connected"
        tokens = TokenStore(live.ctx.journal_path)
        try:
            assert tokens.revoke("short-lived")
        finally:
            tokens.close()
        revoked = time.monotonic()
        for _line in lines:  # keep-alives until the server ends the stream
            assert time.monotonic() - revoked < 5.0, "the stream stayed open"
        assert time.monotonic() - revoked < 5.0
    with live.client(token) as client:
        assert client.get("/v1/events").status_code == 401
