"""Smoke step of installer/linux/smoke-test.sh: the frozen app opens a team database over TLS.

    python installer/linux/smoke-team-db.py dist/ReelQueue/reelqueue WORKDIR

Starts a throwaway PostgreSQL server (tests/pgserver.py: loopback only, stopped at the end),
turns on TLS with a self-signed certificate and allows only `hostssl` connections, then runs
the frozen program's `--store postgresql://...?sslmode=require status`: it must create the
team schema. psycopg's libpq in the bundle uses the bundle's OpenSSL (installer/reelqueue.spec,
_share_openssl), so this is where a mismatch would show. Exit 0: passed; 1: failed; 77: no
PostgreSQL server binaries here (a failure when REELQUEUE_REQUIRE_POSTGRES=1).
"""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "app")]

SKIP = 77


def _self_signed(folder: Path, owner: tuple[int, int] | None) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .sign(key, hashes.SHA256()))
    (folder / "server.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path = folder / "server.key"
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    key_path.chmod(0o600)
    if owner is not None:
        for path in (folder / "server.crt", key_path):
            os.chown(path, *owner)


def main() -> int:
    import psycopg
    from tests import pgserver

    binary, work = sys.argv[1], Path(sys.argv[2])
    try:
        server = pgserver.start_server()
    except RuntimeError as error:
        print(f"team-db: no server: {error}")
        return 1 if pgserver.required() else SKIP
    try:
        if server.folder is None:
            print("team-db: REELQUEUE_TEST_POSTGRES_DSN is set; this step needs its own server")
            return SKIP
        data = server.folder / "data"
        owner = (data.stat().st_uid, data.stat().st_gid) if os.geteuid() == 0 else None
        _self_signed(data, owner)
        with open(data / "postgresql.auto.conf", "a", encoding="utf-8") as conf:
            conf.write("ssl = on\n")
        (data / "pg_hba.conf").write_text(
            "local all all trust\nhostssl all all 127.0.0.1/32 trust\n", encoding="utf-8")
        reloaded = server.ctl("reload")
        if reloaded.returncode:
            print(f"team-db: pg_ctl reload failed: {reloaded.stderr.strip()}")
            return 1
        # The server now refuses a connection without TLS (so the frozen app's can only be TLS).
        for _ in range(50):
            try:
                psycopg.connect(server.dsn + "?sslmode=disable", connect_timeout=5).close()
            except psycopg.OperationalError:
                break
            time.sleep(0.1)  # the reload is asynchronous (SIGHUP)
        else:
            print("team-db: the server still accepts connections without TLS")
            return 1
        url = server.dsn + "?sslmode=require"
        done = subprocess.run([binary, "--data-dir", str(work / "data"), "--store", url,
                               "status"], capture_output=True, text=True, timeout=120,
                              check=False)
        if done.returncode:
            print(f"team-db: `--store ... status` exited {done.returncode}:\n"
                  f"{done.stdout[-1500:]}{done.stderr[-1500:]}")
            return 1
        with psycopg.connect(url) as db:
            tables = db.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_name = 'jobs'"
            ).fetchone()
        if not tables or tables[0] < 1:
            print("team-db: the frozen app ran but no 'jobs' table was created")
            return 1
        print("team-db: the frozen app opened the team database over TLS "
              "(sslmode=require, hostssl only) and created its schema")
        return 0
    finally:
        server.stop()


if __name__ == "__main__":
    raise SystemExit(main())
