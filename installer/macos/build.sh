#!/usr/bin/env bash
# Builds ReelQueue for macOS: dist/ReelQueue.app and dist/ReelQueue-<version>-macos-<arch>.dmg
#
#   bash installer/macos/build.sh [--no-dmg] [--no-smoke]
#
# Needs: macOS 11+, Xcode command line tools (xcode-select --install), Python 3.11+ from
# python.org (its universal2 build) or Homebrew. Uses the active virtual environment, else
# makes build/installer-venv with $PYTHON (default python3). The .app is for the machine's
# architecture (arm64 or x86_64); build on each for both.
#
# Signing and notarization (optional; without them Gatekeeper asks the user to confirm the
# first start with right-click > Open):
#   REELQUEUE_CODESIGN_IDENTITY="Developer ID Application: Name (TEAMID)"  signs the .app
#       (PyInstaller signs every binary; this script then signs the bundle with the
#       hardened runtime, and the .dmg)
#   REELQUEUE_NOTARY_PROFILE=name   a `xcrun notarytool store-credentials` profile: the .dmg
#       is notarized and stapled
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
dmg=1 smoke=1
for arg in "$@"; do
    case $arg in
    --no-dmg) dmg=0 ;;
    --no-smoke) smoke=0 ;;
    *) echo "usage: $0 [--no-dmg] [--no-smoke]" >&2; exit 2 ;;
    esac
done
log() { echo "build.sh: $*"; }

# --- Python -------------------------------------------------------------------------------
if [ -n "${VIRTUAL_ENV:-}" ] && [ -x "$VIRTUAL_ENV/bin/python" ]; then
    py=$VIRTUAL_ENV/bin/python
else
    venv=$ROOT/build/installer-venv
    [ -x "$venv/bin/python" ] || "${PYTHON:-python3}" -m venv "$venv"
    py=$venv/bin/python
fi
log "python: $py ($("$py" --version 2>&1), $(uname -m))"
"$py" -m pip install -q -r installer/requirements-build.txt -e '.[gui]'
version=$("$py" -c "import sys; sys.path.insert(0, 'app'); import reelqueue; print(reelqueue.__version__)")

# --- PyInstaller --------------------------------------------------------------------------
started=$(date +%s)
"$py" -m PyInstaller --noconfirm --clean --log-level WARN --distpath dist \
    --workpath build/pyinstaller installer/reelqueue.spec
app=dist/ReelQueue.app
bin=$app/Contents/MacOS/reelqueue
[ -x "$bin" ] || { log "$bin was not made"; exit 1; }
# The one-folder dist/ReelQueue is PyInstaller's intermediate step; the .app is the product.
rm -rf dist/ReelQueue
log "built $app in $(($(date +%s) - started)) s: $(du -sh "$app" | cut -f1)"

if [ -n "${REELQUEUE_CODESIGN_IDENTITY:-}" ]; then
    codesign --force --options runtime --timestamp --sign "$REELQUEUE_CODESIGN_IDENTITY" "$app"
    codesign --verify --strict --verbose=2 "$app"
fi

# --- Smoke test ---------------------------------------------------------------------------
if [ "$smoke" = 1 ]; then
    out=$("$bin" --version)
    [ "$out" = "reelqueue $version" ] || { log "FAIL --version printed '$out'"; exit 1; }
    log "PASS --version"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    QT_QPA_PLATFORM=offscreen "$bin" --data-dir "$tmp/data" --videos-dir "$tmp/videos" self-test
    log "PASS self-test"
    # The frozen keyring must find the macOS Keychain (backends come through entry points,
    # which frozen builds have lost before). The first use may ask to allow access.
    printf 'rq-smoke-%s\n' "$RANDOM$RANDOM" \
        | "$bin" --data-dir "$tmp/keys" accounts add smoke --provider mock --no-check
    security find-generic-password -s ReelQueue -a account:smoke >/dev/null \
        || { log "FAIL keyring: no ReelQueue item in the login keychain"; exit 1; }
    "$bin" --data-dir "$tmp/keys" accounts remove smoke
    log "PASS keyring (macOS Keychain)"
fi

# --- .dmg ---------------------------------------------------------------------------------
if [ "$dmg" = 1 ]; then
    name=ReelQueue-$version-macos-$(uname -m)
    stage=build/dmg/ReelQueue
    rm -rf build/dmg
    mkdir -p "$stage"
    ditto "$app" "$stage/ReelQueue.app"
    ln -s /Applications "$stage/Applications"  # drag the app onto it to install
    rm -f "dist/$name.dmg"
    hdiutil create -volname "ReelQueue $version" -srcfolder "$stage" -fs HFS+ \
        -format UDZO -imagekey zlib-level=9 -ov "dist/$name.dmg"
    rm -rf build/dmg
    if [ -n "${REELQUEUE_CODESIGN_IDENTITY:-}" ]; then
        codesign --force --timestamp --sign "$REELQUEUE_CODESIGN_IDENTITY" "dist/$name.dmg"
    fi
    if [ -n "${REELQUEUE_NOTARY_PROFILE:-}" ]; then
        xcrun notarytool submit "dist/$name.dmg" --keychain-profile "$REELQUEUE_NOTARY_PROFILE" --wait
        xcrun stapler staple "dist/$name.dmg"
    fi
    log "disk image dist/$name.dmg: $(du -h "dist/$name.dmg" | cut -f1)"
fi
