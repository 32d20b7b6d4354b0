#!/usr/bin/env python3
"""Writes docs/measurements/ranks/README.md from the `vram measure --nproc N` documents beside it:
per case and rank, the model states (measured vs estimated, in bytes) and the steady-state phase
peaks with their error. Usage: python3 scripts/ranks-summary.py [DIR]"""
import glob
import json
import os
import statistics
import sys

d = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "docs", "measurements", "ranks")
rows = []
errors = []
states_exact = True
for path in sorted(glob.glob(os.path.join(d, "*.json"))):
    doc = json.load(open(path))
    case = os.path.basename(path)[:-5]
    for rank, r in enumerate(doc["ranks"]):
        est = r.get("estimate") or {}
        comps = {c["key"]: c for c in est.get("components", [])}
        states = []
        for k in ("weights", "gradients", "optimizer"):
            c = comps.get(k)
            if c:
                states.append("%s" % format(c["measured_bytes"], ","))
                states_exact &= c["error_bytes"] == 0
        peaks = []
        for p in est.get("phases", []):
            if p["name"].endswith("_2"):
                e = p["peak_allocated"]["error_percent"]
                peaks.append("%s / %s (%+.1f %%)" % (format(p["peak_allocated"]["measured_bytes"], ","),
                                                    format(p["peak_allocated"]["estimated_bytes"], ","), e))
                if p["name"] == "backward_2" or p["name"] == "forward_2" or p["name"] == "optimizer_2":
                    errors.append(abs(e))
        rows.append("| %s | %d | %s | %s |" % (case, rank, " / ".join(states), " · ".join(peaks)))
out = ["# Per-rank CPU measurements (`vram measure --nproc N --fsdp2`)", "",
       "Each case ran every rank under torchrun (`python -m torch.distributed.run --standalone`, gloo on",
       "CPU) with FSDP2 `fully_shard` on every decoder layer and on the root, fp32 without a",
       "mixed-precision policy; exact live-tensor bytes per rank (the probe's CPU tracker). The estimate is",
       "`vram estimate --train --fsdp2 --gpus N --device cpu` for the same effective config.",
       "Regenerate: `bash scripts/measure-ranks.sh` then `python3 scripts/ranks-summary.py`.", "",
       "Model states (weights / gradients / optimizer, bytes per rank): measured = estimated in every row: %s." % ("yes" if states_exact else "NO"),
       "Steady-state phase peaks (forward_2 · backward_2 · optimizer_2), measured / estimated bytes (error):",
       "median |error| %.1f %%, max %.1f %% over %d phase peaks." % (statistics.median(errors) if errors else 0, max(errors) if errors else 0, len(errors)), "",
       "| case | rank | weights / gradients / optimizer (B) | forward_2 · backward_2 · optimizer_2 peak |",
       "|---|---|---|---|"] + rows + [""]
open(os.path.join(d, "README.md"), "w").write("\n".join(out))
print("\n".join(out[7:10]))
