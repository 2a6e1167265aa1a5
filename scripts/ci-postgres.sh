#!/usr/bin/env bash
# PostgreSQL server binaries for the tests of the team journal (issue 15) on Debian.
#
#   scripts/ci-postgres.sh install
#       Installs Debian's `postgresql` package with apt-get (root, or sudo) when no
#       initdb + pg_ctl pair is found (PATH or /usr/lib/postgresql/*/bin). Idempotent. The
#       package's own cluster is not used (and not started here).
#
#   scripts/ci-postgres.sh check
#       Starts a throwaway server exactly as the tests do (tests/pgserver.py: initdb and
#       pg_ctl in a temporary folder, a free loopback port, as `nobody` when run as root),
#       runs `SELECT version()` through psycopg and stops it. Needs the project's venv.
#
# The tests start and stop their own server once per session; nothing listens beyond
# 127.0.0.1 and nothing outlives the run. REELQUEUE_REQUIRE_POSTGRES=1 turns "no server"
# from a skip into a failure (CI sets it).
set -euo pipefail
cd "$(dirname "$0")/.."

have_binaries() {
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
        return 0
    fi
    for folder in /usr/lib/postgresql/*/bin; do
        [ -x "$folder/initdb" ] && [ -x "$folder/pg_ctl" ] && return 0
    done
    return 1
}

install() {
    if have_binaries; then
        echo "ci-postgres: server binaries present"
        return 0
    fi
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq >/dev/null
    $sudo apt-get install -y --no-install-recommends postgresql >/dev/null
    have_binaries || { echo "ci-postgres: postgresql installed but no initdb/pg_ctl" >&2; exit 1; }
    echo "ci-postgres: installed Debian's postgresql"
}

check() {
    PYTHONPATH="${PYTHONPATH:-app}:." python - <<'PY'
import psycopg

from tests import pgserver

server = pgserver.start_server()
try:
    with psycopg.connect(server.dsn) as db:
        print("ci-postgres:", db.execute("SELECT version()").fetchone()[0])
finally:
    server.stop()
PY
}

case "${1:-}" in
    install) install ;;
    check) check ;;
    *) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
