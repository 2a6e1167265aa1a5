#!/usr/bin/env bash
# Builds ReelQueue for Linux with PyInstaller (installer/reelqueue.spec):
#   dist/ReelQueue/                                the one-folder app (dist/ReelQueue/reelqueue)
#   dist/ReelQueue-<version>-linux-<arch>.tar.gz  that folder + install.sh + the .desktop file
#
#   bash installer/linux/build.sh [--no-tarball]
#
# Python: the active virtual environment if there is one, else build/installer-venv (made
# with $PYTHON, default python3, 3.11+). Into it go installer/requirements-build.txt and,
# unless already there, the project with its gui extra (pip install -e '.[gui]').
# As root with apt-get, it first installs the few X11 libraries Qt's xcb plugin needs that a
# minimal machine lacks, so that they are bundled (REELQUEUE_BUILD_NO_APT=1 skips that).
# The app needs glibc no older than the build machine's: build releases on the oldest
# distribution you support (installer/README.md).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
tarball=1
[ "${1:-}" = "--no-tarball" ] && tarball=0

log() { echo "build.sh: $*"; }

# --- Python -------------------------------------------------------------------------------
if [ -n "${VIRTUAL_ENV:-}" ] && [ -x "$VIRTUAL_ENV/bin/python" ]; then
    py=$VIRTUAL_ENV/bin/python
else
    venv=$ROOT/build/installer-venv
    if [ ! -x "$venv/bin/python" ]; then
        log "creating $venv"
        "${PYTHON:-python3}" -m venv "$venv"
    fi
    py=$venv/bin/python
fi
log "python: $py ($("$py" --version 2>&1))"
"$py" -m pip install -q -r installer/requirements-build.txt
# The project and its runtime + gui dependencies (as pyproject.toml lists them).
if ! "$py" - <<'EOF'
import sys, tomllib
from importlib import metadata
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
extras = project["optional-dependencies"]
wanted = ["reelqueue", *project["dependencies"], *extras["gui"], *extras["cut"]]
missing = []
for req in wanted:
    name = req.split(";")[0].split("[")[0]
    for op in "<>=!~ ":
        name = name.split(op)[0]
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        missing.append(name)
sys.exit(1 if missing else 0)
EOF
then
    log "installing the project with its gui extra"
    "$py" -m pip install -q -e '.[gui]'
fi

# --- System libraries worth bundling ------------------------------------------------------
# Qt's xcb platform plugin links libxcb-icccm4 and libxcb-keysyms1, which minimal systems
# (and this CI machine) lack; installed here, PyInstaller bundles them with the plugin.
XCB_PACKAGES=(libxcb-icccm4 libxcb-keysyms1 libxcb-cursor0 libxkbcommon-x11-0)
if [ -z "${REELQUEUE_BUILD_NO_APT:-}" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    missing=()
    for pkg in "${XCB_PACKAGES[@]}"; do
        [ "$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)" = installed ] \
            || missing+=("$pkg")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        log "installing ${missing[*]} (bundled with Qt's xcb plugin)"
        apt_install() {
            DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
                --no-install-recommends "${missing[@]}" >/dev/null 2>&1
        }
        apt_install || { apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null 2>&1 && apt_install; } \
            || log "WARNING: could not install ${missing[*]}; the xcb plugin will rely on the user's"
    fi
fi

# --- PyInstaller --------------------------------------------------------------------------
mkdir -p build
started=$(date +%s)
log "running PyInstaller (log: build/installer-build.log)"
if ! "$py" -m PyInstaller --noconfirm --clean --log-level WARN --distpath dist \
    --workpath build/pyinstaller installer/reelqueue.spec >build/installer-build.log 2>&1; then
    tail -40 build/installer-build.log >&2
    log "PyInstaller failed"
    exit 1
fi
grep -E "^reelqueue.spec:" build/installer-build.log || true
[ -x dist/ReelQueue/reelqueue ] || { log "dist/ReelQueue/reelqueue was not made"; exit 1; }
log "built dist/ReelQueue in $(($(date +%s) - started)) s: $(du -sh dist/ReelQueue | cut -f1)"

# --- Tarball ------------------------------------------------------------------------------
if [ "$tarball" = 1 ]; then
    version=$("$py" -c "import sys; sys.path.insert(0, 'app'); import reelqueue; print(reelqueue.__version__)")
    name=ReelQueue-$version-linux-$(uname -m)
    stage=build/tarball/$name
    rm -rf build/tarball
    mkdir -p "$stage"
    cp -al dist/ReelQueue "$stage/ReelQueue" 2>/dev/null || cp -a dist/ReelQueue "$stage/ReelQueue"
    cp installer/linux/install.sh installer/linux/app.reelqueue.ReelQueue.desktop "$stage/"
    cat >"$stage/README.txt" <<EOF
ReelQueue $version for Linux ($(uname -m)).

Run it in place:     ./ReelQueue/reelqueue          (no arguments: the window)
Install for you:     ./install.sh                   (menu entry, icon, 'reelqueue' command)
Uninstall:           ./install.sh --uninstall       (keeps your journal and videos)

API keys are stored in your desktop's keyring through the Secret Service (GNOME Keyring,
KWallet 5.97+ or KeePassXC); ReelQueue never stores them in plain text.
EOF
    tar --owner=0 --group=0 --numeric-owner -C build/tarball -czf "dist/$name.tar.gz" "$name"
    rm -rf build/tarball
    log "tarball dist/$name.tar.gz: $(du -h "dist/$name.tar.gz" | cut -f1)"
fi
