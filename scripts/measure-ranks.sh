#!/usr/bin/env bash
# Regenerates docs/measurements/ranks/*.json: per-rank CPU measurements of FSDP2 and of
# transformers' tensor parallelism under torchrun (issue 10), then their README table
# (scripts/ranks-summary.py).
#   scripts/measure-ranks.sh [REGEX]    # env: VRAM (binary), VRAM_PYTHON, OUT_DIR; REGEX: case ids to run
# VRAM_DEVICE=cuda (default cpu) runs the same cases with NCCL, one GPU per rank (scripts/cuda-measure.sh
# does on a machine with 2 or more GPUs); MAX_NPROC skips the cases that need more ranks.
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
ONLY="${1:-.}"
DEVICE="${VRAM_DEVICE:-cpu}"
MAX_NPROC="${MAX_NPROC:-64}"
run() {
  local id=$1; shift
  [[ "$id" =~ $ONLY ]] || return 0
  local args=" $* "
  local n="${args##* --nproc }"; n="${n%% *}"
  if [ "$n" -gt "$MAX_NPROC" ]; then
    echo "== $id: needs $n ranks, $MAX_NPROC available: skipped" >&2
    return 0
  fi
  echo "== $id" >&2
  nice -n 10 "$VRAM" measure "$@" --device "$DEVICE" --json "$OUT_DIR/$id.json" >/dev/null \
    || { echo "   $id failed" >&2; FAILED=$((FAILED + 1)); }
}
FAILED=0
fsdp2() { local id=$1; shift; run "$id" "$@" --fsdp2; }
# transformers' own tensor parallelism: the model's tp_plan over every rank
tp() { local id=$1 n=$2; shift 2; run "$id" "$@" --framework hf --tp "$n" --nproc "$n"; }
# both: transformers' TP inside, FSDP2 over the data-parallel ranks (a 2-D mesh)
tp_fsdp2() { local id=$1 n=$2 t=$3; shift 3; run "$id" "$@" --framework hf --tp "$t" --fsdp2 --nproc "$n"; }
fsdp2 smollm2-4l-fsdp2-n2-fp32-adamw-b1-s128 $P/HuggingFaceTB__SmolLM2-135M-Instruct.json --set num_hidden_layers=4 --dtype fp32 --mixed-precision none --optimizer adamw --batch 1 --seq 128 --nproc 2
fsdp2 smollm2-4l-fsdp2-n4-fp32-adamw-b1-s128 $P/HuggingFaceTB__SmolLM2-135M-Instruct.json --set num_hidden_layers=4 --dtype fp32 --mixed-precision none --optimizer adamw --batch 1 --seq 128 --nproc 4
fsdp2 smollm2-4l-untied-fsdp2-n2-fp32-adamw-b1-s128 $P/HuggingFaceTB__SmolLM2-135M-Instruct.json --set num_hidden_layers=4 --set tie_word_embeddings=false --dtype fp32 --mixed-precision none --optimizer adamw --batch 1 --seq 128 --nproc 2
fsdp2 smollm2-8l-fsdp2-n2-fp32-adamw-b2-s256 $P/HuggingFaceTB__SmolLM2-135M-Instruct.json --set num_hidden_layers=8 --dtype fp32 --mixed-precision none --optimizer adamw --batch 2 --seq 256 --nproc 2
fsdp2 qwen2-0.5b-2l-fsdp2-n2-fp32-adamw-b1-s64 $P/Qwen__Qwen2-0.5B-Instruct.json --set num_hidden_layers=2 --dtype fp32 --mixed-precision none --optimizer adamw --batch 1 --seq 64 --nproc 2
fsdp2 qwen2-0.5b-2l-fsdp2-n4-fp32-sgd-b1-s64 $P/Qwen__Qwen2-0.5B-Instruct.json --set num_hidden_layers=2 --dtype fp32 --mixed-precision none --optimizer sgd-momentum --batch 1 --seq 64 --nproc 4
fsdp2 qwen2-0.5b-2l-hsdp2-fsdp2-n4-fp32-adamw-b1-s64 $P/Qwen__Qwen2-0.5B-Instruct.json --set num_hidden_layers=2 --dtype fp32 --mixed-precision none --optimizer adamw --batch 1 --seq 64 --nproc 4 --hsdp-replicas 2
fsdp2 tinyllama-2l-fsdp2-n2-fp32-adamw-b1-s64 $P/TinyLlama__TinyLlama-1.1B-Chat-v1.0.json --set num_hidden_layers=2 --dtype fp32 --mixed-precision none --optimizer adamw --batch 1 --seq 64 --nproc 2
T=$P/TinyLlama__TinyLlama-1.1B-Chat-v1.0.json
S=$P/HuggingFaceTB__SmolLM2-135M-Instruct.json
tp tinyllama-2l-untied-tp2-fp32-adamw-b1-s64 2 $T --set num_hidden_layers=2 --set tie_word_embeddings=false --dtype fp32 --mixed-precision none --optimizer adamw --batch 1 --seq 64
tp tinyllama-2l-tied-tp2-fp32-adamw-b1-s64 2 $T --set num_hidden_layers=2 --set tie_word_embeddings=true --dtype fp32 --mixed-precision none --optimizer adamw --batch 1 --seq 64
tp tinyllama-2l-untied-tp4-fp32-adamw-b2-s128 4 $T --set num_hidden_layers=2 --set tie_word_embeddings=false --dtype fp32 --mixed-precision none --optimizer adamw --batch 2 --seq 128
tp tinyllama-2l-untied-tp2-mixed-adamw-b2-s128-eager 2 $T --set num_hidden_layers=2 --set tie_word_embeddings=false --dtype fp32 --mixed-precision bf16 --optimizer adamw --batch 2 --seq 128 --attention eager
tp qwen2-0.5b-2l-tp2-fp32-adamw-b1-s64 2 $P/Qwen__Qwen2-0.5B-Instruct.json --set num_hidden_layers=2 --dtype fp32 --mixed-precision none --optimizer adamw --batch 1 --seq 64
tp smollm2-4l-tp3-fp32-adamw-b1-s128 3 $S --set num_hidden_layers=4 --dtype fp32 --mixed-precision none --optimizer adamw --batch 1 --seq 128
tp smollm2-4l-tp3-mixed-adamw-b2-s256 3 $S --set num_hidden_layers=4 --dtype fp32 --mixed-precision bf16 --optimizer adamw --batch 2 --seq 256
tp smollm2-4l-tp3-bf16-sgd-b2-s256-ckpt 3 $S --set num_hidden_layers=4 --dtype bf16 --mixed-precision none --optimizer sgd-momentum --batch 2 --seq 256 --grad-checkpointing
tp qwen3-0.6b-2l-tp2-fp32-adamw-b1-s64 2 $P/Qwen__Qwen3-0.6B.json --set num_hidden_layers=2 --dtype fp32 --mixed-precision none --optimizer adamw --batch 1 --seq 64
tp gemma2-2b-2l-tp2-fp32-adamw-b1-s64-eager 2 $P/google__gemma-2-2b.json --set num_hidden_layers=2 --dtype fp32 --mixed-precision none --optimizer adamw --batch 1 --seq 64 --attention eager
tp_fsdp2 tinyllama-2l-untied-tp2-fsdp2-n4-fp32-adamw-b1-s64 4 2 $T --set num_hidden_layers=2 --set tie_word_embeddings=false --dtype fp32 --mixed-precision none --optimizer adamw --batch 1 --seq 64
tp_fsdp2 qwen2-0.5b-2l-tp2-fsdp2-n4-fp32-adamw-b2-s64 4 2 $P/Qwen__Qwen2-0.5B-Instruct.json --set num_hidden_layers=2 --dtype fp32 --mixed-precision none --optimizer adamw --batch 2 --seq 64
# torchtitan 0.2's own parallelize_llama / pipeline_llm (TP with sequence and loss parallel, 1F1B,
# FSDP2 with its mixed-precision policy) on its Llama 3 model built from the config's dimensions
titan() { local id=$1 n=$2; shift 2; run "$id" "$@" --framework torchtitan --nproc "$n" --optimizer adamw --dtype fp32; }
SU="$S --set tie_word_embeddings=false"
titan titan-tinyllama-2l-tp2-fp32-b2-s128 2 $T --set num_hidden_layers=2 --tp 2 --mixed-precision none --batch 2 --seq 128
titan titan-tinyllama-4l-pp2-fp32-b1x4-s128 2 $T --set num_hidden_layers=4 --pp 2 --mixed-precision none --batch 1 --global-batch 4 --seq 128
titan titan-tinyllama-2l-fsdp2-n2-mixed-b2-s128 2 $T --set num_hidden_layers=2 --fsdp2 --mixed-precision bf16 --batch 2 --seq 128
titan titan-tinyllama-2l-fsdp2-n2-mixed-b2-s256-full-ac 2 $T --set num_hidden_layers=2 --fsdp2 --mixed-precision bf16 --batch 2 --seq 256 --recompute full
titan titan-tinyllama-4l-tp2-pp2-fp32-b1x4-s128 4 $T --set num_hidden_layers=4 --tp 2 --pp 2 --mixed-precision none --batch 1 --global-batch 4 --seq 128
titan titan-tinyllama-2l-tp2-fsdp2-n4-mixed-b2-s128 4 $T --set num_hidden_layers=2 --tp 2 --fsdp2 --mixed-precision bf16 --batch 2 --seq 128
titan titan-smollm2-4l-untied-tp3-fp32-b2-s192 3 $SU --set num_hidden_layers=4 --tp 3 --mixed-precision none --batch 2 --seq 192
titan titan-smollm2-4l-untied-fsdp2-n4-fp32-b2-s256 4 $SU --set num_hidden_layers=4 --fsdp2 --mixed-precision none --batch 2 --seq 256
titan titan-tinyllama-4l-pp2-fsdp2-n4-mixed-b1x4-s128 4 $T --set num_hidden_layers=4 --pp 2 --fsdp2 --mixed-precision bf16 --batch 1 --global-batch 8 --seq 128
titan titan-smollm2-6l-untied-pp2-fp32-b2x4-s128 2 $SU --set num_hidden_layers=6 --pp 2 --mixed-precision none --batch 2 --global-batch 8 --seq 128
# DeepSpeed ZeRO as HF Trainer runs it (its AdamW handed to deepspeed.initialize, the "auto"
# buckets from the hidden size, gradient clipping 1.0), DeepSpeed 0.19's CPU accelerator over gloo
zero() { local id=$1 n=$2 z=$3; shift 3; run "$id" "$@" --zero "$z" --nproc "$n" --optimizer adamw; }
zero zero1-tinyllama-2l-n2-fp32-b1-s64 2 1 $T --set num_hidden_layers=2 --dtype fp32 --mixed-precision none --batch 1 --seq 64
zero zero2-tinyllama-2l-n2-fp32-b1-s64 2 2 $T --set num_hidden_layers=2 --dtype fp32 --mixed-precision none --batch 1 --seq 64
zero zero2-tinyllama-2l-n2-mixed-b1-s64 2 2 $T --set num_hidden_layers=2 --dtype fp32 --mixed-precision bf16 --batch 1 --seq 64
zero zero2-smollm2-4l-n4-fp32-b2-s128 4 2 $S --set num_hidden_layers=4 --dtype fp32 --mixed-precision none --batch 2 --seq 128
zero zero1-qwen2-0.5b-2l-n4-mixed-b1-s64 4 1 $P/Qwen__Qwen2-0.5B-Instruct.json --set num_hidden_layers=2 --dtype fp32 --mixed-precision bf16 --batch 1 --seq 64
zero zero3-tinyllama-2l-n2-fp32-b1-s64 2 3 $T --set num_hidden_layers=2 --dtype fp32 --mixed-precision none --batch 1 --seq 64
zero zero3-tinyllama-2l-n2-mixed-b1-s64 2 3 $T --set num_hidden_layers=2 --dtype fp32 --mixed-precision bf16 --batch 1 --seq 64
zero zero3-smollm2-4l-n4-fp32-b2-s128 4 3 $S --set num_hidden_layers=4 --dtype fp32 --mixed-precision none --batch 2 --seq 128
zero zero3-tinyllama-2l-n2-fp32-lora16-b1-s64 2 3 $T --set num_hidden_layers=2 --dtype fp32 --mixed-precision none --batch 1 --seq 64 --lora-r 16 --lora-targets all-linear
python3 scripts/ranks-summary.py "$OUT_DIR"
[ "$FAILED" -eq 0 ] || { echo "measure-ranks: $FAILED case(s) failed" >&2; exit 1; }
