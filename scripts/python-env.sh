#!/usr/bin/env bash
# Create (idempotently) the Python environment that `vram measure` runs its probe in.
#
#   scripts/python-env.sh            # creates ${VRAM_VENV:-$HOME/.cache/vram/venv} when missing
#   VRAM_VENV=/some/dir scripts/python-env.sh
#
# The venv holds torch, transformers, peft and accelerate at pinned versions (PyPI only; torch's
# Linux x86-64 wheel from PyPI pulls the CUDA runtime packages, ~4 GB in all). The pins match the
# GPU machine the CUDA matrix is prepared for (torch 2.15, transformers 5.24), so CPU and CUDA
# reports come from the same library code. torchtitan 0.2.2 (`vram measure --framework
# torchtitan`) and DeepSpeed 0.19.8 (`vram measure --zero N`) are installed with the others'
# versions held (a constraints file).
#
# Fast no-op when the venv already imports the pinned versions. Prints the python path on stdout
# (last line) so callers can do: PY=$(scripts/python-env.sh | tail -1).
set -euo pipefail

VENV="${VRAM_VENV:-$HOME/.cache/vram/venv}"
TORCH_VERSION="2.15.0"
TRANSFORMERS_VERSION="5.24.0"
PEFT_VERSION="0.21.2"
ACCELERATE_VERSION="1.15.0"
TORCHTITAN_VERSION="0.2.2"
DEEPSPEED_VERSION="0.19.8"

PY="$VENV/bin/python"
check() {
  "$PY" - "$TORCH_VERSION" "$TRANSFORMERS_VERSION" "$PEFT_VERSION" "$ACCELERATE_VERSION" "$TORCHTITAN_VERSION" "$DEEPSPEED_VERSION" <<'PYEOF' 2>/dev/null
import sys
from importlib.metadata import version
want = dict(zip(["torch", "transformers", "peft", "accelerate", "torchtitan", "deepspeed"], sys.argv[1:]))
for name, v in want.items():
    have = version(name)
    if have.split("+")[0] != v:
        sys.exit(1)
PYEOF
}

if [ -x "$PY" ] && check; then
  echo "python-env: $VENV already has torch $TORCH_VERSION, transformers $TRANSFORMERS_VERSION, peft $PEFT_VERSION, accelerate $ACCELERATE_VERSION, torchtitan $TORCHTITAN_VERSION, deepspeed $DEEPSPEED_VERSION" >&2
  echo "$PY"
  exit 0
fi

BASE_PYTHON="${VRAM_BASE_PYTHON:-python3}"
if ! command -v "$BASE_PYTHON" >/dev/null 2>&1; then
  echo "python-env: $BASE_PYTHON not found; install Python 3.10+ (e.g. apt-get install python3 python3-venv)" >&2
  exit 2
fi

echo "python-env: creating $VENV (torch $TORCH_VERSION is a ~4 GB download; this takes a while)" >&2
mkdir -p "$(dirname "$VENV")"
[ -x "$PY" ] || "$BASE_PYTHON" -m venv "$VENV"
"$PY" -m pip install --quiet --upgrade pip >&2
"$PY" -m pip install --quiet --progress-bar off \
  "torch==$TORCH_VERSION" \
  "transformers==$TRANSFORMERS_VERSION" \
  "peft==$PEFT_VERSION" \
  "accelerate==$ACCELERATE_VERSION" >&2
# torchtitan's own requirements (datasets, tokenizers, tensorboard, ...) without moving the pins
CONSTRAINTS="$(mktemp)"
printf 'torch==%s\ntransformers==%s\npeft==%s\naccelerate==%s\n' \
  "$TORCH_VERSION" "$TRANSFORMERS_VERSION" "$PEFT_VERSION" "$ACCELERATE_VERSION" > "$CONSTRAINTS"
"$PY" -m pip install --quiet --progress-bar off -c "$CONSTRAINTS" "torchtitan==$TORCHTITAN_VERSION" >&2
# DeepSpeed (`vram measure --zero N --nproc N`) from its source release, no ops built ahead: on
# CPU its accelerator JIT-builds one shared-memory op with the venv's ninja and the system's C++
# compiler at first use
DS_ACCELERATOR=cpu DS_BUILD_OPS=0 "$PY" -m pip install --quiet --progress-bar off -c "$CONSTRAINTS" \
  "deepspeed==$DEEPSPEED_VERSION" >&2
rm -f "$CONSTRAINTS"
check || { echo "python-env: installed, but the pinned versions do not import from $VENV" >&2; exit 1; }
echo "python-env: ready at $VENV" >&2
echo "$PY"
