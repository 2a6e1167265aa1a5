"""A keyring backend for the team tests' child processes: one JSON file per "machine".

Each ``reelqueue worker`` of a kill test is a machine of its own with its own keyring;
the child selects this backend with ``PYTHON_KEYRING_BACKEND=tests.team.file_keyring.
FileKeyring`` and names its file in ``REELQUEUE_TEST_KEYRING``. Test-only: the keys in
these files are the mock provider's made-up keys.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import keyring.backend
from keyring.compat import properties

FILE_ENV = "REELQUEUE_TEST_KEYRING"
BACKEND = "tests.team.file_keyring.FileKeyring"

_lock = threading.Lock()


class FileKeyring(keyring.backend.KeyringBackend):
    """Keys in the JSON file named by ``$REELQUEUE_TEST_KEYRING``."""

    @properties.classproperty
    def viable(cls) -> bool:
        # Only where a test names a file: keyring's chainer takes every viable subclass
        # loaded in the process, so an always-viable one (imported by tests/team in the
        # pytest process) joined the real keyring's chain in later tests and broke it.
        return FILE_ENV in os.environ

    @properties.classproperty
    def priority(cls) -> float:
        return 0.1

    def _path(self) -> Path:
        return Path(os.environ[FILE_ENV])

    def _read(self) -> dict[str, str]:
        path = self._path()
        return dict(json.loads(path.read_text("utf-8"))) if path.exists() else {}

    def get_password(self, service: str, username: str) -> str | None:
        with _lock:
            return self._read().get(f"{service}/{username}")

    def set_password(self, service: str, username: str, password: str) -> None:
        with _lock:
            items = self._read()
            items[f"{service}/{username}"] = password
            self._path().write_text(json.dumps(items), "utf-8")

    def delete_password(self, service: str, username: str) -> None:
        with _lock:
            items = self._read()
            items.pop(f"{service}/{username}", None)
            self._path().write_text(json.dumps(items), "utf-8")


def write_keys(path: Path, keys: dict[str, str], service: str = "ReelQueue") -> None:
    """A keyring file holding ``keys`` (keyring reference -> key)."""
    path.write_text(json.dumps({f"{service}/{ref}": key for ref, key in keys.items()}),
                    "utf-8")
