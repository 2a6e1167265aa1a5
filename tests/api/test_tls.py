"""The self-signed certificate is for serving only and renewed with the same key; TLS
files are never written or read through a link; a key others can read is refused."""

from __future__ import annotations

import datetime
import os
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from reelqueue.api.tls import (
    CERT_NAME,
    KEY_NAME,
    check_key_permissions,
    ensure_self_signed,
    fingerprint,
    public_key_pin,
    server_context,
)
from reelqueue.domain.errors import InputError
from tests.api.serve_harness import free_port
from tests.proof.harness import cli

pytestmark = pytest.mark.unit
posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX modes and links")


def _cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_the_certificate_is_for_serving_only_and_names_the_listen_address(
        tmp_path: Path) -> None:
    cert_path, key_path = ensure_self_signed(tmp_path, "192.0.2.7")
    cert = _cert(cert_path)
    constraints = cert.extensions.get_extension_for_class(x509.BasicConstraints)
    assert constraints.critical and constraints.value.ca is False
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.SERVER_AUTH]
    key_usage = cert.extensions.get_extension_for_class(x509.KeyUsage).value
    assert key_usage.digital_signature and not key_usage.key_cert_sign
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {str(a) for a in names.get_values_for_type(x509.IPAddress)} == {
        "127.0.0.1", "::1", "192.0.2.7"}
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert lifetime <= datetime.timedelta(days=365)
    if os.name == "posix":
        assert key_path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_a_wildcard_listen_address_names_this_machine(tmp_path: Path) -> None:
    cert = _cert(ensure_self_signed(tmp_path, "0.0.0.0")[0])
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert len(names.get_values_for_type(x509.DNSName)) >= 2  # localhost and the host
    assert "0.0.0.0" not in {str(a) for a in names.get_values_for_type(x509.IPAddress)}


def test_a_good_certificate_is_kept_and_a_renewal_keeps_the_key(tmp_path: Path) -> None:
    cert_path, key_path = ensure_self_signed(tmp_path, "127.0.0.1")
    key_before, print_before = key_path.read_bytes(), fingerprint(cert_path)
    pin_before = public_key_pin(cert_path)
    ensure_self_signed(tmp_path, "127.0.0.1")
    assert fingerprint(cert_path) == print_before  # nothing to renew
    ensure_self_signed(tmp_path, "192.0.2.9")  # a new address: renewed
    assert fingerprint(cert_path) != print_before
    assert key_path.read_bytes() == key_before
    assert public_key_pin(cert_path) == pin_before
    assert pin_before.startswith("sha256//") and len(pin_before) == 8 + 44


def test_the_old_ten_year_ca_certificate_is_renewed(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import hashes, serialization

    cert_path, key_path = ensure_self_signed(tmp_path, "127.0.0.1")
    key = serialization.load_pem_private_key(key_path.read_bytes(), None)
    old = _cert(cert_path)
    builder = (x509.CertificateBuilder().subject_name(old.subject).issuer_name(old.issuer)
               .public_key(old.public_key()).serial_number(1)
               .not_valid_before(old.not_valid_before_utc)
               .not_valid_after(old.not_valid_before_utc + datetime.timedelta(days=3650))
               .add_extension(old.extensions.get_extension_for_class(
                   x509.SubjectAlternativeName).value, critical=False)
               .add_extension(x509.BasicConstraints(ca=True, path_length=None),
                              critical=True))
    cert_path.write_bytes(builder.sign(key, hashes.SHA256())  # type: ignore[arg-type]
                          .public_bytes(serialization.Encoding.PEM))
    ensure_self_signed(tmp_path, "127.0.0.1")
    renewed = _cert(cert_path)
    assert renewed.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False


@posix_only
def test_a_link_planted_at_the_certificates_path_is_replaced_not_written_through(
        tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("the user's file")
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / CERT_NAME).symlink_to(outside)
    ensure_self_signed(folder, "127.0.0.1")
    assert outside.read_text() == "the user's file"
    assert not (folder / CERT_NAME).is_symlink() and not (folder / KEY_NAME).is_symlink()
    assert _cert(folder / CERT_NAME).subject  # a certificate, in its own file


@posix_only
def test_a_dangling_link_at_the_keys_path_is_refused_not_written_through(
        tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / KEY_NAME).symlink_to(tmp_path / "absent-key")
    with pytest.raises(InputError, match="is a link"):
        ensure_self_signed(folder, "127.0.0.1")
    assert not (tmp_path / "absent-key").exists()


@posix_only
def test_a_link_at_the_keys_path_is_not_read(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    other = tmp_path / "other"
    other.mkdir()
    _, key = ensure_self_signed(other, "127.0.0.1")
    (folder / KEY_NAME).symlink_to(key)
    with pytest.raises(InputError, match="is a link"):
        ensure_self_signed(folder, "127.0.0.1")


@posix_only
def test_a_key_others_can_read_is_refused_unless_allowed(tmp_path: Path) -> None:
    _, key = ensure_self_signed(tmp_path, "127.0.0.1")
    check_key_permissions(key, insecure_ok=False)
    key.chmod(0o640)
    with pytest.raises(InputError, match="chmod 600"):
        check_key_permissions(key, insecure_ok=False)
    check_key_permissions(key, insecure_ok=True)


@posix_only
@pytest.mark.integration
def test_serve_refuses_a_readable_key_file(tmp_path: Path) -> None:
    cert, key = ensure_self_signed(tmp_path, "127.0.0.1")
    key.chmod(0o644)
    done = cli(tmp_path / "data", "serve", "--listen", f"127.0.0.1:{free_port()}",
               "--tls-cert", str(cert), "--tls-key", str(key), "--paused")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--tls-key-insecure-ok" in done.stderr and "Traceback" not in done.stderr


def _sparse(path: Path, size: int) -> Path:
    with path.open("wb") as handle:
        handle.truncate(size)
    path.chmod(0o600)
    return path


def test_a_tls_file_past_the_limit_is_refused_naming_it_and_the_limit(
        tmp_path: Path) -> None:
    cert, key = ensure_self_signed(tmp_path, "127.0.0.1")
    big = _sparse(tmp_path / "big-key.pem", 300 * 1024 * 1024)
    with pytest.raises(InputError, match=r"--tls-key\) .*big-key.pem .*at most 1 MiB"):
        server_context(cert, big)
    with pytest.raises(InputError, match=r"--tls-cert\) .*big-key.pem .*at most 1 MiB"):
        server_context(big, key)
    with pytest.raises(InputError, match="at most 1 MiB"):
        fingerprint(big)
    server_context(cert, key)  # the real pair still loads


@posix_only
def test_a_tls_file_that_is_not_a_regular_file_is_refused_without_blocking(
        tmp_path: Path) -> None:
    cert, _ = ensure_self_signed(tmp_path, "127.0.0.1")
    fifo = tmp_path / "key-fifo"
    os.mkfifo(fifo, 0o600)  # no writer: a blocking open would never return
    with pytest.raises(InputError, match="not a regular file"):
        server_context(cert, fifo)


def test_a_tls_file_that_is_not_pem_is_refused_with_a_message(tmp_path: Path) -> None:
    cert, _ = ensure_self_signed(tmp_path, "127.0.0.1")
    junk = tmp_path / "junk.pem"
    junk.write_bytes(b"not a key\n")
    with pytest.raises(InputError, match="cannot be loaded"):
        server_context(cert, junk)


@posix_only
@pytest.mark.integration
def test_serve_refuses_a_300_mb_key_file_with_a_clear_message(tmp_path: Path) -> None:
    cert, _ = ensure_self_signed(tmp_path, "127.0.0.1")
    big = _sparse(tmp_path / "big-key.pem", 300 * 1024 * 1024)
    done = cli(tmp_path / "data", "serve", "--listen", f"127.0.0.1:{free_port()}",
               "--tls-cert", str(cert), "--tls-key", str(big), "--paused")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "big-key.pem" in done.stderr and "1 MiB" in done.stderr, done.stderr
    assert "unexpected" not in done.stderr and "Traceback" not in done.stderr
