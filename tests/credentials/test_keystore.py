"""KeyStore against in-memory and deliberately broken keyring backends."""

from __future__ import annotations

import re
import subprocess
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path

import keyring
import keyring.backend
import keyring.errors
import pytest
from keyring.backends import chainer, fail, null

from reelqueue.credentials import (
    MAX_KEY_BYTES_WINDOWS,
    SERVICE,
    KeyStore,
    MemoryKeyring,
    key_ref_for,
)
from reelqueue.domain.errors import InputError, KeyringUnavailable, KeyTooLong, KnownError

from .conftest import SENTINEL, forget_backend_class, subprocess_env

pytestmark = pytest.mark.unit

REF = "account:Studio A"


def all_text(exc: BaseException) -> str:
    """Everything an exception can show: str, repr, args and the whole printed chain."""
    parts = [str(exc), repr(exc), repr(exc.args)]
    parts += traceback.format_exception(exc)
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        parts += [str(link), repr(link)]
        link = link.__cause__ or link.__context__
    return "\n".join(parts)


def assert_hides_sentinel(exc: BaseException) -> None:
    assert SENTINEL not in all_text(exc)
    assert exc.__cause__ is None
    assert exc.__context__ is None


def assert_helpful(message: str) -> None:
    for words in ("gnome-keyring", "KeePassXC", "D-Bus", "unlock", "plain text", "keyrings.alt"):
        assert words in message, words


def test_round_trip_overwrite_and_delete(keystore: KeyStore) -> None:
    assert keystore.get_key(REF) is None
    keystore.set_key(REF, SENTINEL)
    assert keystore.get_key(REF) == SENTINEL
    keystore.set_key(REF, "sk-second")
    assert keystore.get_key(REF) == "sk-second"
    keystore.delete_key(REF)
    assert keystore.get_key(REF) is None
    keystore.delete_key(REF)  # missing is fine


def test_keys_are_kept_per_service_and_ref(memory: MemoryKeyring) -> None:
    ours, theirs = KeyStore(backend=memory), KeyStore("Other", backend=memory)
    ours.set_key("account:a", "sk-a")
    ours.set_key("account:b", "sk-b")
    theirs.set_key("account:a", "sk-other")
    assert [ours.get_key("account:a"), ours.get_key("account:b")] == ["sk-a", "sk-b"]
    assert theirs.get_key("account:a") == "sk-other"
    assert memory.get_password(SERVICE, "account:a") == "sk-a"


def test_surrounding_whitespace_is_stripped(keystore: KeyStore) -> None:
    keystore.set_key(REF, f" \t{SENTINEL}\r\n")
    assert keystore.get_key(REF) == SENTINEL


@pytest.mark.parametrize("key", ["", "   ", "\n\t \r\n"])
def test_empty_key_is_refused(keystore: KeyStore, memory: MemoryKeyring, key: str) -> None:
    with pytest.raises(InputError, match="empty"):
        keystore.set_key(REF, key)
    assert keystore.get_key(REF) is None


@pytest.mark.parametrize("junk", ["\n", "\t", "\u200b", "\u00a0", "\ufeff", "\x00", "\ud800"])
def test_key_with_control_or_invisible_characters_is_refused(keystore: KeyStore, junk: str) -> None:
    with pytest.raises(InputError, match="invisible character") as caught:
        keystore.set_key(REF, SENTINEL[:8] + junk + SENTINEL[8:])
    assert_hides_sentinel(caught.value)
    assert keystore.get_key(REF) is None


def test_longest_key_fits_and_one_byte_more_is_too_long(keystore: KeyStore) -> None:
    keystore.set_key(REF, "k" * MAX_KEY_BYTES_WINDOWS)
    assert keystore.get_key(REF) == "k" * MAX_KEY_BYTES_WINDOWS
    too_long = SENTINEL + "k" * (MAX_KEY_BYTES_WINDOWS + 1 - len(SENTINEL))
    with pytest.raises(KeyTooLong, match="2561 bytes") as caught:
        keystore.set_key(REF, too_long)
    assert_hides_sentinel(caught.value)
    assert isinstance(caught.value, KnownError)
    assert keystore.get_key(REF) == "k" * MAX_KEY_BYTES_WINDOWS  # the old key is kept


def test_length_counts_utf8_bytes_not_characters(keystore: KeyStore) -> None:
    with pytest.raises(KeyTooLong, match="2562 bytes long in UTF-8"):
        keystore.set_key(REF, "é" * 1281)  # 1281 characters, 2562 bytes


def fake_backend_class(module: str, name: str) -> type[MemoryKeyring]:
    """A MemoryKeyring posing as a backend of another module, kept off keyring's list."""
    cls = type(name, (MemoryKeyring,), {"__module__": module})
    forget_backend_class(cls)
    return cls


def test_windows_backend_counts_utf16_bytes() -> None:
    windows = fake_backend_class("keyring.backends.Windows", "WinVaultKeyring")()
    keystore = KeyStore(backend=windows)
    keystore.set_key(REF, "k" * (MAX_KEY_BYTES_WINDOWS // 2))  # 2560 bytes in UTF-16
    with pytest.raises(KeyTooLong, match="2562 bytes long in UTF-16") as caught:
        keystore.set_key(REF, SENTINEL + "k" * (MAX_KEY_BYTES_WINDOWS // 2 + 1 - len(SENTINEL)))
    assert_hides_sentinel(caught.value)
    assert keystore.get_key(REF) == "k" * (MAX_KEY_BYTES_WINDOWS // 2)
    assert keystore.check_available() == "Windows Credential Manager"
    # Elsewhere the same key fits: only UTF-8 bytes count.
    KeyStore(backend=MemoryKeyring()).set_key(REF, "k" * (MAX_KEY_BYTES_WINDOWS // 2 + 1))


@pytest.fixture
def chain(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[keyring.backend.KeyringBackend]]:
    """A keyring chainer whose chained backends are the list this fixture yields."""
    members: list[keyring.backend.KeyringBackend] = []
    monkeypatch.setattr(chainer.ChainerBackend, "backends", members)
    yield members


def test_chainer_with_no_backend_is_unavailable(
    chain: list[keyring.backend.KeyringBackend],
) -> None:
    keystore = KeyStore(backend=chainer.ChainerBackend())
    with pytest.raises(KeyringUnavailable, match="chainer backend found no backend") as caught:
        keystore.check_available()
    assert_helpful(str(caught.value))
    with pytest.raises(KeyringUnavailable):
        keystore.set_key(REF, SENTINEL)


def test_chainer_writes_to_its_first_backend(chain: list[keyring.backend.KeyringBackend]) -> None:
    windows = fake_backend_class("keyring.backends.Windows", "WinVaultKeyring")()
    memory = MemoryKeyring()
    chain += [windows, memory]
    keystore = KeyStore(backend=chainer.ChainerBackend())
    assert keystore.check_available() == "Windows Credential Manager (first of 2 chained)"
    with pytest.raises(KeyTooLong, match="UTF-16"):
        keystore.set_key(REF, "k" * (MAX_KEY_BYTES_WINDOWS // 2 + 1))
    keystore.set_key(REF, SENTINEL)
    assert windows.get_password(SERVICE, REF) == SENTINEL
    assert keystore.get_key(REF) == SENTINEL


def test_chainer_writing_to_a_plain_text_file_is_refused(
    chain: list[keyring.backend.KeyringBackend],
) -> None:
    chain += [fake_backend_class("keyrings.alt.file", "PlaintextKeyring")(), MemoryKeyring()]
    with pytest.raises(KeyringUnavailable, match=re.escape("keyrings.alt.file.PlaintextKeyring")):
        KeyStore(backend=chainer.ChainerBackend()).set_key(REF, SENTINEL)


def test_fail_backend_is_unavailable_with_instructions() -> None:
    keystore = KeyStore(backend=fail.Keyring())
    with pytest.raises(KeyringUnavailable) as caught:
        keystore.check_available()
    message = str(caught.value)
    assert "keyring.backends.fail.Keyring" in message
    assert_helpful(message)
    assert isinstance(caught.value, KnownError)
    for call in (
        lambda: keystore.set_key(REF, SENTINEL),
        lambda: keystore.get_key(REF),
        lambda: keystore.delete_key(REF),
    ):
        with pytest.raises(KeyringUnavailable) as caught:
            call()
        assert_helpful(str(caught.value))
        assert_hides_sentinel(caught.value)


def test_fail_backend_message_names_the_missing_bus(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, linux_only: None
) -> None:
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    with pytest.raises(KeyringUnavailable, match="DBUS_SESSION_BUS_ADDRESS is not set"):
        KeyStore(backend=fail.Keyring()).check_available()


@pytest.mark.parametrize(
    ("backend", "why"),
    [
        (null.Keyring(), "silently stores nothing"),
        (fake_backend_class("keyrings.alt.file", "PlaintextKeyring")(), "keeps secrets in a file"),
    ],
)
def test_backends_that_lose_or_expose_keys_are_refused(
    backend: keyring.backend.KeyringBackend, why: str
) -> None:
    keystore = KeyStore(backend=backend)
    for call in (keystore.check_available, lambda: keystore.set_key(REF, SENTINEL)):
        with pytest.raises(KeyringUnavailable, match=why) as caught:
            call()
        assert_helpful(str(caught.value))
    assert backend.get_password(SERVICE, REF) is None


class EchoingKeyring(MemoryKeyring):
    """A backend whose errors repeat the secret they were given, like a careless library."""

    fail_with: type[Exception] | None = None
    leaked_on_delete: bool = False

    def set_password(self, service: str, username: str, password: str) -> None:
        if self.fail_with is not None:
            raise self.fail_with(f"could not store {password!r} for {username}")
        super().set_password(service, username, password)

    def get_password(self, service: str, username: str) -> str | None:
        stored = super().get_password(service, username)
        if self.fail_with is not None and username != "reelqueue-availability-probe":
            raise self.fail_with(f"could not read, stored value is {stored!r}")
        return stored

    def delete_password(self, service: str, username: str) -> None:
        if self.leaked_on_delete:
            raise keyring.errors.PasswordDeleteError("access denied")  # and keep it
        if self.fail_with is not None:
            raise self.fail_with(f"could not delete {super().get_password(service, username)!r}")
        super().delete_password(service, username)


forget_backend_class(EchoingKeyring)


@pytest.mark.parametrize(
    "error",
    [keyring.errors.PasswordSetError, keyring.errors.KeyringLocked, ValueError, OSError],
)
def test_foreign_errors_become_keyring_unavailable_without_the_key(
    error: type[Exception],
) -> None:
    backend = EchoingKeyring()
    keystore = KeyStore(backend=backend)
    keystore.set_key(REF, SENTINEL)
    backend.fail_with = error
    expected_type = error.__qualname__ if error.__module__ == "builtins" else error.__module__
    for action, call in (
        ("store the key", lambda: keystore.set_key(REF, SENTINEL)),
        ("read the key", lambda: keystore.get_key(REF)),
        ("delete the key", lambda: keystore.delete_key(REF)),
    ):
        with pytest.raises(KeyringUnavailable) as caught:
            call()
        message = str(caught.value)
        assert f"could not {action}" in message
        assert expected_type in message
        assert ("It is locked" in message) == (error is keyring.errors.KeyringLocked)
        assert_hides_sentinel(caught.value)
        assert_helpful(message)


def test_delete_that_leaves_the_key_behind_is_reported() -> None:
    backend = EchoingKeyring()
    keystore = KeyStore(backend=backend)
    keystore.set_key(REF, SENTINEL)
    backend.leaked_on_delete = True
    with pytest.raises(KeyringUnavailable, match="still there") as caught:
        keystore.delete_key(REF)
    assert_hides_sentinel(caught.value)


def test_probe_failure_is_reported_with_its_reason() -> None:
    class LockedKeyring(MemoryKeyring):
        def get_password(self, service: str, username: str) -> str | None:
            raise keyring.errors.KeyringLocked("Failed to unlock the collection!")

    forget_backend_class(LockedKeyring)
    with pytest.raises(KeyringUnavailable) as caught:
        KeyStore(backend=LockedKeyring()).check_available()
    message = str(caught.value)
    assert "keyring.errors.KeyringLocked: Failed to unlock the collection!" in message
    assert "It is locked: unlock it" in message
    assert_helpful(message)
    assert caught.value.__cause__ is None
    assert caught.value.__context__ is None


def test_keyring_that_cannot_choose_a_backend_is_unavailable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken() -> keyring.backend.KeyringBackend:
        raise RuntimeError("keyringrc.cfg names a missing backend")

    monkeypatch.setattr(keyring, "get_keyring", broken)
    with pytest.raises(KeyringUnavailable, match=r"could not choose a backend.*missing backend"):
        KeyStore().check_available()


def test_default_backend_is_keyrings_choice(global_memory_keyring: MemoryKeyring) -> None:
    keystore = KeyStore()
    assert keystore.check_available() == "in-memory test"
    keystore.set_key(REF, SENTINEL)
    assert global_memory_keyring.get_password(SERVICE, REF) == SENTINEL
    assert keyring.get_password(SERVICE, REF) == SENTINEL


def test_reprs_never_show_keys(memory: MemoryKeyring, keystore: KeyStore) -> None:
    keystore.set_key(REF, SENTINEL)
    for text in (repr(memory), str(memory), repr(keystore), str(keystore)):
        assert SENTINEL not in text
    assert repr(memory) == "<MemoryKeyring: 1 item(s)>"
    assert "MemoryKeyring" in repr(keystore)


def test_memory_keyring_is_never_chosen_automatically() -> None:
    assert MemoryKeyring.viable is True
    assert MemoryKeyring.priority == pytest.approx(0.1)
    assert MemoryKeyring not in set(keyring.backend.KeyringBackend.get_viable_backends())


def test_memory_keyring_delete_of_a_missing_key_raises_like_real_backends(
    memory: MemoryKeyring,
) -> None:
    with pytest.raises(keyring.errors.PasswordDeleteError):
        memory.delete_password(SERVICE, REF)


def test_key_ref_for() -> None:
    assert key_ref_for("Studio A") == "account:Studio A"
    for bad in ("", " ", " Studio", "Studio ", "a\nb"):
        with pytest.raises(ValueError):
            key_ref_for(bad)


@pytest.mark.parametrize("ref", ["", " account:a", "account:a\n", "account:\ta"])
def test_unusable_refs_are_programming_errors(keystore: KeyStore, ref: str) -> None:
    for call in (
        lambda: keystore.set_key(ref, "sk-x"),
        lambda: keystore.get_key(ref),
        lambda: keystore.delete_key(ref),
    ):
        with pytest.raises(ValueError):
            call()


@pytest.mark.integration
def test_headless_linux_without_a_session_bus_gets_instructions(
    tmp_path: Path, linux_only: None
) -> None:
    """A fresh process, no D-Bus, no keyring config: keyring's own choice is refused."""
    code = (
        "from reelqueue.credentials import KeyStore\n"
        "from reelqueue.domain.errors import KeyringUnavailable\n"
        "try:\n"
        "    print('AVAILABLE', KeyStore().check_available())\n"
        "except KeyringUnavailable as exc:\n"
        "    print('UNAVAILABLE', exc)\n"
    )
    env = subprocess_env(
        DBUS_SESSION_BUS_ADDRESS=None,
        PYTHON_KEYRING_BACKEND=None,
        XDG_RUNTIME_DIR=str(tmp_path),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
    )
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert result.stdout.startswith("UNAVAILABLE "), result.stdout + result.stderr
    assert "DBUS_SESSION_BUS_ADDRESS is not set" in result.stdout
    assert_helpful(result.stdout)
    assert "MemoryKeyring" not in result.stdout
