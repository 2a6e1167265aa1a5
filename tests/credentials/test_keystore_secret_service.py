"""KeyStore against a real Secret Service (gnome-keyring over D-Bus).

Skipped where no Secret Service is reachable, unless REELQUEUE_REQUIRE_SECRET_SERVICE=1
(CI), where that is a failure. CI runs these under ``scripts/ci-secret-service.sh run``,
which provides a private D-Bus session with a disposable, unlocked gnome-keyring.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
import secretstorage
from keyring.backends import SecretService

from reelqueue.credentials import KeyStore, key_ref_for

from .conftest import CI_SCRIPT, SENTINEL, skip_or_fail, subprocess_env

pytestmark = pytest.mark.integration


def secret_service_problem() -> str | None:
    """Why no Secret Service can be used here, or None."""
    if not sys.platform.startswith("linux"):
        return f"the Secret Service is Linux's keyring, this is {sys.platform}"
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    has_default_bus = bool(runtime) and Path(runtime or "", "bus").exists()
    if not os.environ.get("DBUS_SESSION_BUS_ADDRESS") and not has_default_bus:
        return "no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set)"
    try:
        SecretService.Keyring.priority  # noqa: B018  # connects and asks the bus
    except RuntimeError as exc:
        return f"no usable Secret Service on the D-Bus session bus ({exc})"
    return None


@pytest.fixture
def secret_service() -> SecretService.Keyring:
    problem = secret_service_problem()
    if problem is not None:
        skip_or_fail(problem)
    return SecretService.Keyring()


@pytest.fixture
def test_service() -> Iterator[str]:
    """A service name of its own, so a developer's real ReelQueue keys are never touched."""
    service = f"ReelQueue-test-{uuid.uuid4().hex[:12]}"
    yield service
    with closing(secretstorage.dbus_init()) as bus:
        for item in secretstorage.search_items(bus, {"service": service}):
            item.delete()


def stored_items(service: str, ref: str) -> list[tuple[str, bytes]]:
    """What the Secret Service itself holds for (service, ref), read without keyring."""
    with closing(secretstorage.dbus_init()) as bus:
        collection = secretstorage.get_default_collection(bus)
        assert not collection.is_locked()
        return [
            (item.get_label(), item.get_secret())
            for item in collection.search_items({"service": service, "username": ref})
        ]


def test_key_round_trips_through_the_secret_service(
    secret_service: SecretService.Keyring, test_service: str
) -> None:
    keystore = KeyStore(test_service, backend=secret_service)
    ref = key_ref_for("Studio A")
    assert keystore.check_available() == "Secret Service"
    assert keystore.get_key(ref) is None

    keystore.set_key(ref, f"  {SENTINEL}\n")
    assert keystore.get_key(ref) == SENTINEL
    assert [secret for _, secret in stored_items(test_service, ref)] == [SENTINEL.encode()]

    unicode_key = "sk-ключ-🔑-" + "x" * 100
    keystore.set_key(ref, unicode_key)  # replaces, does not add
    assert [secret for _, secret in stored_items(test_service, ref)] == [unicode_key.encode()]
    assert KeyStore(test_service, backend=SecretService.Keyring()).get_key(ref) == unicode_key

    other = key_ref_for("Studio B")
    keystore.set_key(other, "sk-other")
    assert keystore.get_key(ref) == unicode_key

    keystore.delete_key(ref)
    assert keystore.get_key(ref) is None
    assert stored_items(test_service, ref) == []
    keystore.delete_key(ref)  # missing is fine
    assert keystore.get_key(other) == "sk-other"


def test_keyring_chooses_the_secret_service_by_itself(
    secret_service: SecretService.Keyring, tmp_path: Path
) -> None:
    """A fresh process with keyring's own choice, as at start-up and in the smoke test."""
    code = "from reelqueue.credentials import KeyStore; print(KeyStore().check_available())"
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        env=subprocess_env(PYTHON_KEYRING_BACKEND=None, XDG_CONFIG_HOME=str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Secret Service"


LOCKED_SCRIPT = textwrap.dedent(
    f"""
    from contextlib import closing
    import secretstorage
    from reelqueue.credentials import KeyStore
    from reelqueue.domain.errors import KeyringUnavailable

    keystore = KeyStore("ReelQueue-test-locked")
    assert keystore.check_available() == "Secret Service"
    keystore.set_key("account:a", "sk-before-lock")
    with closing(secretstorage.dbus_init()) as bus:
        secretstorage.get_default_collection(bus).lock()
    for call in (
        keystore.check_available,
        lambda: keystore.set_key("account:a", {SENTINEL!r}),
        lambda: keystore.get_key("account:a"),
    ):
        try:
            call()
        except KeyringUnavailable as exc:
            assert {SENTINEL!r} not in str(exc), "the key leaked"
            print("UNAVAILABLE", exc)
        else:
            raise SystemExit("a locked keyring was used")
    """
)


def test_locked_keyring_is_reported_not_waited_on() -> None:
    """Locks the default collection of a private gnome-keyring (the prompt cannot show)."""
    missing = [
        tool
        for tool in ("bash", "dbus-run-session", "gnome-keyring-daemon", "secret-tool")
        if shutil.which(tool) is None
    ]
    if missing or not CI_SCRIPT.exists():
        skip_or_fail(f"cannot start a private gnome-keyring: missing {missing or [CI_SCRIPT]}")
    # keyring leaves a D-Bus socket unclosed when unlocking fails: ignore that warning only.
    command = [sys.executable, "-W", "error", "-W", "ignore::ResourceWarning", "-c", LOCKED_SCRIPT]
    result = subprocess.run(
        ["bash", str(CI_SCRIPT), "run", *command],
        env=subprocess_env(DISPLAY=None, WAYLAND_DISPLAY=None, PYTHON_KEYRING_BACKEND=None),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 3, result.stdout
    for line in lines:
        assert line.startswith("UNAVAILABLE ")
        assert "It is locked: unlock it" in line
        assert "gnome-keyring" in line
        assert SENTINEL not in line
    assert "KeyringLocked" in lines[0]
