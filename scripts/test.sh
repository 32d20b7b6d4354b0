#!/usr/bin/env bash
# Runs every test: native unit/integration/property tests of the workspace (core, CLI incl. the
# end-to-end `vram measure --device cpu` run, web logic and charts), then the browser tests against the
# served release build. Installs whatever is missing first (scripts/install.sh), so it works on a fresh
# machine; fast when nothing is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
bash scripts/install.sh
export VRAM_REQUIRE_PYTHON=1   # measurement tests must run, not skip
export VRAM_PYTHON="$(bash scripts/python-env.sh 2>/dev/null | tail -1)"
cargo fmt --all -- --check
cargo test --workspace --locked
bash e2e/run.sh
