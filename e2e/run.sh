#!/usr/bin/env bash
# Browser tests of the vram page, self-contained and idempotent:
#   1. installs the npm tools if missing (playwright-core, axe-core, binaryen's wasm-opt; no browser download),
#   2. builds the release bundle with Trunk, offline, with the pinned tools (Trunk.toml),
#   3. serves it with python3 -m http.server on 127.0.0.1 (at / and at /sub/path/) on a free port,
#   4. runs e2e/tests/*.mjs in Debian's /usr/bin/chromium and prints `e2e: N passed, M failed`,
#   5. stops the server. Exits non-zero on any failure.
# Env: VRAM_E2E_SKIP_BUILD=1 reuses dist/; VRAM_E2E_ONLY=substring runs matching tests only.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

fail() { echo "e2e: $*" >&2; echo "e2e: 0 passed, 1 failed"; exit 1; }

for tool in node npm python3 trunk wasm-bindgen wasm-split-cli; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (run the README set-up command)"
done
CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
[ -x "$CHROMIUM" ] || fail "$CHROMIUM is missing (apt-get install -y chromium)"
export CHROMIUM

if ! (cd e2e && node -e "require.resolve('playwright-core'); require.resolve('axe-core')" 2>/dev/null) \
  || [ ! -x e2e/node_modules/.bin/wasm-opt ]; then
  (cd e2e && npm ci --no-audit --no-fund --loglevel=error)
fi
export PATH="$ROOT/e2e/node_modules/.bin:$PATH"
[ "$(wasm-opt --version)" = "wasm-opt version 132 (version_132)" ] || fail "wasm-opt is not binaryen 132: $(command -v wasm-opt)"

if [ "${VRAM_E2E_SKIP_BUILD:-0}" != 1 ] || [ ! -f dist/index.html ]; then
  nice -n 19 trunk build --release --public-url ./ || fail "trunk build failed"
fi

# The CLI the estimates are compared with (same scenario, same core). Built (a no-op when up to date)
# so it never lags behind the core the wasm was built from; VRAM_BIN overrides.
if [ -z "${VRAM_BIN:-}" ]; then
  nice -n 19 cargo build -q -p vram_cli || fail "cargo build -p vram_cli failed"
  VRAM_BIN="$ROOT/target/debug/vram"
fi
export VRAM_BIN

SERVE="$(mktemp -d /tmp/vram-e2e-serve.XXXXXX)"
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$SERVE"
}
trap cleanup EXIT
cp -r dist/. "$SERVE/"
mkdir -p "$SERVE/sub/path"
cp -r dist/. "$SERVE/sub/path/"

PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
python3 -m http.server "$PORT" --bind 127.0.0.1 --directory "$SERVE" >"$SERVE.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 100); do
  if python3 -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$PORT/index.html', timeout=1)" 2>/dev/null; then break; fi
  sleep 0.1
done
kill -0 "$SERVER_PID" 2>/dev/null || fail "the static server did not start: $(cat "$SERVE.log")"

export VRAM_E2E_URL="http://127.0.0.1:$PORT/"
set +e
node e2e/main.mjs
status=$?
set -e
rm -f "$SERVE.log"
exit $status
