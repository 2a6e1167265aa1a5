"""The server's TLS certificate: a self-signed one for serving only (``CA:FALSE``,
``serverAuth``, the listen addresses as names, valid one year), kept in the data folder
unless the user gives their own; its SHA-256 fingerprint and its public key's pin.

Renewal (a certificate within 30 days of its end, or not naming the address served) keeps
the key, so a client that pins the public key (``public_key_pin``) needs no change; one
that pins the certificate's fingerprint gets the new one printed at start.

Files are written without following links: a temporary name opened with ``O_EXCL`` (and
``O_NOFOLLOW`` where the OS has it), then ``os.replace`` onto the final name, which
replaces a link planted there rather than writing through it. A link (or, on Windows, a
reparse point) at the key's or certificate's path is refused when read.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import ipaddress
import os
import secrets
import socket
import ssl
import stat
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from reelqueue.domain.errors import InputError

CERT_NAME = "api-cert.pem"
KEY_NAME = "api-key.pem"
VALIDITY = datetime.timedelta(days=365)
RENEW_BEFORE = datetime.timedelta(days=30)
_REPARSE_POINT = 0x400  # FILE_ATTRIBUTE_REPARSE_POINT
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
MAX_TLS_FILE_BYTES = 1024 * 1024
"""A certificate chain or a key is a few KiB; a larger file is refused before it is read
whole (a 300 MB ``--tls-key`` ended in "unexpected error")."""


def ensure_self_signed(folder: Path, host: str) -> tuple[Path, Path]:
    """The certificate and key in ``folder``: made when absent, renewed with the same key
    when near its end or not naming ``host``; returned as they are otherwise."""
    cert_path, key_path = folder / CERT_NAME, folder / KEY_NAME
    names = listen_names(host)
    key: ec.EllipticCurvePrivateKey | None = None
    if key_path.exists() or key_path.is_symlink():
        loaded = serialization.load_pem_private_key(read_plain_file(key_path), None)
        if not isinstance(loaded, ec.EllipticCurvePrivateKey):
            raise InputError(f"{key_path} is not the EC key ReelQueue made; remove it to "
                             "make a new one.")
        key = loaded
        if cert_path.exists() and _still_good(read_plain_file(cert_path), key, names):
            return cert_path, key_path
    if key is None:
        key = ec.generate_private_key(ec.SECP256R1())
        write_private_file(key_path, key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()), 0o600)
    write_private_file(cert_path, _certificate(key, names).public_bytes(
        serialization.Encoding.PEM), 0o644)
    return cert_path, key_path


def listen_names(host: str) -> list[x509.GeneralName]:
    """localhost, the loopback addresses and the address served; for a wildcard address
    (0.0.0.0, ::) this machine's name and the addresses it resolves to."""
    names: list[x509.GeneralName] = [x509.DNSName("localhost"),
                                     x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                     x509.IPAddress(ipaddress.ip_address("::1"))]

    def add(name: x509.GeneralName) -> None:
        if name not in names:
            names.append(name)

    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        if host and host != "localhost":
            add(x509.DNSName(host))
        return names
    if not address.is_unspecified:
        add(x509.IPAddress(address))
        return names
    machine = socket.gethostname()
    if machine:
        add(x509.DNSName(machine))
        try:
            infos = socket.getaddrinfo(machine, None)
        except OSError:
            infos = []
        for info in infos:
            add(x509.IPAddress(ipaddress.ip_address(str(info[4][0]).split("%")[0])))
    return names


def _certificate(key: ec.EllipticCurvePrivateKey,
                 names: list[x509.GeneralName]) -> x509.Certificate:
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ReelQueue API")])
    start = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(start + VALIDITY)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=False,
                crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .sign(key, hashes.SHA256()))


def _still_good(pem: bytes, key: ec.EllipticCurvePrivateKey,
                names: list[x509.GeneralName]) -> bool:
    """The certificate is ours (this key, CA:FALSE), names every address and is not near
    its end: else it is renewed."""
    try:
        cert = x509.load_pem_x509_certificate(pem)
        constraints = cert.extensions.get_extension_for_class(x509.BasicConstraints).value
        held = set(cert.extensions.get_extension_for_class(
            x509.SubjectAlternativeName).value)
    except (ValueError, x509.ExtensionNotFound):
        return False
    same_key = cert.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    ) == key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    left = cert.not_valid_after_utc - datetime.datetime.now(datetime.UTC)
    return (same_key and not constraints.ca and set(names) <= held
            and left > RENEW_BEFORE)


def write_private_file(path: Path, content: bytes, mode: int) -> None:
    """Write ``content`` to ``path`` atomically without following a link: a fresh
    temporary name beside it (``O_EXCL``, ``O_NOFOLLOW``), flushed, then renamed over
    ``path`` (a link at ``path`` is replaced, never written through)."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_BINARY", 0)
    fd = os.open(temporary, flags, mode)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(content)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def read_plain_file(path: Path) -> bytes:
    """The bytes of ``path``, refused (InputError) when it is a link or reparse point, or
    not a regular file of at most :data:`MAX_TLS_FILE_BYTES`."""
    _refuse_link(path)
    return read_tls_file(path, "TLS file", follow=False)


def read_tls_file(path: Path, what: str, *, follow: bool = True) -> bytes:
    """The bytes of ``path`` (``what`` names it in messages: ``--tls-key``), read no
    further than :data:`MAX_TLS_FILE_BYTES` + 1: InputError for a larger file, one that
    is not a regular file (a FIFO, a device: opened without blocking, never read) or one
    that cannot be read."""
    limit = MAX_TLS_FILE_BYTES
    flags = (os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)
             | (0 if follow else _NOFOLLOW))
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise InputError(f"The {what} {path} cannot be read: {exc.strerror}.") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"The {what} {path} is not a regular file: give the path of "
                             "a PEM file.")
        if info.st_size > limit:
            raise InputError(_too_large(what, path, info.st_size))
        try:
            data = handle.read(limit + 1)
        except OSError as exc:
            raise InputError(f"The {what} {path} cannot be read: {exc.strerror}.") from None
    if len(data) > limit:  # it grew since fstat
        raise InputError(_too_large(what, path, len(data)))
    return data


def _too_large(what: str, path: Path, size: int) -> str:
    return (f"The {what} {path} is {size:,} bytes: a PEM certificate or key is at most "
            f"{MAX_TLS_FILE_BYTES // (1024 * 1024)} MiB ({MAX_TLS_FILE_BYTES:,} bytes); "
            "check that the path names the certificate or key file.")


def _refuse_link(path: Path) -> None:
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode) or getattr(info, "st_file_attributes", 0) & _REPARSE_POINT:
        raise InputError(f"{path} is a link; ReelQueue does not read its TLS files through "
                         "links (remove it; a new one is made at the next start).")


def check_key_permissions(key_path: Path, *, insecure_ok: bool) -> None:
    """On POSIX a private key readable or writable by group or others is refused unless
    the user says so (``--tls-key-insecure-ok``)."""
    if os.name != "posix" or insecure_ok:
        return
    try:
        mode = key_path.stat().st_mode
    except OSError as exc:
        raise InputError(f"The TLS key {key_path} cannot be read: {exc.strerror}.") from None
    if mode & 0o077:
        raise InputError(f"The TLS key {key_path} can be read by other users (mode "
                         f"{stat.S_IMODE(mode):04o}): run 'chmod 600 {key_path}', or pass "
                         "--tls-key-insecure-ok to serve it anyway.")


def fingerprint(cert_path: Path) -> str:
    """SHA-256 of the certificate (DER), as colon-separated hex."""
    cert = x509.load_pem_x509_certificate(read_tls_file(cert_path, "TLS certificate"))
    digest = hashlib.sha256(cert.public_bytes(serialization.Encoding.DER)).hexdigest()
    return ":".join(digest[i:i + 2] for i in range(0, len(digest), 2)).upper()


def public_key_pin(cert_path: Path) -> str:
    """``sha256/`` + base64 of the SHA-256 of the certificate's SubjectPublicKeyInfo (the
    pin curl's ``--pinnedpubkey`` takes); it survives renewals, which keep the key."""
    cert = x509.load_pem_x509_certificate(read_tls_file(cert_path, "TLS certificate"))
    spki = cert.public_key().public_bytes(serialization.Encoding.DER,
                                          serialization.PublicFormat.SubjectPublicKeyInfo)
    return "sha256//" + base64.b64encode(hashlib.sha256(spki).digest()).decode()


def server_context(cert_path: Path, key_path: Path) -> ssl.SSLContext:
    """The server's context. Both files are measured and read (bounded) first, so
    OpenSSL, which reads a file whole, only ever loads one of at most
    :data:`MAX_TLS_FILE_BYTES`; InputError for a file too large or not loadable."""
    read_tls_file(cert_path, "TLS certificate (--tls-cert)")
    read_tls_file(key_path, "TLS key (--tls-key)")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(str(cert_path), str(key_path))
    except ssl.SSLError as exc:
        raise InputError(f"The TLS certificate {cert_path} and key {key_path} cannot be "
                         f"loaded ({exc.reason or exc}): give a PEM certificate and its "
                         "unencrypted PEM private key.") from None
    return context
