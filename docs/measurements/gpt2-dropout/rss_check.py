"""Independent of both trackers: the kernel's peak RSS (VmHWM) of one probe-identical training step
(probe.build_model + forward/backward, no profiler), with and without a do-nothing TorchDispatchMode.
Blocks of >= 32 MiB are mmap'ed by glibc and unmapped at free, so VmHWM follows the big tensors."""
import sys, os, importlib.util, contextlib, json
import torch
from torch.utils._python_dispatch import TorchDispatchMode
spec = importlib.util.spec_from_file_location("probe", "probe_orig.py")
probe = importlib.util.module_from_spec(spec); spec.loader.exec_module(probe)
import transformers
torch.set_num_threads(1)
mp, use_mode = sys.argv[1], sys.argv[2] == "mode"

class NoopMode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))

def hwm():
    for line in open("/proc/self/status"):
        if line.startswith(("VmHWM", "VmRSS")):
            yield line.split()[1]
def status():
    d = {}
    for line in open("/proc/self/status"):
        k = line.split(":")[0]
        if k in ("VmHWM", "VmRSS"):
            d[k] = int(line.split()[1]) * 1024
    return d
def reset_hwm():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")   # resets VmHWM to the current RSS

cfg, _ = probe.load_config(transformers, "crates/vram_core/presets/openai-community__gpt2.json", [])
sc = {"dtype": "fp32", "attention": "eager"}
model, _ = probe.build_model(torch, transformers, cfg, sc, torch.device("cpu"), [])
model.train()
opt = torch.optim.SGD(model.parameters(), lr=1e-5, foreach=True)
g = torch.Generator().manual_seed(0)
ids = torch.randint(0, cfg.vocab_size, (1, 128), generator=g)
ctx = NoopMode() if use_mode else contextlib.nullcontext()
ac = torch.autocast("cpu", dtype=torch.bfloat16) if mp == "bf16" else contextlib.nullcontext()
with ctx:
    for step in (1, 2):
        with ac:
            loss = model(input_ids=ids, labels=ids, use_cache=False).loss
        before = status()
        reset_hwm()
        loss.backward(); del loss
        after = status()
        opt.step(); opt.zero_grad(set_to_none=True)
        print(json.dumps({"mp": mp, "mode": use_mode, "step": step, "rss_before_backward": before["VmRSS"],
                          "rss_after_backward": after["VmRSS"], "hwm_during_backward": after["VmHWM"],
                          "backward_peak_above_start": after["VmHWM"] - before["VmRSS"]}))
