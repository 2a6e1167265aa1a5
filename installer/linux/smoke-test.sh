#!/usr/bin/env bash
# Smoke test of the frozen Linux build (CI runs it; see installer/README.md).
#
#   bash installer/linux/smoke-test.sh [--rebuild]
#
# Builds dist/ReelQueue with installer/linux/build.sh unless a build newer than every
# source file is there (--rebuild or REELQUEUE_SMOKE_REBUILD=1 forces one), then checks the
# frozen program, never the source tree (REELQUEUE_RESOURCES is unset):
#   1. the bundle holds resources/sample.mp4, keyring's backend registry, the Secret Service
#      client, the offscreen and xcb platforms; no QML, Quick, WebEngine or PDF;
#   2. `reelqueue --version` prints the project's version;
#   3. `reelqueue self-test` passes headless (QT_QPA_PLATFORM=offscreen, no display);
#      then `reelqueue serve` answers a submit over HTTPS (curl pins its certificate), and
#      `--store postgresql://...?sslmode=require status` creates the team schema on a
#      throwaway TLS-only PostgreSQL server (installer/linux/smoke-team-db.py); and the
#      bundled PyAV decodes resources/sample.mp4's first keyframe (a thumbnail);
#   4. keyring, in a real Secret Service (scripts/ci-secret-service.sh run, unless already
#      inside one): `accounts add` with the key on stdin stores it where secret-tool finds
#      it, `accounts remove` deletes it; and without a D-Bus session the app refuses with
#      "No usable OS keyring" instead of storing anything;
#   5. the window (when the build has reelqueue.ui.app): shown offscreen, time measured,
#      screenshot saved; otherwise skipped with a message;
# and reports the size on disk, the tarball's size, the glibc it needs and start-up times.
# The summary is printed and written to build/installer-smoke.md (and artifacts/ if
# present). Exit status: 0 when every check passed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
APP=dist/ReelQueue
BIN=$APP/reelqueue
REPORT=build/installer-smoke.md
fail=0
summary=()

say() { echo "smoke-test: $*"; }
ok() { say "PASS $*"; summary+=("- PASS $*"); }
bad() { say "FAIL $*"; summary+=("- **FAIL** $*"); fail=1; }
note() { say "$*"; summary+=("- $*"); }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

# --- Inner mode: the keyring checks, run inside the disposable Secret Service ------------
if [ "${1:-}" = "--keyring-checks" ]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    rc=0
    key="rq-smoke-$(date +%s%N)"
    if ! printf '%s\n' "$key" | "$BIN" --data-dir "$tmp/data" accounts add smoke \
        --provider mock --no-check >"$tmp/add.out" 2>&1; then
        cat "$tmp/add.out" >&2
        echo "keyring: 'accounts add' failed in the frozen app" >&2
        exit 1
    fi
    grep -q "key in the OS keyring" "$tmp/add.out" || { cat "$tmp/add.out" >&2; rc=1; }
    # Read back with another Secret Service client: the key is really in the keyring.
    found=$(secret-tool lookup service ReelQueue username account:smoke || true)
    [ "$found" = "$key" ] || { echo "keyring: secret-tool did not find the stored key" >&2; rc=1; }
    grep -rq "$key" "$tmp/data" && { echo "keyring: the key was found in the data folder" >&2; rc=1; }
    "$BIN" --data-dir "$tmp/data" accounts remove smoke >/dev/null 2>&1 \
        || { echo "keyring: 'accounts remove' failed" >&2; rc=1; }
    if secret-tool lookup service ReelQueue username account:smoke >/dev/null 2>&1; then
        echo "keyring: the key is still there after 'accounts remove'" >&2
        rc=1
    fi
    exit "$rc"
fi

[ "${1:-}" = "--rebuild" ] && REELQUEUE_SMOKE_REBUILD=1
unset REELQUEUE_RESOURCES PYTHON_KEYRING_BACKEND

# --- Build (unless a fresh one is there) --------------------------------------------------
build_needed=1
if [ -z "${REELQUEUE_SMOKE_REBUILD:-}" ] && [ -x "$BIN" ]; then
    newer=$(find app resources installer pyproject.toml -type f -newer "$BIN" \
        -not -path '*/__pycache__/*' -not -path 'tests/*' 2>/dev/null | head -1)
    if [ -z "$newer" ]; then
        build_needed=0
        note "build: reusing $APP (no source file is newer; --rebuild forces one)"
    else
        say "rebuilding: $newer is newer than $BIN"
    fi
fi
if [ "$build_needed" = 1 ]; then
    started=$(now)
    bash installer/linux/build.sh
    note "build: $(since "$started") s on $(nproc) cores (build.sh, incl. pip and tarball)"
fi
[ -x "$BIN" ] || { say "FAIL no $BIN"; exit 1; }
version=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' app/reelqueue/__init__.py)

# --- 1. What is in the bundle -------------------------------------------------------------
internal=$APP/_internal
missing=()
for path in resources/sample.mp4 resources/sample_prompts.csv resources/icons/app/reelqueue.svg \
    PySide6/Qt/plugins/platforms/libqoffscreen.so PySide6/Qt/plugins/platforms/libqxcb.so \
    PySide6/Qt/plugins/platforms/libqwayland.so PySide6/Qt/plugins/imageformats/libqsvg.so \
    PySide6/Qt/plugins/iconengines/libqsvgicon.so reelqueue/store/sql/schema.sql; do
    [ -e "$internal/$path" ] || missing+=("$path")
done
compgen -G "$internal/keyring-*.dist-info/entry_points.txt" >/dev/null \
    || missing+=("keyring-*.dist-info/entry_points.txt")
unwanted=$(find "$internal" \( -name 'libQt6Qml*' -o -name 'libQt6Quick*' -o -name 'libQt6WebEngine*' \
    -o -name 'libQt6Pdf*' -o -name 'libQt6Multimedia*' -o -name 'QtQml*' -o -name 'QtQuick*' \
    -o -name 'libgtk-3*' \) -printf '%f ' 2>/dev/null)
if [ ${#missing[@]} -eq 0 ] && [ -z "$unwanted" ]; then
    ok "bundle: resources, keyring registry, Qt platforms (offscreen, xcb, wayland), svg; no QML/Quick/WebEngine/PDF/GTK"
else
    bad "bundle: missing: ${missing[*]:-none}; unwanted: ${unwanted:-none}"
fi
if cmp -s resources/icons/app.svg resources/icons/app/reelqueue.svg; then
    ok "icon: resources/icons/app/ (png 16-1024, .ico, .icns) made from the window's resources/icons/app.svg"
else
    bad "icon: resources/icons/app/reelqueue.svg differs from resources/icons/app.svg: run installer/make-icons.sh"
fi
unresolved=$(find "$internal" -name '*.so*' -type f -print0 \
    | LD_LIBRARY_PATH="$internal:$internal/PySide6/Qt/lib" xargs -0 -n 20 ldd 2>/dev/null \
    | awk '/not found/ { print $1 }' | sort -u | tr '\n' ' ')
[ -z "$unresolved" ] || note "libraries neither bundled nor on this machine (the user's system must have them): $unresolved"
glibc=$(find "$internal" "$BIN" -type f \( -name '*.so*' -o -name reelqueue \) -print0 \
    | xargs -0 objdump -T 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1 || true)
[ -n "$glibc" ] && note "needs ${glibc/_/ } or newer (the build machine's: $(ldd --version | head -1 | awk '{print $NF}'))"

# --- 2. --version ---------------------------------------------------------------------------
out=$("$BIN" --version 2>&1) || true
if [ "$out" = "reelqueue $version" ]; then
    best=
    for _ in 1 2 3; do
        started=$(now)
        "$BIN" --version >/dev/null
        t=$(since "$started")
        if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$t; fi
    done
    ok "--version prints 'reelqueue $version' (start-up to exit: best of 3 $best s)"
else
    bad "--version printed '$out', want 'reelqueue $version'"
fi

# --- 3. self-test, headless -----------------------------------------------------------------
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
started=$(now)
rc=0
env -u DISPLAY -u WAYLAND_DISPLAY QT_QPA_PLATFORM=offscreen \
    "$BIN" --data-dir "$tmp/data" --videos-dir "$tmp/videos" self-test >"$tmp/self-test.out" 2>&1 || rc=$?
elapsed=$(since "$started")
sed 's/^/    /' "$tmp/self-test.out"
passes=$(grep -c '^PASS' "$tmp/self-test.out" || true)
if [ "$rc" = 0 ] && [ "$passes" -ge 4 ] && ! grep -q '^FAIL' "$tmp/self-test.out"; then
    ok "self-test: $passes checks passed headless in $elapsed s (parallel, retries, SIGKILL crash + reattach, keys)"
else
    bad "self-test: exit $rc, $passes PASS lines (see above)"
fi

# --- 3b. the HTTP API (aiohttp, cryptography) -----------------------------------------------
# A token, then `serve` on a free loopback port with its self-signed certificate; curl
# pins that certificate and submits one job (issue 14).
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
token=$("$BIN" --data-dir "$tmp/api" tokens add smoke 2>"$tmp/api-token.err" | tail -1 || true)
"$BIN" --data-dir "$tmp/api" --videos-dir "$tmp/api-videos" serve --paused \
    --listen "127.0.0.1:$port" >"$tmp/serve.out" 2>&1 &
serve_pid=$!
answer=""
for _ in $(seq 1 100); do
    if grep -q "Serving https://" "$tmp/serve.out" 2>/dev/null; then
        answer=$(curl -s --cacert "$tmp/api/api-cert.pem" -H "Authorization: Bearer $token" \
            -H "Idempotency-Key: smoke-1" -d '{"prompt": "smoke"}' \
            "https://127.0.0.1:$port/v1/jobs" || true)
        break
    fi
    sleep 0.2
done
kill "$serve_pid" 2>/dev/null || true
wait "$serve_pid" 2>/dev/null || true
if [ "$answer" = '{"id": 1, "replay": false}' ]; then
    ok "api: the frozen app served HTTPS (self-signed, pinned by curl) and took a job"
else
    sed 's/^/    /' "$tmp/serve.out" >&2
    bad "api: serve/submit failed (answer '$answer')"
fi

# --- 3c. the team database (psycopg, PostgreSQL over TLS) ------------------------------------
# psycopg_binary's libpq runs on the bundle's own OpenSSL (reelqueue.spec links its private
# copies to it): a throwaway loopback server that takes TLS connections only, and the
# frozen app's `--store URL?sslmode=require status` must create the team schema there.
for lib in libcrypto libssl; do
    link=$(find "$internal/psycopg_binary.libs" -name "$lib-*" 2>/dev/null | head -1)
    [ -L "$link" ] || bad "team-db: psycopg_binary.libs/$lib-* is not a link to the bundled $lib (the spec's _share_openssl did not apply)"
done
rc=0
"${PYTHON:-python3}" installer/linux/smoke-team-db.py "$BIN" "$tmp" >"$tmp/team-db.out" 2>&1 || rc=$?
if [ "$rc" = 0 ]; then
    ok "team-db: the frozen app opened a PostgreSQL team database over TLS (sslmode=require) and created its schema"
elif [ "$rc" = 77 ]; then
    sed 's/^/    /' "$tmp/team-db.out"
    note "team-db: SKIPPED: no PostgreSQL server here (scripts/ci-postgres.sh install; CI requires it)"
else
    sed 's/^/    /' "$tmp/team-db.out" >&2
    bad "team-db: the frozen app could not open the team database (exit $rc)"
fi

# --- 3d. thumbnails (PyAV's bundled FFmpeg) -------------------------------------------------
rc=0
REELQUEUE_FROZEN_SMOKE=thumbnail QT_QPA_PLATFORM=offscreen timeout 60 "$BIN" \
    >"$tmp/thumbnail.out" 2>&1 || rc=$?
if [ "$rc" = 0 ] && grep -q "reelqueue-smoke: thumbnail [0-9]*x[0-9]*" "$tmp/thumbnail.out"; then
    ok "thumbnail: the frozen app decoded resources/sample.mp4's first keyframe ($(sed -n 's/.*thumbnail \([0-9x]*\).*/\1/p' "$tmp/thumbnail.out"))"
else
    sed 's/^/    /' "$tmp/thumbnail.out" >&2
    bad "thumbnail: the frozen app made no thumbnail of resources/sample.mp4 (exit $rc)"
fi

# --- 4. keyring ----------------------------------------------------------------------------
keyring_log=$tmp/keyring.out
if [ "${REELQUEUE_DISPOSABLE_SECRET_SERVICE:-}" = 1 ]; then
    runner=(bash "$ROOT/installer/linux/smoke-test.sh" --keyring-checks)
else
    runner=(bash scripts/ci-secret-service.sh run bash "$ROOT/installer/linux/smoke-test.sh" --keyring-checks)
fi
if ! command -v secret-tool >/dev/null || ! command -v gnome-keyring-daemon >/dev/null; then
    bad "keyring: no Secret Service here (run 'bash scripts/ci-secret-service.sh install')"
elif "${runner[@]}" >"$keyring_log" 2>&1; then
    ok "keyring: the frozen app stored a key in the Secret Service (read back by secret-tool) and deleted it"
else
    grep -v 'Failed to set fd limit' "$keyring_log" | sed 's/^/    /' >&2
    bad "keyring: the frozen app could not use the Secret Service (its backends were lost?)"
fi
rc=0
printf 'k\n' | env -u DBUS_SESSION_BUS_ADDRESS XDG_RUNTIME_DIR="$tmp" "$BIN" --data-dir "$tmp/nobus" \
    accounts add nobus --provider mock --no-check >"$tmp/nobus.out" 2>&1 || rc=$?
if [ "$rc" = 2 ] && grep -q "No usable OS keyring" "$tmp/nobus.out"; then
    ok "keyring: without a D-Bus session the frozen app refuses (exit 2, 'No usable OS keyring'), no plain-text fallback"
else
    sed 's/^/    /' "$tmp/nobus.out" >&2
    bad "keyring: without a D-Bus session: exit $rc, want 2 and 'No usable OS keyring'"
fi

# --- 5. the window, offscreen ---------------------------------------------------------------
# Three starts on a fresh data folder each: the first after the build is the coldest.
shot=build/installer-smoke-window.png
rm -f "$shot"
times=() inner_times=() rc=0
for run in 1 2 3; do
    started=$(now)
    rc=0
    REELQUEUE_FROZEN_SMOKE=window REELQUEUE_FROZEN_SMOKE_SCREENSHOT="$ROOT/$shot" \
        QT_QPA_PLATFORM=offscreen timeout 60 "$BIN" --data-dir "$tmp/window$run" \
        --videos-dir "$tmp/window-videos" >"$tmp/window.out" 2>&1 || rc=$?
    wall=$(since "$started")
    [ "$rc" = 0 ] && grep -q "window shown after" "$tmp/window.out" || break
    times+=("$wall")
    inner_times+=("$(sed -n 's/.*window shown after \([0-9.]*\) s.*/\1/p' "$tmp/window.out")")
done
if [ "$rc" = 77 ]; then
    note "window: SKIPPED: this build has no reelqueue.ui.app yet (the window check runs once it exists)"
elif [ "$rc" = 0 ]; then
    median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 2p)
    ok "window: shown offscreen in ${times[*]} s from launch (median $median s; target < 2 s; in-process ${inner_times[*]} s); screenshot $shot"
    # Timing is reported, not enforced (a loaded 2-core CI machine would make it flaky),
    # unless REELQUEUE_SMOKE_STRICT_TIME=1.
    if ! awk -v m="$median" 'BEGIN { exit !(m < 2) }'; then
        if [ -n "${REELQUEUE_SMOKE_STRICT_TIME:-}" ]; then
            bad "window: median $median s is over the 2 s target"
        else
            note "window: WARNING: median $median s is over the 2 s target"
        fi
    fi
else
    sed 's/^/    /' "$tmp/window.out" >&2
    bad "window: exit $rc after $wall s (124: not shown within 60 s)"
fi

# --- Sizes ----------------------------------------------------------------------------------
size=$(du -sh "$APP" | cut -f1)
mb=$(du -sm "$APP" | cut -f1)
files=$(find "$APP" -type f | wc -l)
tarball=$(ls -t dist/ReelQueue-*-linux-*.tar.gz 2>/dev/null | head -1 || true)
# Target: 150 MB for the app, plus the video decoder PyAV bundles for thumbnails (issue 13:
# no system ffmpeg): its libraries are 71 MiB, stripped, all needed by libavcodec
# (docs/installer.md, "Size").
note "size: $APP is $size on disk ($mb MiB, $files files; target < 225 MB)${tarball:+; $(basename "$tarball") $(du -h "$tarball" | cut -f1)}"
[ "$mb" -lt 225 ] || bad "size: $mb MiB is over the 225 MB target"

mkdir -p build
{
    echo "# Frozen Linux build: smoke test ($(date '+%Y-%m-%d %H:%M'), reelqueue $version)"
    echo
    printf '%s\n' "${summary[@]}"
} >"$REPORT"
[ -d artifacts ] && cp "$REPORT" artifacts/ && { [ -f "$shot" ] && cp "$shot" artifacts/ || true; }
echo
cat "$REPORT"
if [ "$fail" = 0 ]; then
    say "all checks passed"
else
    say "some checks FAILED"
fi
exit "$fail"
