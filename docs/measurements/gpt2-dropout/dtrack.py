"""TorchDispatchMode storage tracker: every storage an op returns is counted once (by data_ptr)
at creation, and subtracted when its Python storage object dies (weakref.finalize; storages keep
their PyObject alive as long as the C++ StorageImpl lives, so the finalizer fires at the free)."""
import contextlib, time, weakref
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


class StorageMode(TorchDispatchMode):
    def __init__(self, log=False):
        super().__init__()
        self.live = {}          # data_ptr -> nbytes
        self.current = 0
        self.peak = 0
        self.log = [] if log else None
        self.op = None
        self.phase = None

    def _free(self, ptr, nbytes):
        if self.live.get(ptr) == nbytes:
            del self.live[ptr]
            self.current -= nbytes
            if self.log is not None:
                self.log.append((self.phase, "free", self.op, -nbytes, self.current))

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.op = str(func)
        for t in tree_flatten(out)[0]:
            if not isinstance(t, torch.Tensor) or t.device.type != "cpu":
                continue
            s = t.untyped_storage()
            ptr, n = s.data_ptr(), s.nbytes()
            if n == 0 or ptr == 0 or ptr in self.live:
                continue
            self.live[ptr] = n
            self.current += n
            if self.current > self.peak:
                self.peak = self.current
            if self.log is not None:
                self.log.append((self.phase, "alloc", self.op, n, self.current))
            weakref.finalize(s, self._free, ptr, n)
        return out


class DispatchTracker:
    """Same interface as probe.CpuTracker."""
    counting = "dispatch-storages"

    def __init__(self, torch_mod=None, log=False):
        self.mode = StorageMode(log=log)
        self.mode.__enter__()
        self.records = []
        self.entered = True

    @contextlib.contextmanager
    def phase(self, name):
        m = self.mode
        m.phase = name
        m.peak = m.current
        t0 = time.perf_counter()
        yield
        self.records.append({"name": name, "allocated_bytes": m.current,
                             "peak_allocated_bytes": m.peak,
                             "wall_seconds": round(time.perf_counter() - t0, 3)})

    def allocated_now(self):
        return self.mode.current

    def finish(self, failed_phase=None):
        if self.entered:
            self.mode.__exit__(None, None, None)
            self.entered = False
        return self.records
