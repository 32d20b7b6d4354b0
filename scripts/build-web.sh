#!/usr/bin/env bash
# Builds the page's release bundle into dist/ with Trunk, offline, with the pinned wasm-bindgen and
# binaryen 132's wasm-opt from e2e/node_modules (Trunk.toml pins both, so a mismatch is an error, never a
# download). Relative asset URLs (--public-url ./) so dist/ works from any sub-path of a static host.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/e2e/node_modules/.bin:$HOME/.cargo/bin:$PATH"
cargo fetch >/dev/null 2>&1 || true   # Trunk's offline mode passes --offline to cargo
trunk build --release --public-url ./ >&2
echo "build-web: dist/ ready ($(du -sh dist | cut -f1))" >&2
