#!/usr/bin/env bash
# Regenerates docs/measurements/*.json: the CPU measurement matrix (exact live-tensor bytes per
# phase) that the training and inference models are calibrated against (issues 3, 4, 5).
#
#   scripts/measure-matrix.sh                 # all cases of scripts/measure-cases.txt
#   scripts/measure-matrix.sh smollm2 gpt2    # only cases whose id contains one of the words
#
# Env: VRAM (binary; default: cargo build -p vram_cli, then target/debug/vram), VRAM_PYTHON (default:
# scripts/python-env.sh's venv, created when missing), VRAM_CONFIGS (default ../shared/configs),
# OUT_DIR (default docs/measurements). Runs under nice -n 19, one case at a time; records each case's
# wall time and the matrix total in $OUT_DIR/matrix.json, then rewrites $OUT_DIR/README.md with the
# per-case table (scripts/measure-summary.py).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
CONFIGS="${VRAM_CONFIGS:-$ROOT/../shared/configs}"
OUT_DIR="${OUT_DIR:-$ROOT/docs/measurements}"
CASES="${CASES:-$ROOT/scripts/measure-cases.txt}"
mkdir -p "$OUT_DIR"

if [ -z "${VRAM:-}" ]; then
  nice -n 19 cargo build -q -p vram_cli
  # a private copy: other builds may replace target/debug/vram while the matrix runs
  VRAM="$(mktemp -d)/vram"
  cp target/debug/vram "$VRAM"
fi
if [ -z "${VRAM_PYTHON:-}" ]; then
  VRAM_PYTHON="$(nice -n 19 bash scripts/python-env.sh | tail -1)"
fi
export VRAM_PYTHON

filters=("$@")
matches() {
  [ ${#filters[@]} -eq 0 ] && return 0
  local f
  for f in "${filters[@]}"; do [[ "$1" == *"$f"* ]] && return 0; done
  return 1
}

start_all=$(date +%s)
timings="$(mktemp)"
failed=0
while IFS='|' read -r id config flags; do
  trim() { local s="$1"; s="${s#"${s%%[![:space:]]*}"}"; printf '%s' "${s%"${s##*[![:space:]]}"}"; }
  id="$(trim "$id")"; config="$(trim "${config:-}")"
  [ -z "$id" ] || [[ "$id" == \#* ]] && continue
  matches "$id" || continue
  echo "== $id" >&2
  t0=$(date +%s)
  # shellcheck disable=SC2086
  # configs outside the shared collection are bundled presets
  path="$CONFIGS/$config"
  [ -f "$path" ] || path="$ROOT/crates/vram_core/presets/$config"
  if nice -n 19 "$VRAM" measure "$path" $flags --device cpu --json "$OUT_DIR/$id.json" >/dev/null; then
    status=ok
  else
    status="exit $?"
    failed=$((failed + 1))
  fi
  t1=$(date +%s)
  echo "   $status in $((t1 - t0)) s" >&2
  printf '%s\t%s\t%s\t%s\n' "$id" "$config" "$((t1 - t0))" "$status" >> "$timings"
done < "$CASES"
end_all=$(date +%s)

MATRIX_PARTIAL=$([ ${#filters[@]} -gt 0 ] && echo 1 || echo 0) python3 - "$timings" "$OUT_DIR/matrix.json" "$((end_all - start_all))" "$(nproc)" <<'PY'
import json, sys, datetime
import os
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
partial = os.environ.get("MATRIX_PARTIAL") == "1"
old = {}
if partial and os.path.exists(sys.argv[2]):
    old = json.load(open(sys.argv[2]))
doc = {
    "kind": "vram-measure-matrix",
    "device": "cpu",
    "cpus": int(sys.argv[4]),
    "wall_seconds_total": int(sys.argv[3]),
    "generated": datetime.date.today().isoformat(),
    "cases": [{"id": r[0], "config": r[1], "wall_seconds": int(r[2]), "status": r[3]} for r in rows],
}
if partial and old:
    # a rerun of some cases: keep the other cases and the last full run's total
    new_ids = {c["id"] for c in doc["cases"]}
    doc["cases"] = [c for c in old.get("cases", []) if c["id"] not in new_ids] + doc["cases"]
    doc["wall_seconds_total"] = old.get("wall_seconds_total")
    doc["generated"] = old.get("generated", doc["generated"])
    doc["updated"] = datetime.date.today().isoformat()
json.dump(doc, open(sys.argv[2], "w"), indent=2)
open(sys.argv[2], "a").write("\n")
PY
python3 scripts/measure-summary.py "$OUT_DIR" > "$OUT_DIR/README.md"
echo "matrix: $(( (end_all - start_all) / 60 )) min $(( (end_all - start_all) % 60 )) s, $failed failed; reports in $OUT_DIR" >&2
[ "$failed" -eq 0 ]
