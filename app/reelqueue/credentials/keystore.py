"""The one module that touches the OS keyring (DESIGN.md invariant 8).

API keys live in the OS keyring — Windows Credential Manager, the macOS Keychain, or a
Secret Service (gnome-keyring, KeePassXC) on Linux — under the service name ``ReelQueue``.
The database stores only a reference such as ``account:Studio A`` (:func:`key_ref_for`).

Rules kept here:

* A key's text never appears in an exception message, a ``repr`` or a log line. A foreign
  exception raised while the keyring is used is described by its type only, and the
  replacement is raised outside the ``except`` block (``from None``), so neither
  ``__cause__`` nor ``__context__`` carries the foreign text.
* There is no plain-text fallback. ``keyrings.alt`` is deliberately not a dependency, and
  its backends are refused like keyring's ``fail`` (raises on every call) and ``null``
  (silently stores nothing) backends.
* Every call may block (D-Bus round trips, an unlock prompt): keep them off the GUI thread.

:class:`MemoryKeyring` is an in-memory backend for tests and the self-test. keyring never
picks it by itself: it is removed from keyring's registry of candidate backends.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import keyring
import keyring.backend
import keyring.errors
from keyring.backends import chainer, fail, null
from keyring.compat import properties

from reelqueue.domain.errors import InputError, KeyringUnavailable, KeyTooLong

__all__ = [
    "MAX_KEY_BYTES_WINDOWS",
    "SERVICE",
    "KeyStore",
    "MemoryKeyring",
    "key_ref_for",
]

SERVICE = "ReelQueue"
"""The keyring service name every key is stored under."""

MAX_KEY_BYTES_WINDOWS = 2560
"""Windows Credential Manager's blob limit (CRED_MAX_CREDENTIAL_BLOB_SIZE), in bytes."""

_WINDOWS_MODULE = "keyring.backends.Windows"
_PLAIN_TEXT_MODULE = "keyrings.alt"
_PROBE_REF = "reelqueue-availability-probe"
_EXCERPT_CHARS = 300

_HUMAN_NAMES = {
    "keyring.backends.SecretService.Keyring": "Secret Service",
    "keyring.backends.libsecret.Keyring": "Secret Service (libsecret)",
    "keyring.backends.kwallet.DBusKeyring": "KWallet",
    "keyring.backends.Windows.WinVaultKeyring": "Windows Credential Manager",
    "keyring.backends.macOS.Keyring": "macOS Keychain",
}

_NO_PLAIN_TEXT = (
    "Keys are never written in plain text: the keyrings.alt package is deliberately not used."
)

_T = TypeVar("_T")


def key_ref_for(account_name: str) -> str:
    """The keyring reference (the keyring "username") of an account's API key."""
    if not account_name or account_name != account_name.strip():
        raise ValueError(f"account name {account_name!r} is empty or has surrounding whitespace")
    ref = f"account:{account_name}"
    _check_ref(ref)
    return ref


class KeyStore:
    """Stores, reads and deletes API keys in the OS keyring under one service name.

    ``backend=None`` uses keyring's own choice (``keyring.get_keyring()``), looked up on
    first use. Failures raise :class:`KeyringUnavailable`, :class:`KeyTooLong` or
    :class:`InputError`, whose messages never contain a key.
    """

    def __init__(
        self,
        service: str = SERVICE,
        backend: keyring.backend.KeyringBackend | None = None,
    ) -> None:
        if not service or service != service.strip() or not service.isprintable():
            raise ValueError(f"keyring service name {service!r} is not usable")
        self._service = service
        self._backend = backend

    def __repr__(self) -> str:
        backend = "default" if self._backend is None else _class_path(self._backend)
        return f"KeyStore(service={self._service!r}, backend={backend})"

    @property
    def service(self) -> str:
        """The keyring service name keys are stored under."""
        return self._service

    def check_available(self) -> str:
        """Prove the keyring answers; return its human name (e.g. ``"Secret Service"``).

        Refuses keyring's ``fail`` and ``null`` backends, an empty chainer and any
        ``keyrings.alt`` backend, then reads a reference that does not exist. Run it at
        start-up and in the installer smoke test (frozen builds have lost every backend).
        """
        backend = self._usable_backend()
        name = _human_name(backend)
        failure: str | None = None
        try:
            backend.get_password(self._service, _PROBE_REF)
        except Exception as exc:
            # No key is involved in the probe, so the foreign text is safe to show.
            failure = f"{_type_name(exc)}: {_excerpt(exc)}"
        if failure is not None:
            problem = f"the {name} keyring did not answer a test read ({failure})"
            raise KeyringUnavailable(_unavailable(problem, locked=_is_locked(failure))) from None
        return name

    def set_key(self, ref: str, key: str) -> None:
        """Store ``key`` (surrounding whitespace stripped) under ``ref``, replacing any."""
        _check_ref(ref)
        if not isinstance(key, str):
            raise TypeError(f"key must be a str, not {type(key).__name__}")
        key = key.strip()
        if not key:
            raise InputError("The API key is empty. Paste the key from the provider's site.")
        if not key.isprintable():
            raise InputError(
                "The API key contains a line break, tab or invisible character "
                "(zero-width or non-breaking space, …). Copy it again, on one line."
            )
        size = len(key.encode("utf-8"))
        if size > MAX_KEY_BYTES_WINDOWS:
            raise KeyTooLong(_too_long(size, "UTF-8"))
        backend = self._usable_backend()
        if _writes_to_windows(backend):
            size = len(key.encode("utf-16-le"))
            if size > MAX_KEY_BYTES_WINDOWS:
                raise KeyTooLong(_too_long(size, "UTF-16, as Windows stores it"))
        service = self._service
        self._call(backend, "store the key", lambda: backend.set_password(service, ref, key))

    def get_key(self, ref: str) -> str | None:
        """The key stored under ``ref``, or None when there is none."""
        _check_ref(ref)
        backend = self._usable_backend()
        service = self._service
        return self._call(backend, "read the key", lambda: backend.get_password(service, ref))

    def delete_key(self, ref: str) -> None:
        """Delete the key stored under ``ref``; a missing key is fine."""
        _check_ref(ref)
        backend = self._usable_backend()
        failure: str | None = None
        try:
            backend.delete_password(self._service, ref)
        except keyring.errors.PasswordDeleteError:
            # Every backend says "not found" this way; confirm below that it meant that.
            failure = None
        except Exception as exc:
            failure = _type_name(exc)
        else:
            return
        if failure is None:
            if self.get_key(ref) is None:
                return
            failure = "keyring.errors.PasswordDeleteError, yet the key is still there"
        raise KeyringUnavailable(_operation_failed(backend, "delete the key", failure)) from None

    def _usable_backend(self) -> keyring.backend.KeyringBackend:
        backend = self._backend
        if backend is None:
            failure: str | None = None
            try:
                backend = keyring.get_keyring()
            except Exception as exc:
                # keyring's configuration (keyringrc.cfg, PYTHON_KEYRING_BACKEND) failed.
                failure = f"{_type_name(exc)}: {_excerpt(exc)}"
            if backend is None:
                raise KeyringUnavailable(
                    _unavailable(f"keyring could not choose a backend ({failure})")
                ) from None
            self._backend = backend
        refusal = _refusal(backend)
        if refusal is not None:
            raise KeyringUnavailable(_unavailable(refusal))
        return backend

    @staticmethod
    def _call(
        backend: keyring.backend.KeyringBackend, action: str, operation: Callable[[], _T]
    ) -> _T:
        failure = ""
        try:
            return operation()
        except Exception as exc:
            failure = _type_name(exc)
        # Raised here, outside the except block, so no __context__ links the foreign
        # exception (whose text could echo the key).
        raise KeyringUnavailable(_operation_failed(backend, action, failure)) from None


class MemoryKeyring(keyring.backend.KeyringBackend):
    """An in-memory keyring for tests and the self-test; keys vanish with the process.

    Its priority (0.1) is below every real backend, and it is removed from keyring's
    registry of candidates, so keyring never chooses it by itself: install it with
    ``keyring.set_keyring(MemoryKeyring())`` or pass it to :class:`KeyStore`.
    """

    viable = True

    @properties.classproperty
    def priority(cls) -> float:
        return 0.1

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # keyring leaves it unannotated
        self._items: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        with self._lock:
            count = len(self._items)
        return f"<MemoryKeyring: {count} item(s)>"

    def get_password(self, service: str, username: str) -> str | None:
        with self._lock:
            return self._items.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        with self._lock:
            self._items[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        with self._lock:
            if self._items.pop((service, username), None) is None:
                raise keyring.errors.PasswordDeleteError("No such password")


# keyring registers every concrete backend class as a candidate for its automatic choice,
# and would prefer this one (0.1) to its `fail` backend (0) where no OS keyring exists,
# losing keys at exit. Take it off that list.
getattr(keyring.backend.KeyringBackend, "_classes", set()).discard(MemoryKeyring)


def _check_ref(ref: str) -> None:
    value: object = ref  # from the journal: typed str, checked as anything
    if not isinstance(value, str) or not ref or ref != ref.strip() or not ref.isprintable():
        raise ValueError(f"key reference {ref!r} is empty or not a single printable line")


def _class_path(backend: keyring.backend.KeyringBackend) -> str:
    cls = type(backend)
    return f"{cls.__module__}.{cls.__qualname__}"


def _type_name(exc: BaseException) -> str:
    cls = type(exc)
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def _excerpt(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or "no message"
    return text if len(text) <= _EXCERPT_CHARS else text[: _EXCERPT_CHARS - 1] + "…"


def _chained(backend: keyring.backend.KeyringBackend) -> list[keyring.backend.KeyringBackend]:
    return list(backend.backends) if isinstance(backend, chainer.ChainerBackend) else []


def _writer(backend: keyring.backend.KeyringBackend) -> keyring.backend.KeyringBackend | None:
    """The backend that stores keys: a chainer writes to its first (highest priority)."""
    if isinstance(backend, chainer.ChainerBackend):
        members = _chained(backend)
        return members[0] if members else None
    return backend


def _human_name(backend: keyring.backend.KeyringBackend) -> str:
    writer = _writer(backend) or backend
    path = _class_path(writer)
    name = _HUMAN_NAMES.get(path) or (
        "in-memory test" if isinstance(writer, MemoryKeyring) else path
    )
    if writer is not backend:
        name += f" (first of {len(_chained(backend))} chained)"
    return name


def _writes_to_windows(backend: keyring.backend.KeyringBackend) -> bool:
    writer = _writer(backend)
    module = "" if writer is None else type(writer).__module__
    return module == _WINDOWS_MODULE or module.startswith(_WINDOWS_MODULE + ".")


def _refusal(backend: keyring.backend.KeyringBackend) -> str | None:
    """Why ``backend`` cannot hold keys, or None when it is an OS keyring (or the test one)."""
    if isinstance(backend, chainer.ChainerBackend):
        writer = _writer(backend)
        if writer is None:
            return "keyring's chainer backend found no backend to chain" + _no_bus_hint()
        refusal = _refusal(writer)
        return None if refusal is None else f"{refusal}, the first of its chained backends"
    if isinstance(backend, fail.Keyring):
        return (
            "keyring found no usable backend and chose keyring.backends.fail.Keyring, "
            "which refuses every call" + _no_bus_hint()
        )
    if isinstance(backend, null.Keyring):
        return "keyring is set to keyring.backends.null.Keyring, which silently stores nothing"
    module = type(backend).__module__
    if module == _PLAIN_TEXT_MODULE or module.startswith(_PLAIN_TEXT_MODULE + "."):
        return f"keyring is set to {_class_path(backend)}, which keeps secrets in a file"
    return None


def _no_bus_hint() -> str:
    if not sys.platform.startswith("linux") or os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        return ""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime, "bus").exists():
        return ""
    return " (no D-Bus session bus: DBUS_SESSION_BUS_ADDRESS is not set)"


def _what_to_do() -> str:
    if sys.platform == "win32":
        return (
            "ReelQueue keeps API keys in Windows Credential Manager: run it as your normal, "
            "logged-in user (not a service account without a profile). If this is an "
            "installed ReelQueue, reinstall it: its keyring support is missing."
        )
    if sys.platform == "darwin":
        return (
            "ReelQueue keeps API keys in the macOS Keychain: unlock your login keychain "
            "(Keychain Access) and allow ReelQueue when asked. If this is an installed "
            "ReelQueue, reinstall it: its keyring support is missing."
        )
    return (
        "On Linux, install and unlock a Secret Service in your D-Bus session: gnome-keyring "
        "(e.g. 'sudo apt install gnome-keyring', unlocked when you log in) or KeePassXC "
        "with its Secret Service integration enabled. Without a desktop session, start one "
        "with 'dbus-run-session' and unlock gnome-keyring in it with "
        "'gnome-keyring-daemon --unlock --components=secrets' (password on standard input)."
    )


def _is_locked(failure: str) -> bool:
    return "Locked" in failure  # KeyringLocked, LockedException, ...Error.IsLocked


def _locked_hint(locked: bool) -> str:
    return " It is locked: unlock it, then try again." if locked else ""


def _unavailable(problem: str, *, locked: bool = False) -> str:
    return (
        f"No usable OS keyring, so API keys cannot be stored safely: {problem}."
        f"{_locked_hint(locked)} {_what_to_do()} {_NO_PLAIN_TEXT}"
    )


def _operation_failed(backend: keyring.backend.KeyringBackend, action: str, failure: str) -> str:
    return (
        f"The {_human_name(backend)} keyring could not {action} ({failure})."
        f"{_locked_hint(_is_locked(failure))} "
        f"{_what_to_do()} {_NO_PLAIN_TEXT}"
    )


def _too_long(size: int, encoding: str) -> str:
    return (
        f"The API key is {size} bytes long in {encoding}; the OS keyring accepts at most "
        f"{MAX_KEY_BYTES_WINDOWS} bytes. Check that you copied only the key."
    )
