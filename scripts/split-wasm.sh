#!/usr/bin/env bash
# Trunk post_build hook: splits the page's wasm at its `#[lazy]` functions, so that the first load
# carries only the shell (header, language, model loader) and the rest comes in chunks on first use.
#
# Trunk 0.21 runs cargo → wasm-bindgen → (wasm-opt) on one module and has no step between cargo and
# wasm-bindgen, where the split must happen (the split rewrites the module's imports and exports that
# wasm-bindgen then binds). So this hook redoes that part, as cargo-leptos does with `split = true`:
#   1. wasm-split-cli (wasm_split_cli_support, installed by scripts/install.sh) splits cargo's output
#      (linked with --emit-relocs, see .cargo/config.toml) into the main module, one chunk per lazy
#      function, shared chunks, and the loader `__wasm_split.js`;
#   2. wasm-bindgen (the pinned one) binds the main module, keeping the exports the chunks link to;
#   3. in release builds wasm-opt -Oz (binaryen 132, as Trunk.toml pins) shrinks every module;
#   4. chunks and loader get content-hashed names; the staged JS and wasm are replaced, and their
#      `integrity` hashes in index.html rewritten.
# Without the split the page cannot run: the lazy functions import their loader from a placeholder
# module that only this step resolves. The hook therefore runs for every build, debug included.
set -euo pipefail
stage="${TRUNK_STAGING_DIR:?TRUNK_STAGING_DIR is set by trunk}"
source_dir="${TRUNK_SOURCE_DIR:-$PWD}"
target_dir="${CARGO_TARGET_DIR:-$source_dir/target}"
case "${TRUNK_PROFILE:-debug}" in
  release) profile=wasm-release; optimize=1 ;;   # index.html: data-cargo-profile-release
  *) profile=debug; optimize=0 ;;
esac
raw="$target_dir/wasm32-unknown-unknown/$profile/vram_web.wasm"
[ -f "$raw" ] || { echo "split-wasm: cargo's output $raw is missing" >&2; exit 1; }
shopt -s nullglob
staged_js=("$stage"/vram_web-*.js)
[ ${#staged_js[@]} = 1 ] || { echo "split-wasm: expected one staged vram_web-*.js, found ${#staged_js[@]}" >&2; exit 1; }
base="$(basename "${staged_js[0]}" .js)"          # vram_web-<hash>, the name Trunk gave the bundle
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

wasm-split-cli "$raw" "$tmp/split" --out-name "$base" >&2
wasm-bindgen --target web --keep-lld-exports --no-demangle --no-typescript \
  --out-dir "$tmp/bound" --out-name "$base" "$tmp/split/$base.wasm"
mv "$tmp/bound/${base}_bg.wasm" "$tmp/main.wasm"

hash16() { sha256sum "$1" | cut -c1-16; }
# VRAM_WASM_KEEP_NAMES=1 keeps the function names (the `name` section) through wasm-opt, for CPU
# profiles of the page (e2e/profile.mjs) and size breakdowns; the shipped bundle has none.
keep_names=()
[ "${VRAM_WASM_KEEP_NAMES:-0}" = 1 ] && keep_names=(--debuginfo)
optimize_wasm() {
  if [ "$optimize" = 1 ]; then
    wasm-opt -Oz "${keep_names[@]}" --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
      --enable-mutable-globals --enable-reference-types --enable-multivalue "$1" -o "$1" 2>/dev/null
  fi
}
optimize_wasm "$tmp/main.wasm"
loader="$tmp/split/__wasm_split.js"
chunks=0
for chunk in "$tmp"/split/*.wasm; do
  stem="$(basename "$chunk" .wasm)"
  [ "$stem" = "$base" ] && continue
  optimize_wasm "$chunk"
  named="$stem-$(hash16 "$chunk").wasm"
  grep -q "\"./$stem.wasm\"" "$loader" || { echo "split-wasm: the loader does not name $stem.wasm" >&2; exit 1; }
  sed -i "s|\"./$stem.wasm\"|\"./$named\"|" "$loader"
  cp "$chunk" "$stage/$named"
  chunks=$((chunks + 1))
done
# No chunk means no split function reached the build: the page would fetch nothing on first use.
[ "$chunks" -gt 0 ] || { echo "split-wasm: wasm-split-cli found no split point in $raw" >&2; exit 1; }
loader_named="__wasm_split-$(hash16 "$loader").js"
grep -q '"./__wasm_split.js"' "$tmp/bound/$base.js" || { echo "split-wasm: the main JS does not import ./__wasm_split.js" >&2; exit 1; }
# Only the ES import lines: the keys of the imports object stay the wasm's own module name.
sed -i "/^import /s|\"./__wasm_split.js\"|\"./$loader_named\"|" "$tmp/bound/$base.js"
cp "$loader" "$stage/$loader_named"
cp "$tmp/bound/$base.js" "$stage/$base.js"
cp "$tmp/main.wasm" "$stage/${base}_bg.wasm"

# Trunk wrote Subresource Integrity hashes of the files it built; the ones replaced need new hashes.
html="$stage/index.html"
for f in "$base.js" "${base}_bg.wasm"; do
  sri="sha384-$(openssl dgst -sha384 -binary "$stage/$f" | openssl base64 -A)"
  grep -q "href=\"./$f\"" "$html" || { echo "split-wasm: index.html does not link $f" >&2; exit 1; }
  sed -i -E "s#(href=\"\./$f\"[^>]*integrity=\")[^\"]*\"#\1$sri\"#" "$html"
done
echo "split-wasm: $chunks chunk(s) beside $base" >&2
