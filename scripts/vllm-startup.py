#!/usr/bin/env python3
"""Start vLLM on one config with dummy weights and keep its start-up log (issue 13).

    python3 scripts/vllm-startup.py CONFIG_JSON OUT_LOG [--max-model-len N] [--gpu-util U]
        [--enforce-eager] [--max-num-seqs N] [--max-num-batched-tokens N]

Builds a model directory holding only CONFIG_JSON, starts `vllm.LLM` on it with
`load_format="dummy"` and `skip_tokenizer_init=True` (no download, no tokenizer), and writes vLLM's
log (the lines "Model loading took", "Available KV cache memory", "GPU KV cache size", "# GPU blocks",
"Maximum concurrency") to OUT_LOG, with the vLLM version and the GPU's total memory on the first
line. Exit 0 when the engine started, 1 otherwise (the log then holds the error). Needs a python
with vllm installed; scripts/cuda-measure.sh calls it for each case where one is.
"""
import argparse
import json
import logging
import os
import shutil
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("out")
    ap.add_argument("--max-model-len", type=int, default=4096)
    ap.add_argument("--gpu-util", type=float, default=None)
    ap.add_argument("--enforce-eager", action="store_true")
    ap.add_argument("--max-num-seqs", type=int, default=None)
    ap.add_argument("--max-num-batched-tokens", type=int, default=None)
    a = ap.parse_args()
    model_dir = tempfile.mkdtemp(prefix="vram-vllm-")
    shutil.copy(a.config, os.path.join(model_dir, "config.json"))
    handler = logging.FileHandler(a.out, mode="w")
    handler.setFormatter(logging.Formatter("%(levelname)s [%(filename)s:%(lineno)d] %(message)s"))
    logging.getLogger("vllm").addHandler(handler)
    import torch
    import vllm

    free, total = torch.cuda.mem_get_info()
    with open(a.out, "a") as f:
        f.write("vram-vllm-startup: vllm %s, torch %s, %s, total_gpu_memory %d B, config %s\n" % (
            vllm.__version__, torch.__version__, torch.cuda.get_device_name(0), total,
            json.dumps({k: v for k, v in vars(a).items() if k != "out"})))
    kwargs = dict(model=model_dir, load_format="dummy", skip_tokenizer_init=True,
                  max_model_len=a.max_model_len, enforce_eager=a.enforce_eager)
    if a.gpu_util is not None:
        kwargs["gpu_memory_utilization"] = a.gpu_util
    if a.max_num_seqs is not None:
        kwargs["max_num_seqs"] = a.max_num_seqs
    if a.max_num_batched_tokens is not None:
        kwargs["max_num_batched_tokens"] = a.max_num_batched_tokens
    try:
        vllm.LLM(**kwargs)
    except Exception as e:  # the log keeps vLLM's own message
        with open(a.out, "a") as f:
            f.write("vram-vllm-startup: failed: %r\n" % (e,))
        return 1
    finally:
        shutil.rmtree(model_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
