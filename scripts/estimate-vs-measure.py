#!/usr/bin/env python3
"""Per-case agreement of the estimate with a directory of `vram measure` reports (issue 13, item 3).

    python3 scripts/estimate-vs-measure.py docs/measurements/types > docs/measurements/types/AGREEMENT.md

Each report holds the estimate it was compared with (`estimate`, written by `vram measure`): a case
agrees when every component (weights, gradients, optimizer states, KV cache) is exact to 0.01 % and
the overall peak within 1 %. Cases without an estimate say why (the model or scenario is not
modelled), cases that did not run say so from their error.
"""
import json
import os
import sys


def main():
    d = sys.argv[1]
    rows = []
    for name in sorted(os.listdir(d)):
        if not name.endswith(".json") or name == "matrix.json":
            continue
        r = json.load(open(os.path.join(d, name)))
        case = name[:-5]
        est = r.get("estimate")
        mt = (r.get("model") or {}).get("model_type") or "?"
        if r.get("outcome") not in (None, "ok"):
            rows.append((case, mt, "", "", "not measured: %s" % r.get("outcome")))
            continue
        if not est:
            why = "; ".join(r.get("notes") or []) or "no estimate"
            rows.append((case, mt, "", "", "no estimate: " + why[:160]))
            continue
        comps = est.get("components") or []
        bad = [c for c in comps if abs(c.get("error_percent") or 0) > 0.01]
        comp_text = ", ".join(
            "%s %+.2f %%" % (c["key"], c["error_percent"]) for c in comps
            if c.get("error_percent") is not None) or "–"
        peak = (est.get("peak_allocated") or {}).get("error_percent")
        ok = not bad and peak is not None and abs(peak) <= 1.0
        rows.append((case, mt, comp_text, "%+.2f %%" % peak if peak is not None else "–",
                     "agrees" if ok else "**differs**"))
    print("| case | model_type | components (estimate vs measured) | peak | |")
    print("|---|---|---|---:|---|")
    for r in rows:
        print("| %s |" % " | ".join(r))
    n = len(rows)
    agree = sum(1 for r in rows if r[4] == "agrees")
    print("\n%d cases: %d agree (components exact, peak within 1 %%), %d differ or are not modelled." % (n, agree, n - agree))


if __name__ == "__main__":
    main()
