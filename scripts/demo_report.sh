#!/usr/bin/env bash
# Builds report.html from synthetic, realistic run records and, when chromium is installed, takes
# the screenshot shown in docs/report.md (docs/report.png).
#   scripts/demo_report.sh [OUT_DIR]   (default: build/demo-run; needs a built clocktrain)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/demo-run}
bin=${CLOCKTRAIN_BIN:-build/release/clocktrain}
rm -rf "$out"
/usr/bin/python3 scripts/demo_run_records.py "$out"
"$bin" report "$out"
if command -v chromium >/dev/null; then
  profile=$(mktemp -d)
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --hide-scrollbars --user-data-dir="$profile" \
    --screenshot=docs/report.png --window-size=1200,${DEMO_HEIGHT:-1800} "file://$(realpath "$out")/report.html" 2>/dev/null
  rm -rf "$profile"
  echo "docs/report.png"
fi
