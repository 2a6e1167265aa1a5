"""Fixtures for the keyring tests: in-memory backends and the real Secret Service gate."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import keyring
import keyring.backend
import keyring.core
import pytest

import reelqueue
from reelqueue.credentials import KeyStore, MemoryKeyring

SENTINEL = "sk-SENTINEL-7f3a9c2e51b04d86"
"""A key that must never show up in any exception text, repr or traceback."""

APP_DIR = Path(reelqueue.__file__).resolve().parents[1]
REPO_DIR = APP_DIR.parent
CI_SCRIPT = REPO_DIR / "scripts" / "ci-secret-service.sh"
REQUIRE_ENV = "REELQUEUE_REQUIRE_SECRET_SERVICE"


def secret_service_required() -> bool:
    return os.environ.get(REQUIRE_ENV) == "1"


def skip_or_fail(reason: str) -> None:
    """Skip, or fail when REELQUEUE_REQUIRE_SECRET_SERVICE=1 (CI)."""
    if secret_service_required():
        pytest.fail(f"{REQUIRE_ENV}=1 but {reason}", pytrace=False)
    pytest.skip(f"{reason} (run under 'scripts/ci-secret-service.sh run ...')")


def subprocess_env(**changes: str | None) -> dict[str, str]:
    """The current environment with the app on PYTHONPATH, ``None`` values removed."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(APP_DIR), *filter(None, [env.get("PYTHONPATH")])])
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def forget_backend_class(cls: type[keyring.backend.KeyringBackend]) -> None:
    """Take a test-only backend class off keyring's list of automatic candidates."""
    getattr(keyring.backend.KeyringBackend, "_classes", set()).discard(cls)


@pytest.fixture
def memory() -> MemoryKeyring:
    return MemoryKeyring()


@pytest.fixture
def keystore(memory: MemoryKeyring) -> KeyStore:
    return KeyStore(backend=memory)


@pytest.fixture
def global_memory_keyring(monkeypatch: pytest.MonkeyPatch) -> Iterator[MemoryKeyring]:
    """``keyring.set_keyring(MemoryKeyring())`` for one test; the previous choice comes back."""
    monkeypatch.setattr(keyring.core, "_keyring_backend", keyring.core._keyring_backend)
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend


@pytest.fixture
def linux_only() -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("Linux-only behaviour")
