#!/usr/bin/env bash
# Set up a fresh machine and serve the app: installs what is missing, builds the release bundle, and
# serves dist/ on http://127.0.0.1:${PORT:-8080}/ (Ctrl-C stops). VRAM_NO_SERVE=1 builds only.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh web
bash scripts/build-web.sh
cargo build --release -p vram_cli >&2
echo "setup: CLI at target/release/vram; page in dist/" >&2
if [ "${VRAM_NO_SERVE:-0}" = 1 ]; then exit 0; fi
port="${PORT:-8080}"
echo "setup: serving http://127.0.0.1:$port/ (Ctrl-C to stop)" >&2
exec python3 -m http.server --bind 127.0.0.1 --directory dist "$port"
