"""API keys in the OS keyring; the only package that imports ``keyring``."""

from __future__ import annotations

from reelqueue.credentials.keystore import (
    MAX_KEY_BYTES_WINDOWS,
    SERVICE,
    KeyStore,
    MemoryKeyring,
    key_ref_for,
)

__all__ = [
    "MAX_KEY_BYTES_WINDOWS",
    "SERVICE",
    "KeyStore",
    "MemoryKeyring",
    "key_ref_for",
]
