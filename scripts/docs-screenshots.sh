#!/usr/bin/env bash
# Build the docs site and photograph two pages with headless Chromium, so a person can
# check how the site renders: the landing page and the mcpcore API reference.
#
#   scripts/docs-screenshots.sh [OUT_DIR]      # default: site-screenshots/
#
# Needs Debian's `chromium` (apt-get install chromium). Nothing leaves the machine: the
# pages are opened from the built files, and Chromium's background networking is off.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$here/site-screenshots}"
browser="$(command -v chromium || command -v chromium-browser || true)"
[ -n "$browser" ] || { echo "docs-screenshots: chromium is not installed (apt-get install chromium)" >&2; exit 2; }
"$here/.venv/bin/mkdocs" build --strict --quiet --config-file "$here/mkdocs.yml"
mkdir -p "$out"
profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
shoot() {  # PAGE FILE
  "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$profile" --hide-scrollbars --window-size=1280,1000 \
    --screenshot="$out/$2" "file://$here/site/$1" >/dev/null 2>&1
  echo "docs-screenshots: $out/$2"
}
shoot index.html landing.png
shoot reference/mcpcore/index.html reference-mcpcore.png
