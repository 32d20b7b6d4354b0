"""Runs probe.measure() for a scenario with the probe's CpuTracker, the dispatch tracker, or both
at once (the same step seen by both).  Usage:
  run.py --probe probe_orig.py --tracker probe|dispatch|both --threads N --optimizer sgd
         --batch 1 --seq 128 [--config PATH] [--set key=value ...] [--dump PREFIX]"""
import argparse, importlib.util, json, os, sys, contextlib, pickle
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
ap = argparse.ArgumentParser()
ap.add_argument("--probe", default="crates/vram_cli/probe/probe.py")
ap.add_argument("--tracker", default="both")
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--optimizer", default="sgd")
ap.add_argument("--batch", type=int, default=1)
ap.add_argument("--seq", type=int, default=128)
ap.add_argument("--attention", default="eager")
ap.add_argument("--dtype", default="fp32")
ap.add_argument("--config", default="crates/vram_core/presets/openai-community__gpt2.json")
ap.add_argument("--set", action="append", default=[])
ap.add_argument("--dump", default=None)
ap.add_argument("--mp", default="none")
ap.add_argument("--log", action="store_true")
a = ap.parse_args()

import torch
torch.set_num_threads(a.threads)
spec = importlib.util.spec_from_file_location("probe", a.probe)
probe = importlib.util.module_from_spec(spec)
spec.loader.exec_module(probe)
import dtrack

cfg = a.config
if a.set:
    raw = json.load(open(cfg))
    for kv in a.set:
        k, v = kv.split("=", 1)
        raw[k] = json.loads(v)
    cfg = "/tmp/cfg_%d.json" % os.getpid()
    json.dump(raw, open(cfg, "w"))

holder = {}
ProbeTracker = probe.CpuTracker


class Both:
    counting = "both"

    def __init__(self, torch_mod):
        self.p = ProbeTracker(torch_mod) if a.tracker in ("probe", "both") else None
        self.d = dtrack.DispatchTracker(log=a.log) if a.tracker in ("dispatch", "both") else None
        holder["t"] = self

    @contextlib.contextmanager
    def phase(self, name):
        with contextlib.ExitStack() as st:
            if self.p: st.enter_context(self.p.phase(name))
            if self.d: st.enter_context(self.d.phase(name))
            yield

    def allocated_now(self):
        return None

    def finish(self, failed_phase=None):
        out = {}
        if self.d: out["dispatch"] = self.d.finish()
        if self.p: out["probe"] = self.p.finish(failed_phase)
        return out


probe.CpuTracker = Both
sc = {"mode": "train", "batch": a.batch, "seq_len": a.seq, "dtype": a.dtype, "attention": a.attention,
      "optimizer": a.optimizer, "mixed_precision": a.mp, "gpus": 1}
doc = probe.measure({"config": cfg, "scenario": json.dumps(sc), "device": "cpu"})
ph = doc["measured"]["phases"]
print("threads=%d optimizer=%s batch=%d seq=%d mp=%s %s" % (torch.get_num_threads(), a.optimizer, a.batch, a.seq, a.mp, a.set))
names = [r["name"] for r in next(iter(ph.values()))]
print("%-12s %16s %16s %16s %16s" % ("phase", "probe alloc", "probe peak", "dispatch alloc", "dispatch peak"))
for i, n in enumerate(names):
    row = [n]
    for k in ("probe", "dispatch"):
        r = ph.get(k)
        row += ([r[i]["allocated_bytes"], r[i]["peak_allocated_bytes"]] if r else ["-", "-"])
    print("%-12s %16s %16s %16s %16s" % tuple(row))
if a.dump:
    t = holder["t"]
    out = {"phases": ph}
    if t.d and t.d.mode.log is not None:
        out["dlog"] = t.d.mode.log
    if t.p:
        tree = t.p.prof.profiler.kineto_results.experimental_event_tree()
        ev = []
        rng = {}
        stack = [(e, None) for e in tree]
        while stack:
            e, parent = stack.pop()
            stack.extend((c, e.name if not e.name.startswith("[memory]") else parent) for c in e.children)
            if e.name.startswith("vram_phase::"):
                rng[e.name] = (e.start_time_ns, e.end_time_ns)
            ef = e.extra_fields
            if hasattr(ef, "alloc_size") and hasattr(ef, "total_allocated"):
                ev.append((e.start_time_ns, int(ef.alloc_size), int(ef.total_allocated), e.tag.name if hasattr(e, "tag") else "",
                           parent, getattr(e, "thread_id", None) if hasattr(e, "thread_id") else None, int(ef.ptr) if hasattr(ef, "ptr") else None))
        out["pev"] = ev
        out["ranges"] = rng
    pickle.dump(out, open(a.dump, "wb"))
