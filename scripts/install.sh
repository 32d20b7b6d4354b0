#!/usr/bin/env bash
# Installs what this project needs and is missing, from the package registries only (crates.io, npm,
# Debian, PyPI). Idempotent: each step checks first and is a no-op when the right version is there.
#
#   scripts/install.sh            # everything (web toolchain, browser, Python measurement env)
#   scripts/install.sh web        # only what building the page needs
#
# Versions are the ones verified on this machine kind (see docs/toolchain.md): trunk 0.21.14 (0.22 needs
# a newer rustc), wasm-bindgen-cli 0.2.130 (must equal the wasm-bindgen crate pin in Cargo.toml),
# binaryen 132 from npm (Debian's binaryen 108 produces a wasm that fails at run time).
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-all}"
log() { echo "install: $*" >&2; }

TRUNK_VERSION=0.21.14
WASM_BINDGEN_VERSION=0.2.130
WASM_SPLIT_VERSION=0.2.4
export PATH="$HOME/.cargo/bin:$PATH"

# Rust toolchain + wasm32 target: rust-toolchain.toml pins them; rustup installs on first use.
if ! rustup target list --installed 2>/dev/null | grep -q '^wasm32-unknown-unknown$'; then
  log "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown >&2
fi

if [ "$(trunk --version 2>/dev/null | awk '{print $2}')" != "$TRUNK_VERSION" ]; then
  log "installing trunk $TRUNK_VERSION (about 7 minutes on 2 cores)"
  cargo install trunk --version "$TRUNK_VERSION" --locked >&2
fi

if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$WASM_BINDGEN_VERSION" ]; then
  log "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (about 4 minutes)"
  # Without --locked: its lockfile pins a crate version the registry lacks (docs/toolchain.md).
  cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" >&2
fi

# wasm-split-cli has no --version: cargo's list of installed packages says which one is there.
if ! command -v wasm-split-cli >/dev/null 2>&1 \
  || ! cargo install --list | grep -qx "wasm_split_cli_support v$WASM_SPLIT_VERSION:"; then
  log "installing wasm-split-cli $WASM_SPLIT_VERSION (about 1 minute; splits the page's wasm, scripts/split-wasm.sh)"
  cargo install wasm_split_cli_support --version "$WASM_SPLIT_VERSION" --features build-binary --locked >&2
fi

# npm packages of the browser tests and wasm-opt (binaryen 132); no browser is downloaded.
if [ ! -x e2e/node_modules/.bin/wasm-opt ] || [ e2e/package-lock.json -nt e2e/node_modules/.package-lock.json ]; then
  log "installing e2e npm packages (binaryen, playwright-core, axe-core)"
  (cd e2e && npm ci --no-audit --no-fund --loglevel=error) >&2
fi

[ "$what" = web ] && exit 0

if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  log "installing Debian's chromium and chromium-driver"
  apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver >&2
fi

# Python environment for `vram measure` (torch, transformers, peft): ~4 GB the first time.
bash scripts/python-env.sh >/dev/null
