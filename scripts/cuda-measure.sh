#!/usr/bin/env bash
# The CUDA measurement matrix, prepared for a machine with an NVIDIA GPU (issue 3, item 5).
#
# What it needs there: this repository's working tree, the x86-64 `vram` binary built here
# (target/debug/vram or target/release/vram, or VRAM=/path/to/vram), and a python3 with torch and
# transformers (tested against torch 2.15 / transformers 5.24; no network needed: the models are built
# from ../shared/configs with random weights). peft is needed for the LoRA cases: when it is missing
# those cases end with "LoRA needs peft" and the rest still run.
#
#   scripts/cuda-measure.sh [OUT_DIR]        # OUT_DIR default: $OUT/cuda if $OUT is set, else
#                                            # docs/measurements/cuda
# Env: VRAM (binary), VRAM_PYTHON (default python3), VRAM_CONFIGS (default ../shared/configs or
# shared/configs), DEVICE (default cuda:0), DEADLINE_S (stop starting new cases after this many
# seconds; default 480, so that a 10-minute command limit leaves time to copy results),
# CASE_TIMEOUT_S (per case, default 240), ONLY (space-separated words: run only cases whose id contains
# one).
#
# What it writes to OUT_DIR: one `vram measure` report per case (<id>.json, the same schema as the CPU
# reports; measured.counting = cuda-allocator, plus reserved_bytes / device_bytes per phase), gpus.json
# (`vram gpus --json`), watch-<id>.csv (a `vram watch` timeline around one probe, to compare NVML's
# per-process figure with the probe's device_bytes), matrix.json (wall time per case) and README.md
# (the per-case table of scripts/measure-summary.py). Commit the directory as docs/measurements/cuda/.
#
# Cases, larger ones first (they are what only a GPU can measure; a second run with ONLY=... can pick
# up what a deadline skipped): Llama-3.2-1B, Llama-3.2-3B (the 1B config with the published 3B shape set by --set: hidden
# 3072, MLP 8192, 28 layers, 24 heads × 128, 8 KV heads; 3,212,749,824 parameters) and Qwen2.5-7B, in
# bf16 with and without LoRA, and one case that must not fit (exit code 3, outcome does-not-fit), to
# check the OOM path; then every line of scripts/measure-cases.txt (the CPU matrix, here on CUDA), then
# the model-type cases of types_cases below (their presets are in crates/vram_core/presets: run with
# VRAM_CONFIGS=crates/vram_core/presets).
#
# Where the python has vLLM, also the vLLM start-up cases (scripts/vllm-startup.py; logs and the
# matching `vram estimate --vllm-version <installed>` in OUT_DIR/vllm/).
#
# From this project's sessions (no GPU here): the device tool copies the working tree; carry the
# binary, e.g. run(command="bash scripts/cuda-measure.sh", carry=["target/debug/vram"]), then copy the
# files it returns from $OUT/cuda into docs/measurements/cuda/.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
if [ -n "${1:-}" ]; then OUT_DIR="$1"; elif [ -n "${OUT:-}" ]; then OUT_DIR="$OUT/cuda"; else OUT_DIR="$ROOT/docs/measurements/cuda"; fi
mkdir -p "$OUT_DIR"
if [ -z "${VRAM_CONFIGS:-}" ]; then
  for c in "$ROOT/../shared/configs" "$ROOT/shared/configs"; do [ -d "$c" ] && VRAM_CONFIGS="$c" && break; done
fi
CONFIGS="${VRAM_CONFIGS:?no configs directory: set VRAM_CONFIGS}"
VRAM="${VRAM:-}"
if [ -z "$VRAM" ]; then
  for b in target/release/vram target/debug/vram; do [ -x "$b" ] && VRAM="$ROOT/$b" && break; done
fi
[ -x "${VRAM:-}" ] || { echo "cuda-measure: no vram binary (build it with cargo build -p vram_cli, or set VRAM)" >&2; exit 2; }
export VRAM_PYTHON="${VRAM_PYTHON:-python3}"
DEVICE="${DEVICE:-cuda:0}"
DEADLINE_S="${DEADLINE_S:-480}"
CASE_TIMEOUT_S="${CASE_TIMEOUT_S:-240}"
read -r -a ONLY_WORDS <<< "${ONLY:-}"

echo "cuda-measure: $VRAM, python $VRAM_PYTHON, device $DEVICE, out $OUT_DIR" >&2
"$VRAM_PYTHON" -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__, "cuda", torch.cuda.is_available())' >&2 || true
if "$VRAM" gpus --json > "$OUT_DIR/gpus.json" 2> "$OUT_DIR/gpus.err"; then
  rm -f "$OUT_DIR/gpus.err"
else
  echo "cuda-measure: vram gpus failed: $(cat "$OUT_DIR/gpus.err")" >&2
  rm -f "$OUT_DIR/gpus.json"
fi

L1B="meta-llama__Llama-3.2-1B-Instruct.json"
L3B_SET="--set hidden_size=3072 --set intermediate_size=8192 --set num_hidden_layers=28 --set num_attention_heads=24 --set num_key_value_heads=8 --set head_dim=128"
Q7B="Qwen__Qwen2.5-7B.json"
large_cases() {
  cat <<CASES
llama-3.2-1b-train-bf16-adamw-b1-s2048         | $L1B | --mode train --dtype bf16 --mixed-precision none --optimizer adamw --batch 1 --seq 2048 --attention sdpa
llama-3.2-1b-train-mixed-adamw-b4-s1024        | $L1B | --mode train --dtype fp32 --mixed-precision bf16 --optimizer adamw --batch 4 --seq 1024 --attention sdpa
llama-3.2-1b-train-bf16-lora16-b4-s2048        | $L1B | --mode train --dtype bf16 --mixed-precision none --optimizer adamw --batch 4 --seq 2048 --attention sdpa --lora-r 16
llama-3.2-3b-train-bf16-adamw-b1-s2048         | $L1B | --mode train --dtype bf16 --mixed-precision none --optimizer adamw --batch 1 --seq 2048 --attention sdpa $L3B_SET
llama-3.2-3b-train-bf16-lora16-b2-s2048-ckpt   | $L1B | --mode train --dtype bf16 --mixed-precision none --optimizer adamw --batch 2 --seq 2048 --attention sdpa --grad-checkpointing --lora-r 16 $L3B_SET
qwen2.5-7b-train-bf16-adamw-b1-s1024           | $Q7B | --mode train --dtype bf16 --mixed-precision none --optimizer adamw --batch 1 --seq 1024 --attention sdpa
qwen2.5-7b-train-bf16-lora16-b1-s2048          | $Q7B | --mode train --dtype bf16 --mixed-precision none --optimizer adamw --batch 1 --seq 2048 --attention sdpa --lora-r 16
qwen2.5-7b-infer-bf16-b8-s4096                 | $Q7B | --mode infer --dtype bf16 --batch 8 --seq 4096 --attention sdpa
llama-3.2-1b-infer-bf16-b16-s8192              | $L1B | --mode infer --dtype bf16 --batch 16 --seq 8192 --attention sdpa
qwen2.5-7b-train-fp32-adamw-b8-s4096-must-oom  | $Q7B | --mode train --dtype fp32 --mixed-precision none --optimizer adamw --batch 8 --seq 4096 --attention sdpa
CASES
}

# Model-type cases (scripts/measure-types.txt) whose modelling was checked on the CPU only: encoders
# fine-tuned for classification (bert), t5 generating and training (eager, SDPA — on CUDA the
# memory-efficient kernel with the bias gradient —, autocast, checkpointing, LoRA), OpenAI GPT
# without a cache, the model buffers
# (gpt_bigcode), LoRA on fused experts (olmoe), Nemotron-H's mamba-2 (kernels where mamba-ssm is
# installed, else the torch fallback), DeepSeek-V3's fp32 router, EXAONE, and mamba / falcon_mamba
# training (the mixer's torch path; under CUDA autocast softplus runs in fp32, which the CPU cannot
# show; with mamba-ssm installed the fused kernels run instead and save far less).
types_cases() {
  grep -v '^[[:space:]]*#' scripts/measure-types.txt \
    | grep -E '^type-(bert|t5-|openai-gpt-infer|gpt_bigcode|olmoe|nemotron_h|deepseek_v3-infer|exaone|mamba-train|falcon_mamba-train)'
}

matches() {
  [ ${#ONLY_WORDS[@]} -eq 0 ] && return 0
  local w
  for w in "${ONLY_WORDS[@]}"; do [[ "$1" == *"$w"* ]] && return 0; done
  return 1
}
trim() { local s="$1"; s="${s#"${s%%[![:space:]]*}"}"; printf '%s' "${s%"${s##*[![:space:]]}"}"; }

start_all=$(date +%s)
timings="$OUT_DIR/.timings.tsv"
: > "$timings"
watched=0
{ large_cases; grep -v '^[[:space:]]*#' scripts/measure-cases.txt; types_cases; } | while IFS='|' read -r id config flags; do
  id="$(trim "$id")"; config="$(trim "${config:-}")"
  [ -z "$id" ] && continue
  matches "$id" || continue
  now=$(date +%s)
  if [ $((now - start_all)) -ge "$DEADLINE_S" ]; then
    echo "cuda-measure: deadline of $DEADLINE_S s reached, skipping $id" >&2
    printf '%s\t%s\t0\tskipped (deadline)\n' "$id" "$config" >> "$timings"
    continue
  fi
  echo "== $id" >&2
  t0=$(date +%s)
  # shellcheck disable=SC2086
  cmd=("$VRAM" measure "$CONFIGS/$config" $flags --device "$DEVICE" --json "$OUT_DIR/$id.json")
  if [ "$watched" -eq 0 ] && [[ "$id" == llama-3.2-1b-train-bf16-adamw* ]]; then
    # one probe under vram watch: NVML's per-process timeline next to the probe's own figures
    timeout "$CASE_TIMEOUT_S" "$VRAM" watch --interval-ms 20 --out "$OUT_DIR/watch-$id.csv" -- "${cmd[@]}" > "$OUT_DIR/$id.txt" 2> "$OUT_DIR/$id.err"
    rc=$?
    watched=1
  else
    timeout "$CASE_TIMEOUT_S" "${cmd[@]}" > "$OUT_DIR/$id.txt" 2> "$OUT_DIR/$id.err"
    rc=$?
  fi
  t1=$(date +%s)
  case $rc in
    0) status=ok; rm -f "$OUT_DIR/$id.err" ;;
    3) status="does not fit" ;;
    124) status="timeout after $CASE_TIMEOUT_S s" ;;
    *) status="exit $rc: $(tail -1 "$OUT_DIR/$id.err" 2>/dev/null)" ;;
  esac
  echo "   $status in $((t1 - t0)) s" >&2
  printf '%s\t%s\t%s\t%s\n' "$id" "$config" "$((t1 - t0))" "$status" >> "$timings"
done
# The per-rank matrix (issue 10: scripts/measure-ranks.sh, transformers' TP, FSDP2, torchtitan,
# DeepSpeed ZeRO) under torchrun with NCCL, one GPU per rank: only where the machine has two or
# more, and only the cases that fit its GPU count (a single lent GPU skips them, and says so).
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
if [ "$ngpu" -ge 2 ]; then
  mkdir -p "$OUT_DIR/ranks"
  VRAM="$VRAM" VRAM_DEVICE=cuda MAX_NPROC="$ngpu" OUT_DIR="$OUT_DIR/ranks" \
    bash scripts/measure-ranks.sh "${RANKS_REGEX:-.}" || echo "   a per-rank case failed" >&2
else
  echo "cuda-measure: $ngpu GPU(s): the per-rank cases need 2 or more, skipped" >&2
fi
# vLLM start-up logs (issue 13), where the python has vLLM: each case started with dummy weights, its
# log kept, and the estimate of the same start-up for the installed release written beside it
# (vllm-<id>.log, vllm-<id>.estimate.json). Compare "GPU KV cache size" / "Available KV cache memory"
# with infer.serving.kv_tokens / kv_pool_bytes (docs/formulas/vllm-versions.md).
if "$VRAM_PYTHON" -c 'import vllm' 2>/dev/null; then
  vver=$("$VRAM_PYTHON" -c 'import vllm; print(vllm.__version__)')
  mkdir -p "$OUT_DIR/vllm"
  while IFS='|' read -r id config flags; do
    id="$(trim "$id")"; config="$(trim "$config")"
    [ -z "$id" ] && continue
    matches "vllm-$id" || continue
    echo "== vllm-$id (vLLM $vver)" >&2
    # shellcheck disable=SC2086
    timeout "$CASE_TIMEOUT_S" "$VRAM_PYTHON" scripts/vllm-startup.py "$CONFIGS/$config" "$OUT_DIR/vllm/$id.log" $flags \
      || echo "   vLLM did not start: $(tail -1 "$OUT_DIR/vllm/$id.log" 2>/dev/null)" >&2
    gpu_bytes=$("$VRAM_PYTHON" -c 'import torch; print(torch.cuda.mem_get_info()[1])')
    gpu_name=$("$VRAM_PYTHON" -c 'import torch; print(torch.cuda.get_device_name(0))')
    # shellcheck disable=SC2086
    "$VRAM" estimate "$CONFIGS/$config" --infer --engine vllm --usage offline --vllm-version "$vver" \
      --gpu "$gpu_name" --gpu-mem-gib "$(python3 -c "print($gpu_bytes / 2**30)")" $flags --json \
      > "$OUT_DIR/vllm/$id.estimate.json" 2> "$OUT_DIR/vllm/$id.estimate.err" || true
  done <<CASES
llama-3.2-1b-4k      | $L1B | --max-model-len 4096
llama-3.2-1b-4k-eager | $L1B | --max-model-len 4096 --enforce-eager
qwen2.5-7b-8k        | $Q7B | --max-model-len 8192
qwen2.5-7b-8k-u0.8   | $Q7B | --max-model-len 8192 --gpu-util 0.8
qwen2.5-7b-8k-s256   | $Q7B | --max-model-len 8192 --max-num-seqs 256 --max-num-batched-tokens 4096
CASES
else
  echo "cuda-measure: no vllm in $VRAM_PYTHON: the vLLM start-up cases are skipped" >&2
fi
end_all=$(date +%s)

python3 - "$timings" "$OUT_DIR/matrix.json" "$((end_all - start_all))" "$DEVICE" <<'PY'
import json, sys, datetime
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
doc = {
    "kind": "vram-measure-matrix",
    "device": sys.argv[4],
    "wall_seconds_total": int(sys.argv[3]),
    "generated": datetime.date.today().isoformat(),
    "cases": [{"id": r[0], "config": r[1], "wall_seconds": int(r[2]), "status": r[3]} for r in rows],
}
with open(sys.argv[2], "w") as f:
    json.dump(doc, f, indent=2)
    f.write("\n")
PY
rm -f "$timings"
python3 scripts/measure-summary.py "$OUT_DIR" > "$OUT_DIR/README.md" || true
echo "cuda-measure: done in $((end_all - start_all)) s; reports in $OUT_DIR" >&2
