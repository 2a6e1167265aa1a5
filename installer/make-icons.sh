#!/usr/bin/env bash
# Renders the app icon into every size the platforms need, in resources/icons/app/.
# The one source is resources/icons/app.svg, the icon the window itself shows
# (reelqueue.ui.theme.app_icon), so the window, the menu entries, the installer and the
# Dock show the same picture:
#   resources/icons/app/reelqueue.svg      a copy of it (the Linux "scalable" icon)
#   resources/icons/app/reelqueue-<N>.png  N = 16 24 32 48 64 128 256 512 1024
#   resources/icons/app/reelqueue.ico      16..256, for Windows (exe, installer, shortcuts)
#   resources/icons/app/reelqueue.icns     16..1024, for the macOS .app
# The results are committed; run this again after editing resources/icons/app.svg
# (installer/linux/smoke-test.sh fails while the copy differs from it).
# Needs Debian's librsvg2-bin (rsvg-convert), imagemagick (convert) and icnsutils (png2icns):
#   apt-get install -y --no-install-recommends librsvg2-bin imagemagick icnsutils
set -euo pipefail
cd "$(dirname "$0")/../resources/icons/app"
cp ../app.svg reelqueue.svg
for tool in rsvg-convert convert png2icns; do
    command -v "$tool" >/dev/null || { echo "make-icons: $tool not found" >&2; exit 1; }
done
for n in 16 24 32 48 64 128 256 512 1024; do
    rsvg-convert -w "$n" -h "$n" reelqueue.svg -o "reelqueue-$n.png"
done
# PNG-compressed 256 px entry, BMP for the small ones (what Windows Explorer expects).
convert reelqueue-16.png reelqueue-24.png reelqueue-32.png reelqueue-48.png \
    reelqueue-64.png reelqueue-128.png reelqueue-256.png reelqueue.ico
png2icns reelqueue.icns reelqueue-16.png reelqueue-32.png reelqueue-48.png \
    reelqueue-128.png reelqueue-256.png reelqueue-512.png reelqueue-1024.png >/dev/null
ls -l reelqueue.svg reelqueue-*.png reelqueue.ico reelqueue.icns
