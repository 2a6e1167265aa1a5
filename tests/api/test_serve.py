"""The queue design's front-door checklist against a real ``reelqueue serve`` over TLS,
with an httpx client that verifies the pinned self-signed certificate."""

from __future__ import annotations

import hashlib
from pathlib import Path

import httpx2
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from tests.api.serve_harness import ServeProcess, make_token
from tests.proof.harness import cli, journal

pytestmark = pytest.mark.integration


def _ledger_size(data: Path) -> int:
    with journal(data) as store:
        return len(store.ledger())


def _ledger_events(data: Path) -> list[str]:
    with journal(data) as store:
        return [e.event for e in store.ledger()]


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / "data", tmp_path / "videos"


def test_the_same_key_twice_makes_one_job_and_another_body_is_a_conflict(
        folders: tuple[Path, Path]) -> None:
    data, videos = folders
    token = make_token(data, "script", "submit")
    with ServeProcess(data, videos, "--paused") as server, server.client(token) as client:
        body = {"prompt": "a lighthouse at dusk", "name": "lighthouse"}
        first = client.post("/v1/jobs", json=body, headers={"Idempotency-Key": "k-1"})
        again = client.post("/v1/jobs", json=body, headers={"Idempotency-Key": "k-1"})
        other = client.post("/v1/jobs", json={**body, "prompt": "a boat"},
                            headers={"Idempotency-Key": "k-1"})
        listed = client.get("/v1/jobs").json()
    assert first.status_code == 201 and first.json()["replay"] is False
    assert again.status_code == 200
    assert again.json() == {"id": first.json()["id"], "replay": True}
    assert other.status_code == 409
    assert "different request body" in other.json()["error"]
    assert [job["id"] for job in listed["jobs"]] == [first.json()["id"]]


def test_the_certificate_is_verified(folders: tuple[Path, Path], tmp_path: Path) -> None:
    data, videos = folders
    with ServeProcess(data, videos, "--paused") as server:
        cert = x509.load_pem_x509_certificate(server.cert.read_bytes())
        digest = hashlib.sha256(cert.public_bytes(serialization.Encoding.DER)).hexdigest()
        shown = ":".join(digest[i:i + 2] for i in range(0, 64, 2)).upper()
        assert f"TLS certificate fingerprint (SHA-256) {shown}" in server.output()
        assert oct(server.data.joinpath("api-key.pem").stat().st_mode & 0o777) == "0o600"
        with pytest.raises(httpx2.ConnectError) as refused:  # the system CAs do not know it
            httpx2.get(f"{server.url}/v1/health", timeout=30)
        assert "CERTIFICATE_VERIFY_FAILED" in str(refused.value)
        with server.client() as client:
            health = client.get("/v1/health").json()
    assert health == {"status": "up", "journal": "writable", "engine": "paused",
                      "active_renders": 0}


def test_submits_past_the_queue_limit_get_429_and_write_nothing(
        folders: tuple[Path, Path]) -> None:
    data, videos = folders
    token = make_token(data, "script", "submit")
    with ServeProcess(data, videos, "--paused", "--max-waiting", "3") as server, \
            server.client(token) as client:
        answers = [client.post("/v1/jobs", json={"prompt": f"shot {i}"},
                               headers={"Idempotency-Key": f"k{i}"}) for i in range(3)]
        assert [a.status_code for a in answers] == [201, 201, 201]
        before = _ledger_events(data)
        refused = [client.post("/v1/jobs", json={"prompt": f"more {i}"},
                               headers={"Idempotency-Key": f"m{i}"}) for i in range(5)]
        replay = client.post("/v1/jobs", json={"prompt": "shot 0"},
                             headers={"Idempotency-Key": "k0"})
        after = _ledger_events(data)
        listed = client.get("/v1/jobs").json()["jobs"]
    assert {r.status_code for r in refused} == {429}
    assert all(r.headers["Retry-After"].isdigit() for r in refused)
    assert "limit is 3" in refused[0].json()["error"]
    assert after == before  # nothing of a refused request reached the journal
    assert len(listed) == 3
    assert replay.status_code == 200 and replay.json()["id"] == answers[0].json()["id"]


def test_tokens_none_wrong_revoked_and_wrong_scope(folders: tuple[Path, Path]) -> None:
    data, videos = folders
    submitter = make_token(data, "script", "submit")
    reader = make_token(data, "dashboard", "read")
    doomed = make_token(data, "old-laptop", "admin")
    wrong = submitter[:-4] + ("AAAA" if not submitter.endswith("AAAA") else "BBBB")
    with ServeProcess(data, videos, "--paused") as server, server.client() as client:
        def post(token: str | None) -> int:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            return client.post("/v1/jobs", json={"prompt": "x"}, headers=headers).status_code

        assert post(None) == 401
        assert post(wrong) == 401
        assert post("rq_0000000000000000_nothing") == 401
        assert post(reader) == 403
        assert client.get("/v1/jobs", headers={"Authorization": f"Bearer {reader}"}
                          ).status_code == 200
        assert post(doomed) == 201
        assert cli(data, "tokens", "revoke", "old-laptop").returncode == 0
        assert post(doomed) == 401  # at once, while the server runs
        cancel = client.post("/v1/jobs/1/cancel",
                             headers={"Authorization": f"Bearer {submitter}"})
        assert cancel.status_code == 403
        assert post(submitter) == 201
        assert client.get("/v1/health").status_code == 200  # no token needed
    listed = cli(data, "tokens", "list").stdout
    assert "script\tsubmit" in listed and "old-laptop" not in listed
    # The token strings are in no file of the data folder (journal, WAL, logs, certs)
    # nor in the server's own output.
    files = [p for p in data.rglob("*") if p.is_file()] + [server.log_path]
    assert len(files) >= 3
    for token in (submitter, reader, doomed):
        secret = token.split("_", 2)[2].encode()  # after the id: it may hold "_" too
        found = [p for p in files if token.encode() in p.read_bytes()
                 or secret in p.read_bytes()]
        assert found == []


def test_bad_input_is_a_4xx_with_a_message_and_writes_nothing(
        folders: tuple[Path, Path]) -> None:
    data, videos = folders
    token = make_token(data, "script", "submit")
    with ServeProcess(data, videos, "--paused") as server, server.client(token) as client:
        before = _ledger_size(data)
        cases = {
            "malformed": client.post("/v1/jobs", content=b"{not json",
                                     headers={"Content-Type": "application/json"}),
            "not an object": client.post("/v1/jobs", json=["prompt"]),
            "unknown field": client.post("/v1/jobs", json={"prompt": "x", "colour": "red"}),
            "wrong type": client.post("/v1/jobs", json={"prompt": 5}),
            "bad duration": client.post("/v1/jobs",
                                        json={"prompt": "x", "params": {"duration": 999}}),
            "unknown provider": client.post("/v1/jobs",
                                            json={"prompt": "x", "provider": "nope"}),
            "huge prompt": client.post("/v1/jobs", json={"prompt": "x" * 30_000}),
            "huge body": client.post("/v1/jobs", content=b"{" + b" " * (2 * 1024 * 1024)
                                     + b"}", headers={"Content-Type": "application/json"}),
            "long key": client.post("/v1/jobs", json={"prompt": "x"},
                                    headers={"Idempotency-Key": "k" * 500}),
            "no job": client.get("/v1/jobs/99"),
            "bad cursor": client.get("/v1/jobs?cursor=abc"),
        }
        after = _ledger_size(data)
    statuses = {name: r.status_code for name, r in cases.items()}
    assert statuses == {
        "malformed": 400, "not an object": 422, "unknown field": 422, "wrong type": 422,
        "bad duration": 422, "unknown provider": 422, "huge prompt": 422, "huge body": 413,
        "long key": 422, "no job": 404, "bad cursor": 422}
    for name, response in cases.items():
        assert response.json()["error"], name
    assert cases["unknown field"].json()["fields"] == {"colour": "unknown field"}
    assert "out of range" in cases["bad duration"].json()["fields"]["duration"]
    assert after == before


def test_batches_upload_a_sheet_or_a_json_list_with_the_imports_rules(
        folders: tuple[Path, Path]) -> None:
    data, videos = folders
    token = make_token(data, "script", "submit")
    rows = [{"prompt": "a red kite", "name": "kite"},
            {"prompt": "a blue boat", "params": {"duration": 4}},
            {"prompt": "too long", "params": {"duration": 999}}]
    sheet = b"prompt,duration\nsunrise over hills,5\nrain on glass,6\n"
    with ServeProcess(data, videos, "--paused") as server, server.client(token) as client:
        before = _ledger_size(data)
        dry = client.post("/v1/batches?dry_run=1&filename=shots.csv", content=sheet,
                          headers={"Content-Type": "text/csv"})
        assert _ledger_size(data) == before  # a dry run writes nothing
        first = client.post("/v1/batches?name=kites", json=rows)
        again = client.post("/v1/batches?name=kites", json=rows)
        uploaded = client.post("/v1/batches?filename=shots.csv", content=sheet,
                               headers={"Content-Type": "text/csv"})
        nameless = client.post("/v1/batches", content=sheet,
                               headers={"Content-Type": "text/csv"})
        not_a_list = client.post("/v1/batches", json={"prompt": "x"})
        listed = client.get("/v1/jobs").json()["jobs"]
    assert dry.status_code == 200 and dry.json()["would_add"] == 2
    assert [p["prompt"] for p in dry.json()["preview"]] == ["sunrise over hills",
                                                           "rain on glass"]
    assert first.status_code == 201, first.text
    assert (first.json()["added"], first.json()["already_present"]) == (2, 0)
    assert [(r["row"], r["column"]) for r in first.json()["refused_rows"]] == [
        (4, "duration")]
    assert again.status_code == 200
    assert (again.json()["added"], again.json()["already_present"]) == (0, 2)
    assert uploaded.status_code == 201 and uploaded.json()["added"] == 2
    assert uploaded.json()["batch_id"] != first.json()["batch_id"]
    assert nameless.status_code == 422 and "filename" in nameless.json()["error"]
    assert not_a_list.status_code == 422
    assert len(listed) == 4
    assert not list((data / "uploads").iterdir())  # uploads are deleted after the import


def test_serve_refuses_what_it_cannot_do_safely(folders: tuple[Path, Path]) -> None:
    data, _ = folders
    plain = cli(data, "serve", "--listen", "0.0.0.0:0", "--no-tls")
    assert plain.returncode == 2 and "needs TLS" in plain.stderr
    half = cli(data, "serve", "--listen", "127.0.0.1:0", "--tls-cert", "c.pem")
    assert half.returncode == 2 and "go together" in half.stderr
    # A team database that cannot be reached is said so (serve on a team database: issue
    # 21, tests/team/test_serve_team.py), at once with --wait-for-database 0 (without it
    # serve waits for the database: tests/team/test_serve_waits.py).
    team = cli(data, "--store", "postgresql://127.0.0.1:1/none", "serve",
               "--wait-for-database", "0")
    assert team.returncode == 2 and "cannot be reached" in team.stderr, team.stderr
    assert "Waiting for it" not in team.stdout
