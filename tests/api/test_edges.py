"""Issue 22's edges against the API served in this process: numbers past the journal's
range, empty and unknown query values, 405 with Allow, HEAD without a body, Last-Event-ID,
text that cannot be stored, deep JSON, one problem+json body for every refusal."""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator

import httpx2
import pytest

from tests.api.live_api import LiveApi

pytestmark = pytest.mark.integration

HUGE = "124000323357050994688"
TWO_63 = str(2**63)
MAX = str(2**63 - 1)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveApi]:
    with LiveApi(tmp_path_factory.mktemp("edges")) as api:
        yield api


@pytest.fixture
def client(live: LiveApi) -> Iterator[httpx2.Client]:
    with live.client() as client:
        yield client


def assert_problem(response: httpx2.Response, status: int, names: str | None = None) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == status and body["title"] and body["detail"]
    assert body["type"] == "about:blank" and body["error"] == body["detail"]
    if names is not None:
        assert names in body["fields"], body
        assert names in body["detail"]


@pytest.mark.parametrize("path", [
    f"/v1/jobs/{HUGE}", f"/v1/jobs/{TWO_63}", "/v1/jobs/0", "/v1/jobs/-1", "/v1/jobs/1_0",
    "/v1/jobs/%20 7", "/v1/jobs/+7", "/v1/jobs/\u0667", "/v1/jobs/abc",
    f"/v1/jobs/{HUGE}/video"])
def test_a_job_id_outside_the_journals_range_is_a_422_naming_it(
        client: httpx2.Client, path: str) -> None:
    assert_problem(client.get(path), 422, "job_id")


@pytest.mark.parametrize("action", ["cancel", "retry"])
def test_cancel_and_retry_of_a_huge_id(client: httpx2.Client, action: str) -> None:
    assert_problem(client.post(f"/v1/jobs/{HUGE}/{action}"), 422, "job_id")
    assert_problem(client.post(f"/v1/jobs/{MAX}/{action}"), 404)  # in range, absent


@pytest.mark.parametrize(("query", "field"), [
    (f"cursor={HUGE}", "cursor"), (f"cursor={TWO_63}", "cursor"), ("cursor=-1", "cursor"),
    ("cursor=", "cursor"), (f"batch={HUGE}", "batch"), ("batch=0", "batch"),
    ("limit=0", "limit"), ("limit=501", "limit"), ("limit=", "limit"),
    ("state=", "state"), ("state=queued", "state"), ("state=NOPE", "state"),
    ("state=QUEUED&state=", "state")])
def test_query_values_outside_their_range_are_a_422_naming_them(
        client: httpx2.Client, query: str, field: str) -> None:
    assert_problem(client.get(f"/v1/jobs?{query}"), 422, field)


def test_the_largest_values_are_answered(client: httpx2.Client) -> None:
    listed = client.get(f"/v1/jobs?cursor={MAX}&batch={MAX}&limit=500&state=QUEUED"
                        "&state=FAILED")
    assert listed.status_code == 200 and listed.json() == {"jobs": [], "next_cursor": None}
    assert_problem(client.get(f"/v1/jobs/{MAX}"), 404)


@pytest.mark.parametrize(("method", "path", "allow"), [
    ("PUT", "/v1/jobs", {"GET", "HEAD", "POST"}), ("TRACE", "/v1/jobs/1", {"GET", "HEAD"}),
    ("DELETE", "/v1/jobs/1/cancel", {"POST"}), ("PATCH", "/v1/events", {"GET", "HEAD"}),
    ("POST", "/v1/health", {"GET", "HEAD"})])
def test_405_names_the_allowed_methods(client: httpx2.Client, method: str, path: str,
                                       allow: set[str]) -> None:
    response = client.request(method, path)
    assert_problem(response, 405)
    assert {m.strip() for m in response.headers["Allow"].split(",")} == allow


def test_aiohttps_own_refusals_are_problems_too(client: httpx2.Client) -> None:
    assert_problem(client.get("/v1/nothing-here"), 404)
    assert_problem(client.post("/v1/jobs", content=b"{" + b" " * (1024 * 1024 + 1) + b"}",
                               headers={"Content-Type": "application/json"}), 413)
    with httpx2.Client(base_url=client.base_url) as anonymous:
        refused = anonymous.get("/v1/jobs")
    assert_problem(refused, 401)
    assert refused.headers["WWW-Authenticate"].startswith("Bearer")


def _head_then_health(live: LiveApi, path: str, headers: dict[str, str]) -> tuple[
        http.client.HTTPResponse, bytes, int, object]:
    """HEAD ``path`` and then GET /v1/health on the same connection: a body sent with the
    HEAD answer would be read as the second answer's status line."""
    host, port = live.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request("HEAD", path, headers={"Authorization": f"Bearer {live.token}",
                                                  **headers})
        head = connection.getresponse()
        head_body = head.read()
        connection.request("GET", "/v1/health")
        second = connection.getresponse()
        return head, head_body, second.status, json.loads(second.read())
    finally:
        connection.close()


@pytest.mark.parametrize("path", ["/v1/events", "/v1/jobs", "/v1/accounts"])
def test_head_answers_headers_only(live: LiveApi, path: str) -> None:
    head, body, status, health = _head_then_health(live, path, {})
    assert head.status == 200 and body == b""
    assert status == 200 and isinstance(health, dict) and health["status"] == "up"


def test_head_of_events_has_the_streams_headers(live: LiveApi) -> None:
    head, _, _, _ = _head_then_health(live, "/v1/events", {"Last-Event-ID": "0"})
    assert head.getheader("Content-Type", "").startswith("text/event-stream")


@pytest.mark.parametrize("value", [TWO_63, HUGE, "abc", "-1", "1.5", "", "7 8", "0x10"])
def test_a_last_event_id_that_is_not_an_event_id_is_a_400(client: httpx2.Client,
                                                           value: str) -> None:
    response = client.get("/v1/events", headers={"Last-Event-ID": value})
    assert_problem(response, 400, "Last-Event-ID")


def test_the_largest_last_event_id_streams(client: httpx2.Client) -> None:
    with client.stream("GET", "/v1/events", headers={"Last-Event-ID": MAX}) as stream:
        assert stream.status_code == 200
        first = next(stream.iter_lines())
    assert first == ": connected"


def _raw_json(body: object) -> bytes:
    return json.dumps(body).encode()  # ensure_ascii: a lone surrogate goes as \\ud800


@pytest.mark.parametrize("body", [
    {"prompt": "a lone \ud800 surrogate"}, {"prompt": "a NUL \x00 here"},
    {"prompt": "x", "name": "\udfff"}, {"prompt": "x", "params": {"model": "m\x00"}},
    {"prompt": "x", "params": {"\ud800": 1}}, {"prompt": "x", "batch": "b\ud83d"}])
def test_text_that_cannot_be_stored_is_refused(client: httpx2.Client,
                                               body: dict[str, object]) -> None:
    response = client.post("/v1/jobs", content=_raw_json(body),
                           headers={"Content-Type": "application/json"})
    assert_problem(response, 422)
    assert "cannot be stored" in response.json()["detail"]


def test_a_surrogate_pair_is_ordinary_text(client: httpx2.Client) -> None:
    made = client.post("/v1/jobs", content=_raw_json({"prompt": "a whale \U0001f40b"}),
                       headers={"Content-Type": "application/json"})
    assert made.status_code == 201, made.text
    assert client.get(f"/v1/jobs/{made.json()['id']}").json()["prompt"] == "a whale \U0001f40b"


@pytest.mark.parametrize("depth", [33, 1000, 100_000])
def test_deeply_nested_json_is_a_400(client: httpx2.Client, depth: int) -> None:
    deep = b'{"prompt": "x", "params": ' + b"[" * depth + b"]" * depth + b"}"
    assert_problem(client.post("/v1/jobs", content=deep,
                               headers={"Content-Type": "application/json"}), 400)
    batch = b"[" * depth + b"]" * depth
    assert_problem(client.post("/v1/batches", content=batch,
                               headers={"Content-Type": "application/json"}), 400)


def test_a_batch_with_text_that_cannot_be_stored_is_refused(client: httpx2.Client) -> None:
    rows = [{"prompt": "fine"}, {"prompt": "bad \ud800"}]
    response = client.post("/v1/batches", content=_raw_json(rows),
                           headers={"Content-Type": "application/json"})
    assert_problem(response, 422)
    assert "item 2" in response.json()["detail"]
    named = client.post("/v1/batches?filename=a%ED%A0%80.csv", content=b"prompt\nx\n",
                        headers={"Content-Type": "text/csv"})
    assert named.status_code in (201, 422), named.text  # stored as text, or refused
    assert client.post("/v1/jobs", json={"prompt": "x"},
                       headers={"Idempotency-Key": b"k\xff"}).status_code in (201, 422)


def test_an_unknown_dry_run_word_is_a_422(client: httpx2.Client) -> None:
    assert_problem(client.post("/v1/batches?dry_run=maybe&filename=a.csv",
                               content=b"prompt\nx\n"), 422, "dry_run")


def test_after_is_checked_even_beside_a_last_event_id(client: httpx2.Client) -> None:
    response = client.get(f"/v1/events?after={TWO_63}", headers={"Last-Event-ID": "0"})
    assert_problem(response, 422, "after")


def test_a_request_the_parser_refuses_is_logged_without_its_bytes(
        live: LiveApi, caplog: pytest.LogCaptureFixture) -> None:
    secret = "rq_0000000000000000_" + "s3cr3t" * 6
    with socket.create_connection(("127.0.0.1", live.port), timeout=10) as sock:
        sock.sendall(f"GET /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                     f"{secret}\r\nX-Probe: a\x00b\r\n\r\n".encode())
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.split(b"\r\n", 1)[0].endswith(b" 400 Bad Request")
    assert secret.encode() not in answer
    logged = "\n".join(r.getMessage() + str(r.exc_info) + str(r.exc_text)
                       for r in caplog.records)
    assert "malformed HTTP request (BadHttpMessage)" in logged
    assert secret not in logged and "Traceback" not in logged


def test_each_server_sent_event_matches_the_documented_event_schema(
        client: httpx2.Client) -> None:
    """Schemathesis (ST108) read each event of ``GET /v1/events`` against the stream's
    schema, which said ``string``: the document now describes one event (id, event, data
    holding a ledger entry in JSON) and the served events match it."""
    import jsonschema

    document = client.get("/v1/openapi.json").json()
    content = document["paths"]["/v1/events"]["get"]["responses"]["200"]["content"]
    schemas = document["components"]["schemas"]
    event_schema = {**content["text/event-stream"]["schema"], "components": {
        "schemas": schemas}}
    data_schema = {**schemas["ServerSentEvent"]["properties"]["data"]["contentSchema"],
                   "components": {"schemas": schemas}}
    created = client.post("/v1/jobs", json={"prompt": "an event to read"},
                          headers={"Idempotency-Key": "sse-schema"})
    assert created.status_code in (200, 201), created.text
    job_id = created.json()["id"]
    assert client.post(f"/v1/jobs/{job_id}/cancel").status_code == 200
    events: list[dict[str, str]] = []
    with client.stream("GET", "/v1/events", headers={"Last-Event-ID": "0"}) as stream:
        event: dict[str, str] = {}
        for line in stream.iter_lines():
            if line.startswith(":"):
                continue
            if not line:
                if event:
                    events.append(event)
                    if json.loads(event["data"]).get("job_id") == job_id and \
                            event["event"] == "cancelled":
                        break
                event = {}
                continue
            field, _, value = line.partition(": ")
            event[field] = value
    assert events
    for event in events:
        jsonschema.validate(event, event_schema, cls=jsonschema.Draft202012Validator)
        jsonschema.validate(json.loads(event["data"]), data_schema,
                            cls=jsonschema.Draft202012Validator)
    assert not jsonschema.Draft202012Validator(event_schema).is_valid("id: 1\ndata: {}")
