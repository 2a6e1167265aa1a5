#!/usr/bin/env bash
# A real, disposable Secret Service (gnome-keyring) for tests on a headless Debian machine.
#
#   scripts/ci-secret-service.sh install
#       Installs Debian's gnome-keyring, dbus, dbus-x11 and libsecret-tools with apt-get
#       (root, or sudo). Idempotent: does nothing when they are already installed.
#
#   scripts/ci-secret-service.sh run COMMAND [ARG...]
#       Runs COMMAND inside a private D-Bus session (dbus-run-session) in which
#       gnome-keyring-daemon serves org.freedesktop.secrets with an unlocked default
#       ("login") collection kept in a temporary folder. Exits with COMMAND's status.
#       The daemon is stopped and the folder removed afterwards; the user's own keyrings
#       are never touched. In COMMAND's environment:
#         DBUS_SESSION_BUS_ADDRESS             the private bus (set by dbus-run-session)
#         REELQUEUE_DISPOSABLE_SECRET_SERVICE  1: tests may lock/alter this keyring
#       PYTHON_KEYRING_BACKEND is unset so keyring chooses its backend itself.
#
# CI:
#   bash scripts/ci-secret-service.sh install
#   REELQUEUE_REQUIRE_SECRET_SERVICE=1 PYTHONPATH=app \
#       bash scripts/ci-secret-service.sh run python -m pytest tests/credentials -q
#
# By hand, what `run` does:
#   dbus-run-session -- bash -c 'printf %s PASSWORD \
#       | gnome-keyring-daemon --foreground --unlock --components=secrets & exec "$@"' _ CMD...
# (--unlock reads the password on stdin and creates the "login" collection with it, made
# the default and left unlocked; no --start is needed. dbus-daemon may print "Failed to set
# fd limit": harmless.)
set -euo pipefail

PACKAGES=(gnome-keyring dbus dbus-x11 libsecret-tools)
# dbus-x11 satisfies gnome-keyring's need for a session bus provider without pulling in
# systemd (the alternative, dbus-user-session); libsecret-tools gives secret-tool, used
# below to prove the Secret Service works before the command starts.

# The keyring is disposable and lives in a temporary folder: its password protects nothing.
KEYRING_PASSWORD="reelqueue-ci"

usage() {
    sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
}

die() {
    echo "ci-secret-service: $*" >&2
    exit 1
}

install_packages() {
    local missing=() pkg status
    for pkg in "${PACKAGES[@]}"; do
        status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
        [ "$status" = installed ] || missing+=("$pkg")
    done
    if [ ${#missing[@]} -eq 0 ]; then
        echo "ci-secret-service: already installed: ${PACKAGES[*]}"
        return 0
    fi
    local sudo=()
    if [ "$(id -u)" != 0 ]; then
        command -v sudo >/dev/null || die "need root (or sudo) to install ${missing[*]}"
        sudo=(sudo)
    fi
    echo "ci-secret-service: installing ${missing[*]}"
    # Wait for another apt/dpkg run instead of failing on its lock.
    "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}"
}

# Runs inside dbus-run-session: $1 = temporary folder, the rest = the command.
inside_session() {
    local tmp=$1
    shift
    mkdir -m 700 "$tmp/data" "$tmp/runtime"
    # Keyrings go to $XDG_DATA_HOME/keyrings, the control socket to $XDG_RUNTIME_DIR/keyring:
    # both in the temporary folder, for the daemon only.
    printf %s "$KEYRING_PASSWORD" \
        | XDG_DATA_HOME="$tmp/data" XDG_RUNTIME_DIR="$tmp/runtime" \
            gnome-keyring-daemon --foreground --unlock --components=secrets \
            >"$tmp/daemon.log" 2>&1 &
    local daemon=$!
    # shellcheck disable=SC2064  # expand $daemon now
    trap "kill $daemon 2>/dev/null || true; wait $daemon 2>/dev/null || true" EXIT

    local i
    for i in $(seq 100); do
        if dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
            org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null \
            | grep -q 'boolean true'; then
            break
        fi
        kill -0 "$daemon" 2>/dev/null || { cat "$tmp/daemon.log" >&2; die "gnome-keyring-daemon exited"; }
        [ "$i" -lt 100 ] || { cat "$tmp/daemon.log" >&2; die "no Secret Service on the bus after 10 s"; }
        sleep 0.1
    done

    # Prove a round trip through the default collection with another client (libsecret).
    local label=reelqueue-ci-smoke
    printf %s smoke | secret-tool store --label="$label" reelqueue-ci "$label" \
        || die "secret-tool could not store into the default collection"
    [ "$(secret-tool lookup reelqueue-ci "$label")" = smoke ] \
        || die "secret-tool could not read back from the default collection"
    secret-tool clear reelqueue-ci "$label"

    unset PYTHON_KEYRING_BACKEND
    export REELQUEUE_DISPOSABLE_SECRET_SERVICE=1
    local rc=0
    "$@" || rc=$?
    return "$rc"
}

run_command() {
    [ $# -gt 0 ] || usage
    local tool
    for tool in dbus-run-session dbus-send gnome-keyring-daemon secret-tool; do
        command -v "$tool" >/dev/null || die "$tool not found: run '$0 install' first"
    done
    local tmp rc=0
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/reelqueue-secret-service.XXXXXX")
    # shellcheck disable=SC2064  # expand $tmp now
    trap "rm -rf '$tmp'" EXIT
    dbus-run-session -- bash -c "$(declare -f die inside_session); \
        KEYRING_PASSWORD='$KEYRING_PASSWORD'; set -euo pipefail; inside_session \"\$@\"" \
        ci-secret-service "$tmp" "$@" || rc=$?
    return "$rc"
}

case "${1:-}" in
install) install_packages ;;
run)
    shift
    run_command "$@"
    ;;
*) usage ;;
esac
