"""Hand-checkable cases, each measured three ways: the probe's CpuTracker alone, the dispatch tracker
alone, and both together.  Sizes are chosen so every tensor's bytes are easy to compute by hand."""
import sys, os, contextlib, importlib.util, json
import torch, torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtrack
PROBE = os.environ.get("PROBE", "probe_orig.py")
spec = importlib.util.spec_from_file_location("probe", PROBE)
probe = importlib.util.module_from_spec(spec); spec.loader.exec_module(probe)
torch.manual_seed(0)


class NoopMode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def case_sum(mode_ctx):
    # w: 1000x1000 fp32 = 4,000,000 B; loss = (2w).sum() + (3w).sum()
    # backward: MulBackward0 x2 each make a fresh 4,000,000 B grad for w; the engine sums them in
    # w's InputBuffer: in place (old.add_(new)) -> peak w + 2 grads = 12,000,000 (+ scalars),
    # out of place (old + new) -> w + 3 grads = 16,000,000.
    w = torch.randn(1000, 1000, requires_grad=True)
    return w, (lambda: (w * 2).sum() + (w * 3).sum())


def run(case, tracker_kind, autocast=False, extra_mode=None):
    trackers = []
    if tracker_kind in ("probe", "both"):
        trackers.append(probe.CpuTracker(torch))
    if tracker_kind in ("dispatch", "both"):
        trackers.append(dtrack.DispatchTracker())
    noop = NoopMode() if extra_mode == "noop" else None
    if noop: noop.__enter__()

    @contextlib.contextmanager
    def phase(name):
        with contextlib.ExitStack() as st:
            for t in trackers: st.enter_context(t.phase(name))
            yield
    with phase("load"):
        state = case()
    with phase("forward"):
        ac = torch.autocast("cpu", dtype=torch.bfloat16) if autocast else contextlib.nullcontext()
        with ac:
            loss = state[-1]()
    with phase("backward"):
        loss.backward()
        del loss
    if noop: noop.__exit__(None, None, None)
    res = {}
    for t in trackers:
        res[t.counting] = {r["name"]: (r["allocated_bytes"], r["peak_allocated_bytes"]) for r in t.finish()}
    return res


V, H, T = 1000, 64, 8   # vocab, hidden, tokens


def case_tied():
    # GPT-2's tying in miniature: wte (V x H fp32 = 256,000 B) is the embedding and the LM head.
    emb = torch.nn.Embedding(V, H)
    ids = torch.randint(0, V, (T,))
    drop = torch.nn.Dropout(0.1)
    def fwd():
        x = drop(emb(ids))                          # T x H
        logits = F.linear(x, emb.weight)            # T x V
        return F.cross_entropy(logits.float(), ids)
    return emb, ids, fwd


def case_dropout():
    # One Linear(H, H) + dropout + loss: what does CPU dropout keep for backward?
    lin = torch.nn.Linear(H, H)
    x = torch.randn(T, H)
    drop = torch.nn.Dropout(0.1)
    def fwd():
        return drop(lin(x)).square().sum()
    return lin, x, fwd


CASES = {"sum": lambda: case_sum(None), "tied": case_tied, "dropout": case_dropout}
if __name__ == "__main__":
    torch.set_num_threads(1)
    name = sys.argv[1]
    autocast = "ac" in sys.argv[2:]
    extra = "noop" if "noop" in sys.argv[2:] else None
    for kind in ("probe", "dispatch", "both"):
        r = run(CASES[name], kind, autocast=autocast, extra_mode=extra)
        print(name, "autocast" if autocast else "fp32", "noop-mode" if extra else "", kind, json.dumps(r))
