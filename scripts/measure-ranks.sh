#!/usr/bin/env bash
# Regenerates docs/measurements/ranks/*.json: per-rank CPU measurements of FSDP2 layouts under
# torchrun (issue 10), then their README table (scripts/ranks-summary.py).
#   scripts/measure-ranks.sh            # env: VRAM (binary), VRAM_PYTHON, OUT_DIR
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
P=crates/vram_core/presets
OUT_DIR="${OUT_DIR:-$ROOT/docs/measurements/ranks}"
mkdir -p "$OUT_DIR"
if [ -z "${VRAM:-}" ]; then
  nice -n 19 cargo build -q -p vram_cli
  VRAM="$(mktemp -d)/vram"
  cp target/debug/vram "$VRAM"
fi
run() {
  local id=$1; shift
  echo "== $id" >&2
  nice -n 10 "$VRAM" measure "$@" --device cpu --fsdp2 --json "$OUT_DIR/$id.json" >/dev/null
}
run smollm2-4l-fsdp2-n2-fp32-adamw-b1-s128 $P/HuggingFaceTB__SmolLM2-135M-Instruct.json --set num_hidden_layers=4 --dtype fp32 --mixed-precision none --optimizer adamw --batch 1 --seq 128 --nproc 2
run smollm2-4l-fsdp2-n4-fp32-adamw-b1-s128 $P/HuggingFaceTB__SmolLM2-135M-Instruct.json --set num_hidden_layers=4 --dtype fp32 --mixed-precision none --optimizer adamw --batch 1 --seq 128 --nproc 4
run smollm2-4l-untied-fsdp2-n2-fp32-adamw-b1-s128 $P/HuggingFaceTB__SmolLM2-135M-Instruct.json --set num_hidden_layers=4 --set tie_word_embeddings=false --dtype fp32 --mixed-precision none --optimizer adamw --batch 1 --seq 128 --nproc 2
run smollm2-8l-fsdp2-n2-fp32-adamw-b2-s256 $P/HuggingFaceTB__SmolLM2-135M-Instruct.json --set num_hidden_layers=8 --dtype fp32 --mixed-precision none --optimizer adamw --batch 2 --seq 256 --nproc 2
run qwen2-0.5b-2l-fsdp2-n2-fp32-adamw-b1-s64 $P/Qwen__Qwen2-0.5B-Instruct.json --set num_hidden_layers=2 --dtype fp32 --mixed-precision none --optimizer adamw --batch 1 --seq 64 --nproc 2
run qwen2-0.5b-2l-fsdp2-n4-fp32-sgd-b1-s64 $P/Qwen__Qwen2-0.5B-Instruct.json --set num_hidden_layers=2 --dtype fp32 --mixed-precision none --optimizer sgd-momentum --batch 1 --seq 64 --nproc 4
run tinyllama-2l-fsdp2-n2-fp32-adamw-b1-s64 $P/TinyLlama__TinyLlama-1.1B-Chat-v1.0.json --set num_hidden_layers=2 --dtype fp32 --mixed-precision none --optimizer adamw --batch 1 --seq 64 --nproc 2
python3 scripts/ranks-summary.py "$OUT_DIR"
