"""A sentinel API key, stored through the real OS keyring, never shows up anywhere else:
not in the journal (or its WAL), the logs, command output, status, export, or error texts —
also when the provider echoes the request (headers included) in an error."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import pytest

from reelqueue.credentials.keystore import KeyStore
from reelqueue.domain.errors import KeyringUnavailable
from tests.cli.test_cli_e2e import mock_process, rq, write_sheet

pytestmark = pytest.mark.integration


def require_keyring() -> None:
    try:
        KeyStore().check_available()
    except KeyringUnavailable as exc:
        if os.environ.get("REELQUEUE_REQUIRE_SECRET_SERVICE") == "1":
            raise
        pytest.skip(f"no OS keyring here ({str(exc).splitlines()[0]}); CI runs this under "
                    "scripts/ci-secret-service.sh")


def test_a_sentinel_key_appears_nowhere(tmp_path: Path) -> None:
    require_keyring()
    sentinel = "rq-sentinel-" + secrets.token_hex(16)
    data = tmp_path / "data"
    outputs: list[str] = []
    with mock_process("--accept-key", sentinel, "--render-seconds-min", "0.1",
                      "--render-seconds-max", "0.3") as url:
        wrong = rq(data, "accounts", "add", "wrong", "--provider", "mock", "--base-url", url,
                   stdin="not-the-key\n")
        assert wrong.returncode == 2 and "key rejected" in (wrong.stdout + wrong.stderr)
        added = rq(data, "accounts", "add", "keyed", "--provider", "mock", "--base-url", url,
                   stdin=sentinel + "\n")
        assert added.returncode == 0, added.stderr
        assert "key in the OS keyring" in added.stdout
        try:
            sheet = write_sheet(tmp_path / "s.csv", [
                "a quiet harbour at dawn",
                "the provider quotes our request [[mock:echo_request]]",
                "refused [[mock:content_policy]]"])
            for args in (["run", str(sheet), "--no-progress"], ["status"],
                         ["status", "--json"], ["doctor"], ["accounts", "list"],
                         ["accounts", "test", "keyed"],
                         ["export", "1", "--format", "csv", str(tmp_path / "out.csv")],
                         ["export", "1", "--format", "xlsx", str(tmp_path / "out.xlsx")]):
                result = rq(data, *args)
                outputs += [result.stdout, result.stderr]
                assert result.returncode == 0, (args, result.stdout, result.stderr)
            assert KeyStore().get_key("account:keyed") == sentinel, "the key is in the keyring"
        finally:
            removed = rq(data, "accounts", "remove", "keyed")
            outputs += [removed.stdout, removed.stderr]
    status = "".join(outputs)
    assert "Bad request. You sent:" in status, "the echo row really failed"
    assert "Authorization: Bearer" in status, "the provider's echo reached the error text"
    assert sentinel not in status
    needle = sentinel.encode()
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name.startswith("journal.sqlite3") for p in files)
    assert any(p.suffix == ".log" for p in files)
    leaks = [str(p) for p in files if needle in p.read_bytes()]
    assert leaks == []
    assert KeyStore().get_key("account:keyed") is None, "removing the account removed its key"
