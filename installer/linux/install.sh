#!/usr/bin/env bash
# ReelQueue for Linux: install (or remove) this unpacked tarball for the current user.
#
#   ./install.sh              copy the app to ~/.local/opt/ReelQueue, put `reelqueue` on
#                             ~/.local/bin, add the menu entry, the icon and the
#                             "Open with ReelQueue" entry for .csv and .xlsx files
#   ./install.sh --uninstall  remove all of that again. Your journal, logs and settings
#                             (~/.local/share/ReelQueue and friends) and your videos
#                             (~/Videos/ReelQueue) are kept; delete them by hand if you wish.
#
# Nothing needs root. PREFIX=/some/dir ./install.sh installs under /some/dir instead of
# ~/.local (PREFIX=/usr/local as root for every user of the machine).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prefix=${PREFIX:-$HOME/.local}
if [ -n "${PREFIX:-}" ]; then data=$prefix/share; else data=${XDG_DATA_HOME:-$HOME/.local/share}; fi
app_dir=$prefix/opt/ReelQueue
desktop_id=app.reelqueue.ReelQueue.desktop
sizes="16 24 32 48 64 128 256 512"

refresh() {
    command -v update-desktop-database >/dev/null && update-desktop-database -q "$data/applications" || true
    command -v gtk-update-icon-cache >/dev/null && gtk-update-icon-cache -q -t "$data/icons/hicolor" || true
}

if [ "${1:-}" = "--uninstall" ]; then
    rm -rf "$app_dir"
    [ -L "$prefix/bin/reelqueue" ] && rm -f "$prefix/bin/reelqueue"
    rm -f "$data/applications/$desktop_id"
    for n in $sizes; do rm -f "$data/icons/hicolor/${n}x${n}/apps/reelqueue.png"; done
    rm -f "$data/icons/hicolor/scalable/apps/reelqueue.svg"
    refresh
    echo "ReelQueue removed. Your journal, settings and videos were kept."
    exit 0
fi

[ -x "$here/ReelQueue/reelqueue" ] || { echo "install.sh: $here/ReelQueue/reelqueue not found" >&2; exit 1; }
mkdir -p "$prefix/opt" "$prefix/bin" "$data/applications"
rm -rf "$app_dir.new"
cp -a "$here/ReelQueue" "$app_dir.new"
rm -rf "$app_dir"
mv "$app_dir.new" "$app_dir"
ln -sfn "$app_dir/reelqueue" "$prefix/bin/reelqueue"

icons=$app_dir/_internal/resources/icons/app
for n in $sizes; do
    mkdir -p "$data/icons/hicolor/${n}x${n}/apps"
    cp "$icons/reelqueue-$n.png" "$data/icons/hicolor/${n}x${n}/apps/reelqueue.png"
done
mkdir -p "$data/icons/hicolor/scalable/apps"
cp "$icons/reelqueue.svg" "$data/icons/hicolor/scalable/apps/reelqueue.svg"

# The menu entry runs the installed program by its full path (~/.local/bin may not be on
# the desktop session's PATH).
sed -e "s|^Exec=reelqueue |Exec=\"$app_dir/reelqueue\" |" \
    -e "s|^TryExec=reelqueue|TryExec=$app_dir/reelqueue|" \
    "$here/$desktop_id" >"$data/applications/$desktop_id"
refresh

echo "ReelQueue installed in $app_dir."
echo "Start it from the applications menu, or run: reelqueue  (the command is in $prefix/bin)"
case ":$PATH:" in *":$prefix/bin:"*) ;; *) echo "Note: $prefix/bin is not on your PATH." ;; esac
echo "API keys are kept in your desktop's keyring (GNOME Keyring, KWallet or KeePassXC)."
