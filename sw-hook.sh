#!/usr/bin/env bash
# Trunk post_build hook: prepends the staged bundle's file list and a content hash to the staged sw.js
# (see sw.js). Runs in Trunk's staging directory, whose path Trunk passes as TRUNK_STAGING_DIR.
set -euo pipefail
cd "${TRUNK_STAGING_DIR:?TRUNK_STAGING_DIR is set by trunk}"
[ -f sw.js ] || { echo "sw-hook: sw.js is not in the staged bundle" >&2; exit 1; }
mapfile -t files < <(find . -type f ! -name sw.js -printf '%P\n' | LC_ALL=C sort)
version=$(cat "${files[@]}" sw.js | sha256sum | cut -c1-16)
list=""
for f in "${files[@]}"; do
  case "$f" in *[\"\\]*) echo "sw-hook: unexpected file name $f" >&2; exit 1 ;; esac
  list+="${list:+,}\"$f\""
done
{
  printf 'self.VRAM_MANIFEST = { version: "%s", files: [%s] };\n' "$version" "$list"
  cat sw.js
} > sw.js.new
mv sw.js.new sw.js
echo "sw-hook: ${#files[@]} files, version $version"
