"""``accounts add`` with keys no ASCII-only code expected (issue 22): a key an HTTP header
can carry (Latin-1) is stored and sent byte for byte; one it cannot (another alphabet, an
emoji, NUL, a line break, 10 KB) is refused with the reason in plain words, exit 2, nothing
stored, no traceback. The key itself is never in the output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.providers.adapters._client import ApiClient
from reelqueue.providers.base import ProviderConfig
from reelqueue.providers.key_text import key_text_problem
from tests.cli.test_cli_e2e import mock_process
from tests.proof.harness import child_env
from tests.team.file_keyring import BACKEND, FILE_ENV

pytestmark = pytest.mark.integration


def add(data: Path, keyring_file: Path, name: str, url: str, key: str,
        *extra: str) -> subprocess.CompletedProcess[str]:
    env = child_env()
    env["PYTHON_KEYRING_BACKEND"] = BACKEND
    env[FILE_ENV] = str(keyring_file)
    return subprocess.run(
        [sys.executable, "-m", "reelqueue", "--data-dir", str(data), "accounts", "add", name,
         "--provider", "mock", "--base-url", url, *extra],
        input=key, capture_output=True, text=True, timeout=120, env=env, check=False)


def stored_keys(keyring_file: Path) -> list[str]:
    if not keyring_file.exists():
        return []
    """The secrets stored (each as JSON text), without the host bindings kept beside them
    (issue 21: ``binding:<entry>``, which name a provider kind and host, not a key)."""
    entries = json.loads(keyring_file.read_text("utf-8"))
    return [json.dumps(v) for k, v in entries.items() if not k.partition("/")[2].startswith(
        "binding:")]


REFUSED = {
    "cyrillic": ("sk-ключ-7f3a9c", "outside Latin-1"),
    "emoji": ("sk-live-\U0001f511-7f3a9c", "outside Latin-1"),
    "nul": ("sk-live\x007f3a9c", "NUL"),
    "newline": ("sk-live-7f3a\n9c-second-line", "line break"),
    "ten_kb": ("sk-" + "a7" * 5_000, "characters long"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
@pytest.mark.parametrize("check", [True, False], ids=["checked", "no_check"])
def test_a_key_no_header_can_carry_is_refused_plainly(tmp_path: Path, case: str,
                                                      check: bool) -> None:
    key, why = REFUSED[case]
    keyring_file = tmp_path / "keyring.json"
    with mock_process() as url:
        result = add(tmp_path / "data", keyring_file, "acct", url, key + "\n",
                     *(() if check else ("--no-check",)))
    output = result.stdout + result.stderr
    assert result.returncode == 2, "a plain refusal (the user's input), not exit 70"
    assert "This API key cannot be used" in output and why in output
    assert "Traceback" not in output and "unexpected error" not in output
    assert key.strip() not in output and key[:10] not in output, "the key is never echoed"
    assert stored_keys(keyring_file) == [], "nothing reached the keyring"
    listed = subprocess.run(
        [sys.executable, "-m", "reelqueue", "--data-dir", str(tmp_path / "data"),
         "accounts", "list"], capture_output=True, text=True, timeout=60, env=child_env(),
        check=False)
    assert "acct" not in listed.stdout, "no account was added"


def test_a_latin1_key_is_stored_and_sent_byte_for_byte(tmp_path: Path) -> None:
    key = "sk-café-ñ-7f3a9c"
    keyring_file = tmp_path / "keyring.json"
    # The mock accepts only this key: it reads the header as Latin-1 (http.server), so
    # the check passes only when the bytes sent are the key's Latin-1 bytes.
    with mock_process("--accept-key", key) as url:
        wrong = add(tmp_path / "data", keyring_file, "other", url, "sk-cafe-n-7f3a9c\n")
        added = add(tmp_path / "data", keyring_file, "acct", url, key + "\n")
    assert wrong.returncode == 2 and "key rejected" in (wrong.stdout + wrong.stderr), \
        "the mock really tells keys apart"
    assert added.returncode == 0, "the Latin-1 key is accepted"
    assert "key accepted by the provider" in added.stdout
    assert key not in added.stdout + added.stderr
    assert stored_keys(keyring_file) == [json.dumps(key)], "stored exactly as given"


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_stored_key_that_cannot_be_sent_pauses_the_account_without_a_traceback(
        case: str) -> None:
    """A key stored before this check (or by another tool) is an account-level refusal
    naming why, not an encoding error inside httpx."""
    key = REFUSED[case][0]
    assert key_text_problem(key) is not None
    sent: list[httpx2.Request] = []

    async def call() -> None:
        def handler(request: httpx2.Request) -> httpx2.Response:
            sent.append(request)
            return httpx2.Response(200, json={})

        async with httpx2.AsyncClient(transport=httpx2.MockTransport(handler)) as client:
            api = ApiClient(client, ProviderConfig("acct", "https://api.example", key),
                            title="Example", default_base_url=None)
            await api.request("GET", "/v1/account")

    import asyncio

    with pytest.raises(ProviderError) as caught:
        asyncio.run(call())
    assert caught.value.error_class == ErrorClass.ACCOUNT
    assert caught.value.label == ErrorLabel.KEY_REJECTED
    assert "cannot be sent" in str(caught.value) and key not in str(caught.value)
    assert sent == [], "nothing left with the key"
