"""vram measure probe: memory of one real PyTorch step of a HuggingFace model, per phase.

Embedded in the `vram` binary (crates/vram_cli/src/measure/python.rs, `include_str!`) and run as

    python - --config CONFIG.json --scenario '{"mode": "train", ...}' --device cpu|cuda[:N]
    python - --self-test            # validates the CPU tracker on tensors of known size

with this file on standard input. It prints exactly one JSON document on stdout (schema:
docs/measure-report.md, "probe output") and progress lines starting with "vram-probe: " on stderr.
Failures are answers too: the document then has "status": "error" or "oom" and says what to do.

What is measured
----------------
Training: load -> forward (labels = input_ids, so the logits, their fp32 upcast and the
cross-entropy count) -> backward -> optimizer step (+ zero_grad(set_to_none=True)), then the same
step again (forward_2, backward_2, optimizer_2) so that the optimizer states exist from its start.
Inference: load -> prefill of seq_len tokens at batch with the KV cache (use_cache=True) -> decode of
one token, as `generate` does (fp32 copy of the last position's logits, greedy next token).

CPU: exact live-tensor bytes. The PyTorch profiler with profile_memory=True makes the CPU allocator
(c10 ProfiledCPUMemoryReporter) report every allocation and free with its exact requested size and the
running total of live bytes allocated while profiling; a phase's peak is the largest running total
inside that phase's record_function range. Storages are counted once however many views share them,
and temporaries inside kernels that go through the c10 allocator count too, as they do for
torch.cuda.max_memory_allocated. Where CPU and CUDA defaults differ the probe uses the CUDA one
(optimizers with foreach=True).

One correction (`live_bytes_timeline`): the reporter records a free only on a thread the
profiler watches (`ProfiledCPUMemoryReporter::Delete` asks `memoryProfilingEnabled()` of the
freeing thread). Under torchrun, gloo's worker threads run each collective under the caller's
profiler state, but `ProcessGroupGloo::runLoop` keeps the work (and the tensors it holds) until it
re-takes its queue lock; when that reference is the last one, the free is not reported and both the
events and the running total keep the block for good. Such a block was freed when the last
collective that held it ended (a "gloo:..." range on a worker thread), and three facts tell which
blocks: a copy gloo made for itself inside a `c10d::` op (`_reduce_scatter_base_` clones its input)
is held by the work alone; any other block whose address the allocator hands out again was freed
by then (without a collective that named it, it leaves the count there: a late bound); and a block
a collective named that no tensor holds when the profiler stops was freed too. The probe records
input shapes under torchrun to name a collective's tensors, except for torchtitan, whose `to_empty`
on DTensors refuses the weak references they keep: there the address bound alone applies.

CUDA: torch.cuda.memory_allocated / max_memory_allocated (peak reset at each phase start) /
memory_reserved / max_memory_reserved, and the device memory NVML reports for this process
(pynvml if importable, else nvidia-smi --query-compute-apps), which includes the CUDA context.
"""

import bisect
import contextlib
import gc
import json
import os
import platform
import sys
import time
import traceback
import warnings

PROBE_VERSION = 1
GIB = float(1 << 30)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
warnings.filterwarnings("ignore")


def progress(message):
    """One progress line on stderr (the vram binary shows these while the step runs)."""
    print("vram-probe: " + message, file=sys.stderr, flush=True)


class ProbeFailure(Exception):
    """A failure that is an answer: kind is one of missing_package, no_cuda, unsupported_architecture,
    unsupported_scenario, bad_config, oom."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind
        self.message = message


# --------------------------------------------------------------------------------------------------
# Imports with instructions when something is missing
# --------------------------------------------------------------------------------------------------

INSTALL_HINT = (
    "install them with scripts/python-env.sh (a venv at ~/.cache/vram/venv that vram finds by itself), "
    "or `pip install torch transformers peft accelerate` into the python given with --python"
)


def import_torch():
    try:
        import torch  # noqa: F401
    except ImportError as e:
        raise ProbeFailure("missing_package", "python %s at %s cannot import torch (%s); %s"
                           % (platform.python_version(), sys.executable, e, INSTALL_HINT))
    return torch


def import_transformers():
    try:
        import transformers  # noqa: F401
    except ImportError as e:
        raise ProbeFailure("missing_package", "python at %s cannot import transformers (%s); %s"
                           % (sys.executable, e, INSTALL_HINT))
    transformers.logging.set_verbosity_error()
    return transformers


def module_version(name):
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:
        return None


# --------------------------------------------------------------------------------------------------
# Trackers
# --------------------------------------------------------------------------------------------------

class CpuTracker:
    """Exact live-tensor bytes on CPU from the profiler's allocation events (see module doc)."""

    counting = "cpu-exact"

    def __init__(self, torch, name_collective_inputs=False):
        from torch.profiler import ProfilerActivity, profile, record_function
        self.torch = torch
        self.record_function = record_function
        # the input shapes name the tensors each gloo run works on (finish(), under torchrun)
        self.prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True,
                            record_shapes=name_collective_inputs, with_stack=False)
        self.name_collective_inputs = name_collective_inputs
        self.held = None
        self.prof.start()
        self.phases = []  # (name, wall_seconds)
        self.stopped = False

    @contextlib.contextmanager
    def phase(self, name):
        t0 = time.perf_counter()
        with self.record_function("vram_phase::" + name):
            yield
        self.phases.append((name, time.perf_counter() - t0))
        progress("phase %s done in %.1f s" % (name, time.perf_counter() - t0))

    def allocated_now(self):
        return None  # known only after the profiler stops

    def finish(self, failed_phase=None):
        """Stops the profiler and returns the phase records (a failed phase is included)."""
        if not self.stopped:
            self.prof.stop()
            self.stopped = True
            # what Python still holds: a block a collective named that the events keep to the end
            # and no tensor holds was freed by gloo's thread (live_bytes_timeline)
            self.held = python_held_storages(self.torch) if self.name_collective_inputs else None
        tree = self.prof.profiler.kineto_results.experimental_event_tree()
        allocations = []  # (time_ns, ptr, alloc_size, total_allocated, start of its c10d op)
        runs = []  # (start_ns, end_ns, storages of its inputs): gloo running a collective
        ops = {}  # start_ns -> storages of a c10d op's tensors (its outputs and inputs)
        ranges = {}
        stack = [(ev, None) for ev in tree]
        while stack:
            ev, in_c10d = stack.pop()
            name = ev.name
            if name.startswith("c10d::"):
                in_c10d = ev.start_time_ns
                ops[in_c10d] = input_storages(ev)
            elif name.startswith("gloo:"):
                runs.append((ev.start_time_ns, ev.end_time_ns, input_storages(ev)))
            stack.extend((child, in_c10d) for child in ev.children)
            if name.startswith("vram_phase::"):
                ranges[name[len("vram_phase::"):]] = (ev.start_time_ns, ev.end_time_ns)
                continue
            ef = ev.extra_fields
            if hasattr(ef, "alloc_size") and hasattr(ef, "total_allocated"):
                dev = getattr(ef, "device", None)
                if dev is not None and getattr(dev, "type", "cpu") != "cpu":
                    continue
                allocations.append((ev.start_time_ns, int(ef.ptr), int(ef.alloc_size),
                                    int(ef.total_allocated), in_c10d))
        allocations.sort(key=lambda a: a[0])
        runs.sort(key=lambda r: r[0])
        staging = {}  # c10d op start -> data pointers of the copies gloo allocated inside it
        for _, ptr, size, _, op in allocations:
            if op is not None and size > 0:
                staging.setdefault(op, set()).add(ptr)
        collectives = collectives_by_storage(ops, staging, runs)
        timeline = live_bytes_timeline(allocations, collectives, self.held)
        names = [n for n, _ in self.phases]
        walls = dict(self.phases)
        if failed_phase is not None and failed_phase not in walls:
            names.append(failed_phase)
        records = []
        i = 0
        current = 0
        for name in names:
            if name not in ranges:
                continue
            start, end = ranges[name]
            # allocations between phases (none are made by the probe) belong to the next phase
            peak = current
            while i < len(timeline) and timeline[i][0] <= end:
                _, current, peak_now = timeline[i]
                peak = max(peak, peak_now)
                i += 1
            records.append({
                "name": name,
                "allocated_bytes": current,
                "peak_allocated_bytes": peak,
                "wall_seconds": round(walls.get(name, 0.0), 3),
            })
        return records


def input_storages(ev):
    """Data pointers of the tensors an event's inputs name (recorded with record_shapes)."""
    ptrs = set()
    for arg in getattr(ev.extra_fields, "inputs", None) or []:
        for item in arg if isinstance(arg, list) else [arg]:
            ptr = getattr(item, "storage_data_ptr", None)
            if ptr:
                ptrs.add(int(ptr))
    return ptrs


def python_held_storages(torch):
    """Data pointers of the storages of every tensor the interpreter holds (DTensors' local
    tensors, parameters, gradients and optimizer states included)."""
    gc.collect()
    ptrs = set()
    for obj in gc.get_objects():
        try:
            if isinstance(obj, torch.Tensor) and obj.device.type == "cpu" and not obj.is_meta:
                ptrs.add(int(obj.untyped_storage().data_ptr()))
        except Exception:  # subclasses without a storage of their own (DTensor itself), sparse
            continue
    return ptrs


def collectives_by_storage(ops, staging, runs):
    """{data pointer: [(c10d op start, end of the gloo run that carried it out)]} for every tensor a
    c10d op named and every copy gloo made inside one. An op's run is the first that starts with or
    after it and takes one of those tensors as an input (gloo's workers run the queue in order).
    runs: sorted by start."""
    out = {}
    run_starts = [r[0] for r in runs]
    for start in sorted(ops):
        named = ops[start] | staging.get(start, set())
        for k in range(bisect.bisect_left(run_starts, start), len(runs)):
            _, run_end, storages = runs[k]
            if storages & named:
                for ptr in named:
                    out.setdefault(ptr, []).append((start, run_end))
                break
    return out


def live_bytes_timeline(allocations, collectives=None, held=None):
    """[(time_ns, live bytes by the events, the larger of that and the reporter's running total)]
    for the allocation events (time_ns, ptr, alloc_size, total_allocated, start of the c10d op it
    was made inside, or None),
    time-ordered, with the frees the profiler did not see put back (module doc). collectives:
    {ptr: [(c10d op start, end of its gloo run)]} (collectives_by_storage).

    A free goes unseen only where a gloo worker thread drops a work's last reference after running
    it, so such a block was freed when the last collective that held it ended:
    - a copy gloo made for itself inside a c10d op, which only the work holds and no event frees,
      when that op's run ends;
    - any other block the events still hold when its address is allocated again (so it was freed
      by then), when the last run of a collective that named it ended before that; at that
      allocation if none did;
    - a block a collective named that the events hold to the end but no tensor does (held: the
      data pointers Python holds when the profiler stops), when that collective's run ended.
    From then on it counts in neither figure (the reporter's total kept it too: its size table
    entry was overwritten or left behind, its bytes never subtracted)."""
    collectives = collectives or {}
    ends = {}  # allocation index -> time of the event that ends it (its free or its address reused)
    freed = set()  # allocation indices with a reported free
    holder = {}
    for i, (t, ptr, size, _, _) in enumerate(allocations):
        if size > 0:
            if ptr in holder:
                ends[holder[ptr]] = t
            holder[ptr] = i
        elif ptr in holder:
            j = holder.pop(ptr)
            ends[j] = t
            freed.add(j)
    stream = [(t, 0, i) for i, (t, _, _, _, _) in enumerate(allocations)]
    for i, (t, ptr, size, _, own_op) in enumerate(allocations):
        if size <= 0 or i in freed:
            continue
        end = ends.get(i, float("inf"))
        done = max((run_end for op_start, run_end in collectives.get(ptr, ())
                    if (op_start >= t or op_start == own_op) and run_end < end), default=None)
        gone = own_op is not None or end < float("inf") or (held is not None and ptr not in held)
        if done is not None and gone:
            stream.append((done, 1, i))  # 1: after events of the same instant
    stream.sort()
    live = {}  # ptr -> allocation index the events hold there
    lost = 0   # bytes of blocks freed where the profiler did not see it
    current = 0
    total = 0
    out = []
    for t, unreported, i in stream:
        _, ptr, size, event_total, _ = allocations[i]
        if unreported:
            if live.get(ptr) == i:
                del live[ptr]
                lost += size
                current -= size
        else:
            total = event_total
            if size > 0:
                stale = live.get(ptr)
                if stale is not None:
                    lost += allocations[stale][2]
                    current -= allocations[stale][2]
                live[ptr] = i
            else:
                live.pop(ptr, None)
            current += size
        out.append((t, current, max(current, total - lost)))
    return out


class CudaTracker:
    """torch.cuda allocator statistics and NVML's per-process device memory, per phase."""

    counting = "cuda-allocator"

    def __init__(self, torch, device):
        self.torch = torch
        self.device = device
        self.records = []
        self.nvml = NvmlReader(device.index or 0)

    @contextlib.contextmanager
    def phase(self, name):
        cuda = self.torch.cuda
        cuda.synchronize(self.device)
        cuda.reset_peak_memory_stats(self.device)
        t0 = time.perf_counter()
        self.current_phase = name
        yield
        cuda.synchronize(self.device)
        wall = time.perf_counter() - t0
        rec = {
            "name": name,
            "allocated_bytes": int(cuda.memory_allocated(self.device)),
            "peak_allocated_bytes": int(cuda.max_memory_allocated(self.device)),
            "reserved_bytes": int(cuda.memory_reserved(self.device)),
            "peak_reserved_bytes": int(cuda.max_memory_reserved(self.device)),
            "device_bytes": self.nvml.process_used_bytes(),
            "device_used_bytes": self.nvml.device_used_bytes(self.torch, self.device),
            "wall_seconds": round(wall, 3),
        }
        self.records.append(rec)
        progress("phase %s done in %.1f s: allocated %.3f GiB, peak %.3f GiB, reserved %.3f GiB"
                 % (name, wall, rec["allocated_bytes"] / GIB, rec["peak_allocated_bytes"] / GIB,
                    rec["reserved_bytes"] / GIB))

    def allocated_now(self):
        return int(self.torch.cuda.memory_allocated(self.device))

    def peak_now(self):
        return int(self.torch.cuda.max_memory_allocated(self.device))

    def finish(self, failed_phase=None):
        return self.records


class NvmlReader:
    """Device memory used by this process as NVML reports it (what nvidia-smi shows)."""

    def __init__(self, torch_index):
        self.pid = os.getpid()
        self.nvml = None
        self.handle = None
        self.driver = None
        # NVML enumerates GPUs in PCI order; CUDA_VISIBLE_DEVICES remaps torch's indices.
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        index = torch_index
        if visible:
            parts = [p.strip() for p in visible.split(",") if p.strip()]
            if torch_index < len(parts) and parts[torch_index].isdigit():
                index = int(parts[torch_index])
        self.index = index
        try:
            import pynvml
            pynvml.nvmlInit()
            self.nvml = pynvml
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            drv = pynvml.nvmlSystemGetDriverVersion()
            self.driver = drv.decode() if isinstance(drv, bytes) else str(drv)
        except Exception:
            self.nvml = None
            self.driver = self._smi(["--query-gpu=driver_version", "--format=csv,noheader", "-i", str(index)])

    @staticmethod
    def _smi(args):
        import subprocess
        try:
            out = subprocess.run(["nvidia-smi"] + args, capture_output=True, text=True, timeout=20)
            if out.returncode == 0:
                return out.stdout.strip()
        except Exception:
            pass
        return None

    def process_used_bytes(self):
        if self.nvml is not None:
            try:
                procs = self.nvml.nvmlDeviceGetComputeRunningProcesses(self.handle)
                for p in procs:
                    if p.pid == self.pid and p.usedGpuMemory is not None:
                        return int(p.usedGpuMemory)
                return None
            except Exception:
                return None
        out = self._smi(["--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits",
                         "-i", str(self.index)])
        if out:
            for line in out.splitlines():
                parts = [p.strip() for p in line.split(",")]
                if len(parts) == 2 and parts[0] == str(self.pid) and parts[1].isdigit():
                    return int(parts[1]) << 20  # nvidia-smi reports MiB
        return None

    @staticmethod
    def device_used_bytes(torch, device):
        try:
            free, total = torch.cuda.mem_get_info(device)
            return int(total - free)
        except Exception:
            return None


# --------------------------------------------------------------------------------------------------
# Byte accounting of tensors (storages counted once)
# --------------------------------------------------------------------------------------------------

def local_tensor(t):
    """A DTensor's shard on this rank (FSDP2 / tensor parallel parameters, their grads and states),
    or a DeepSpeed ZeRO-3 parameter's partition (`ds_tensor`; the parameter itself is empty)."""
    part = getattr(t, "ds_tensor", None)
    if part is not None:
        return part
    return getattr(t, "_local_tensor", t)


def storage_key(t):
    t = local_tensor(t)
    s = t.untyped_storage()
    return (str(t.device), s.data_ptr())


def unique_storage_bytes(tensors, seen=None):
    seen = set() if seen is None else seen
    total = 0
    for t in tensors:
        if t is None:
            continue
        key = storage_key(t)
        if key in seen:
            continue
        seen.add(key)
        total += local_tensor(t).untyped_storage().nbytes()
    return total


def tensors_in(obj, torch, depth=0, seen_objs=None):
    """Every tensor reachable from a cache object (lists, tuples, dicts, attributes), for KV bytes."""
    seen_objs = set() if seen_objs is None else seen_objs
    if depth > 6 or id(obj) in seen_objs:
        return []
    seen_objs.add(id(obj))
    if isinstance(obj, torch.Tensor):
        return [obj]
    out = []
    if isinstance(obj, (list, tuple)):
        for x in obj:
            out.extend(tensors_in(x, torch, depth + 1, seen_objs))
    elif isinstance(obj, dict):
        for x in obj.values():
            out.extend(tensors_in(x, torch, depth + 1, seen_objs))
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        for x in vars(obj).values():
            out.extend(tensors_in(x, torch, depth + 1, seen_objs))
    return out


# --------------------------------------------------------------------------------------------------
# Model and scenario
# --------------------------------------------------------------------------------------------------

DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
ATTN = {"eager": "eager", "sdpa": "sdpa", "flash": "flash_attention_2"}


def torch_dtype(torch, name):
    if name not in DTYPES:
        raise ProbeFailure("unsupported_scenario", "dtype: expected fp32, bf16 or fp16, found %r" % name)
    return getattr(torch, DTYPES[name])


def check_scenario(s):
    """Refuses what one process on one device cannot run (those parts are estimate-only)."""
    unsupported = []
    if int(s.get("gpus", 1)) != distributed_world()[1]:
        unsupported.append("gpus=%s (with %d process%s)" % (
            s.get("gpus"), distributed_world()[1], "" if distributed_world()[1] == 1 else "es"))
    if int(s.get("zero", 0)) != 0 and distributed_world()[1] == 1:
        unsupported.append("zero=%s (DeepSpeed ZeRO runs under torchrun: --nproc N)" % s.get("zero"))
    if s.get("offload_optimizer") or s.get("offload_params"):
        unsupported.append("offload")
    if int(s.get("grad_accumulation", 1)) != 1:
        unsupported.append("grad_accumulation=%s" % s.get("grad_accumulation"))
    if s.get("engine", "transformers") != "transformers":
        unsupported.append("engine=%s" % s.get("engine"))
    w = s.get("weights")
    if w is not None and w != s.get("dtype"):
        unsupported.append("weights=%s" % w)
    kv = s.get("kv_dtype")
    if kv is not None and kv != s.get("dtype"):
        unsupported.append("kv_dtype=%s" % kv)
    if unsupported:
        raise ProbeFailure("unsupported_scenario",
                           "the probe measures one process on one device with HF transformers and "
                           "unquantized weights; not measurable: " + ", ".join(unsupported))


def load_config(transformers, path, notes):
    try:
        with open(path, "r", encoding="utf-8") as f:
            raw = json.load(f)
    except (OSError, ValueError) as e:
        raise ProbeFailure("bad_config", "%s: cannot read the config as JSON (%s)" % (path, e))
    if not isinstance(raw, dict):
        raise ProbeFailure("bad_config", "%s: expected a JSON object" % path)
    model_type = raw.pop("model_type", None)
    if not isinstance(model_type, str):
        raise ProbeFailure("bad_config", "%s: model_type: expected a string naming the architecture" % path)
    for key in ("quantization_config", "auto_map"):
        if key in raw:
            raw.pop(key)
            notes.append("%s in the config ignored: the probe builds the unquantized model from "
                         "transformers' own classes" % key)
    try:
        config = transformers.AutoConfig.for_model(model_type, **raw)
    except (ValueError, KeyError) as e:
        raise ProbeFailure("unsupported_architecture",
                           "transformers %s does not know model_type %r (%s); a newer transformers may"
                           % (transformers.__version__, model_type, str(e).splitlines()[0]))
    return config, model_type


# Encoders measured as they are used: fine-tuned for sequence classification (the model with its
# pooler and a 2-label classifier) and run as feature extractors (the bare model with its pooler).
ENCODER_TYPES = ("bert",)
NUM_LABELS = 2


def auto_class(transformers, config, train=False):
    """CausalLM where the architecture has one; seq2seq (t5) otherwise; an encoder (bert) is trained
    for sequence classification and run as the bare model (its pooler included)."""
    from transformers.models.auto import modeling_auto as ma
    ctype = type(config)
    if getattr(config, "is_encoder_decoder", False) and ctype in ma.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING:
        return transformers.AutoModelForSeq2SeqLM, "seq2seq-lm"
    if config.model_type in ENCODER_TYPES and not getattr(config, "is_decoder", False):
        if train:
            config.num_labels = NUM_LABELS
            return transformers.AutoModelForSequenceClassification, "sequence-classification"
        return transformers.AutoModel, "encoder"
    if ctype in ma.MODEL_FOR_CAUSAL_LM_MAPPING:
        return transformers.AutoModelForCausalLM, "causal-lm"
    if ctype in ma.MODEL_FOR_MASKED_LM_MAPPING:
        return transformers.AutoModelForMaskedLM, "masked-lm"
    raise ProbeFailure("unsupported_architecture",
                       "transformers %s has no causal-LM, seq2seq-LM or masked-LM head for model_type %r"
                       % (transformers.__version__, config.model_type))


def build_model(torch, transformers, config, scenario, device, notes):
    param_dtype = torch_dtype(torch, scenario.get("dtype", "bf16"))
    attn = scenario.get("attention", "sdpa")
    if attn not in ATTN:
        raise ProbeFailure("unsupported_scenario", "attention: expected eager, sdpa or flash, found %r" % attn)
    cls, head = auto_class(transformers, config, train=scenario.get("mode") == "train")
    kwargs = {"dtype": param_dtype, "attn_implementation": ATTN[attn]}
    try:
        with torch.device(device):
            model = cls.from_config(config, **kwargs)
    except ImportError as e:
        raise ProbeFailure("missing_package", "attention %s needs a package that is not installed (%s)"
                           % (attn, str(e).splitlines()[0]))
    except ValueError as e:
        msg = str(e).splitlines()[0] if str(e) else repr(e)
        if "attn_implementation" in msg or "attention" in msg.lower():
            raise ProbeFailure("unsupported_scenario", "attention %s: %s" % (attn, msg))
        raise ProbeFailure("unsupported_architecture", "transformers %s cannot build %s: %s"
                           % (transformers.__version__, config.model_type, msg))
    keep_fp32_as_from_pretrained(torch, model, param_dtype, notes)
    return model, head


def keep_fp32_as_from_pretrained(torch, model, param_dtype, notes):
    """`from_config` casts every parameter to the requested dtype, but `from_pretrained` (what users
    run) keeps the class's `_keep_in_fp32_modules` in fp32 under fp16 (`_get_dtype_plan`: T5's `wo`,
    gpt-oss's norms); the strict list is already honoured at construction. Do the same, so that an
    fp16 measurement is what a loaded checkpoint holds."""
    keep = getattr(model, "_keep_in_fp32_modules", None)
    if param_dtype != torch.float16 or not keep:
        return
    moved = 0
    for name, module in model.named_modules():
        parts = name.split(".")
        if any(k in parts for k in keep):
            for p in module.parameters(recurse=False):
                p.data = p.data.float()
                moved += 1
    if moved:
        notes.append("kept %d parameters of %s in fp32 as from_pretrained does under fp16"
                     % (moved, sorted(keep)))


def distributed_world():
    """(rank, world size) when launched by torchrun (`vram measure --nproc N`), else (0, 1)."""
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


def init_distributed(torch, device):
    """One process group per run: gloo on CPU, NCCL on CUDA (torchrun's env:// rendezvous)."""
    import torch.distributed as dist
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return dist


def apply_layout(torch, model, scenario, notes):
    """The distributed layout of `vram measure --nproc N`: transformers' own tensor parallelism
    (`--tp`), or FSDP2 `fully_shard` on every decoder layer and then the root (`--fsdp2`)."""
    layout = scenario.get("layout") or {}
    tp = int(layout.get("tp", 1))
    world = distributed_world()[1]
    if int(scenario.get("zero", 0)) >= 1:
        if layout.get("fsdp2") or tp > 1:
            raise ProbeFailure("unsupported_scenario", "--zero with --fsdp2 or --tp: one data-parallel engine at a time")
        return apply_deepspeed(torch, model, scenario, notes)
    if not layout.get("fsdp2") and tp <= 1:
        raise ProbeFailure("unsupported_scenario",
                           "distributed measurement supports FSDP2 (--fsdp2) and transformers' tensor "
                           "parallelism (--framework hf --tp N); PP is estimate-only")
    if world % max(tp, 1) != 0:
        raise ProbeFailure("unsupported_scenario",
                           "--tp %d does not divide the %d ranks" % (tp, world))
    if tp <= 1:
        replicas = int(layout.get("hsdp_replicas", 1))
        if replicas > 1:
            # HSDP: FSDP2 on a 2-D (replicate, shard) mesh shards inside each group and
            # replicates across them
            if world % replicas != 0:
                raise ProbeFailure("unsupported_scenario",
                                   "--hsdp-replicas %d does not divide the %d ranks" % (replicas, world))
            from torch.distributed.device_mesh import init_device_mesh
            device_type = next(model.parameters()).device.type
            mesh = init_device_mesh(device_type, (replicas, world // replicas),
                                    mesh_dim_names=("replicate", "shard"))
            notes.append("HSDP: %d replicas × %d shards" % (replicas, world // replicas))
            return apply_fsdp2(model, layout, notes, mesh)
        return apply_fsdp2(model, layout, notes)
    if not layout.get("fsdp2"):
        if tp != world:
            raise ProbeFailure("unsupported_scenario",
                               "tensor parallelism without FSDP2 runs over every rank (--tp N with --nproc N)")
        return apply_tensor_parallel(torch, model, tp, notes)
    # a 2-D mesh: FSDP2 over the data-parallel ranks of each TP group (torchtitan's and
    # transformers' layout: TP inside, FSDP across)
    from torch.distributed.device_mesh import init_device_mesh
    device_type = next(model.parameters()).device.type
    mesh = init_device_mesh(device_type, (world // tp, tp), mesh_dim_names=("dp", "tp"))
    model = apply_tensor_parallel(torch, model, tp, notes, mesh["tp"])
    return apply_fsdp2(model, layout, notes, mesh["dp"])


def deepspeed_config(scenario, hidden_size):
    """The DeepSpeed config HF `Trainer` hands DeepSpeed for `--deepspeed` with ZeRO stage S and
    its "auto" values filled (transformers/integrations/deepspeed.py `trainer_config_finalize`):
    buckets from the hidden size, the micro-batch, `gradient_clipping` = `max_grad_norm` 1.0, bf16
    or fp16 from the mixed precision; the rest DeepSpeed's defaults."""
    mp = scenario.get("mixed_precision", "none")
    stage = int(scenario.get("zero", 0))
    return {
        "train_micro_batch_size_per_gpu": int(scenario["batch"]),
        "gradient_accumulation_steps": 1,
        "gradient_clipping": 1.0,
        "zero_optimization": {
            "stage": stage,
            "reduce_bucket_size": hidden_size * hidden_size,
            "stage3_prefetch_bucket_size": int(0.9 * hidden_size * hidden_size),
            "stage3_param_persistence_threshold": 10 * hidden_size,
        },
        "bf16": {"enabled": mp == "bf16" or scenario.get("dtype") == "bf16"},
        "fp16": {"enabled": mp == "fp16" or scenario.get("dtype") == "fp16"},
        "zero_allow_untested_optimizer": True,
        "steps_per_print": 1 << 30,
        "wall_clock_breakdown": False,
    }


def apply_deepspeed(torch, model, scenario, notes):
    """DeepSpeed ZeRO as HF `Trainer` runs it: the Trainer's AdamW handed to
    `deepspeed.initialize` with the Trainer's config. On CPU DeepSpeed's CPU accelerator
    communicates over gloo and JIT-builds its shared-memory op (ninja and a C++ compiler)."""
    if next(model.parameters()).device.type == "cpu":
        os.environ.setdefault("DS_ACCELERATOR", "cpu")
    bindir = os.path.dirname(sys.executable)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        # the venv's ninja, for DeepSpeed's JIT-built ops
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    try:
        import deepspeed
    except ImportError as e:
        raise ProbeFailure("missing_package",
                           "--zero needs DeepSpeed (scripts/python-env.sh installs it; or pip install deepspeed): %s" % e)
    if scenario.get("offload_optimizer") or scenario.get("offload_params"):
        raise ProbeFailure("unsupported_scenario", "ZeRO offload is not measured")
    hidden = int(getattr(model.config.get_text_config() if hasattr(model.config, "get_text_config")
                         else model.config, "hidden_size", 0) or 0)
    if hidden <= 0:
        raise ProbeFailure("unsupported_architecture", "hidden_size: DeepSpeed's auto bucket sizes need it")
    config = deepspeed_config(scenario, hidden)
    opt, impl = make_optimizer(torch, scenario.get("optimizer", "adamw"),
                               [p for p in model.parameters() if p.requires_grad],
                               next(model.parameters()).device.type)
    engine, _, _, _ = deepspeed.initialize(model=model, optimizer=opt, config=config)
    engine.vram_optimizer_impl = impl
    notes.append("DeepSpeed %s ZeRO stage %d over %d ranks (reduce_bucket_size %d, %s)"
                 % (deepspeed.__version__, config["zero_optimization"]["stage"], distributed_world()[1],
                    hidden * hidden, "bf16" if config["bf16"]["enabled"] else "fp16" if config["fp16"]["enabled"] else "fp32"))
    return engine


def run_train_deepspeed(torch, engine, head, scenario, device, tracker, measured, autocast):
    """Two training steps through the DeepSpeed engine (forward, `engine.backward`, `engine.step`:
    gradient clipping, the optimizer on this rank's fp32 partition, the parameters gathered back).
    The model states it holds: the optimizer's states and DeepSpeed's fp32 master partition."""
    b, s = int(scenario["batch"]), int(scenario["seq_len"])
    measured["optimizer_impl"] = getattr(engine, "vram_optimizer_impl", "?")
    model = engine.module
    vocab = int(model.config.get_text_config().vocab_size if hasattr(model.config, "get_text_config")
                else model.config.vocab_size)
    ids = prompt_ids(torch, vocab, b, s, device, measured)
    labels = (torch.zeros(b, dtype=torch.long, device=device)
              if head == "sequence-classification" else ids)
    zero_opt = engine.optimizer
    for step in (1, 2):
        sfx = "" if step == 1 else "_2"
        with tracker.phase("forward" + sfx):
            out = engine(**forward_kwargs(model, head, ids, labels))
            loss = out.loss
            del out
        with tracker.phase("backward" + sfx):
            engine.backward(loss)
            del loss
        with tracker.phase("optimizer" + sfx):
            engine.step()
            if step == 1:
                states, steps = optimizer_state_bytes(torch, zero_opt.optimizer)
                masters = 0
                for name in ("single_partition_of_fp32_groups", "fp32_partitioned_groups_flat"):
                    masters += unique_storage_bytes(getattr(zero_opt, name, None) or [])
                measured["optimizer_bytes"] = states + masters
                measured["optimizer_step_bytes"] = steps


def apply_tensor_parallel(torch, model, tp, notes, mesh=None):
    """Tensor parallelism as `from_pretrained(..., distributed_config=DistributedConfig(tp_size=N))`
    applies it (transformers/distributed/mixin.py `maybe_distribute_model`): the model's resolved
    `tp_plan` (colwise q/k/v/gate/up, rowwise o/down, vocab-parallel embedding, `lm_head` gathered)
    through `apply_tensor_parallelism`, then the tied weights tied again as loading does. A tied
    `lm_head.weight` is not a parameter of its own, so its entry is left to the tie."""
    try:
        from torch.distributed.device_mesh import init_device_mesh
        from transformers.distributed.configuration_utils import DistributedConfig
        from transformers.distributed.tensor_parallel import apply_tensor_parallelism
    except ImportError as e:
        raise ProbeFailure("missing_package",
                           "tensor parallelism needs transformers >= 5.20 (transformers.distributed): %s" % e)
    if mesh is None:
        mesh = init_device_mesh(next(model.parameters()).device.type, (tp,))
    try:
        plan, _, _ = model._resolve_parallel_plans(DistributedConfig(tp_size=tp))
    except ValueError as e:
        raise ProbeFailure("unsupported_architecture", "transformers' tp_plan: %s" % str(e).splitlines()[0])
    params = dict(model.named_parameters())
    modules = dict(model.named_modules())
    plan = {k: v for k, v in plan.items() if k in params or k in modules}
    apply_tensor_parallelism(model, mesh, plan)
    model.tie_weights()
    notes.append("transformers tensor parallelism over %d ranks: %d planned modules (%s)"
                 % (tp, sum(1 for k in plan if k in modules),
                    ", ".join(sorted(set(plan.values())))))
    return model


def apply_fsdp2(model, layout, notes, mesh=None):
    """FSDP2 `fully_shard` on every decoder layer and then the root (the HF accelerate / torchtitan
    wrapping), with torch's defaults: reshard after forward, no mixed-precision policy (the
    scenario's dtype and autocast apply as on one GPU)."""
    from torch.distributed.fsdp import fully_shard
    layers = None
    for path in ("model.layers", "model.decoder.layers", "transformer.h", "gpt_neox.layers", "layers"):
        obj = model
        try:
            for part in path.split("."):
                obj = getattr(obj, part)
        except AttributeError:
            continue
        layers = obj
        break
    if layers is None:
        raise ProbeFailure("unsupported_architecture", "no decoder layer list found to shard with FSDP2")
    reshard = bool(layout.get("reshard_after_forward", True))
    for layer in layers:
        fully_shard(layer, mesh=mesh, reshard_after_forward=reshard)
    fully_shard(model, mesh=mesh, reshard_after_forward=reshard)
    notes.append("FSDP2 fully_shard on %d layers and the root (reshard_after_forward=%s)" % (len(layers), reshard))
    return model


def apply_lora(model, lora, notes, head="causal-lm"):
    try:
        import peft
    except ImportError as e:
        raise ProbeFailure("missing_package", "LoRA needs peft (%s); %s" % (e, INSTALL_HINT))
    if lora.get("base_quant", "none") != "none":
        raise ProbeFailure("unsupported_scenario",
                           "lora.base_quant=%s (QLoRA) needs bitsandbytes on CUDA and a quantized "
                           "checkpoint; the probe measures unquantized bases only"
                           % lora.get("base_quant"))
    targets = lora.get("targets", "default")
    if targets == "default":
        target_modules = None
    elif targets == "all-linear":
        target_modules = "all-linear"
    elif isinstance(targets, dict) and isinstance(targets.get("modules"), list):
        target_modules = [str(m) for m in targets["modules"]]
    else:
        raise ProbeFailure("unsupported_scenario",
                           "lora.targets: expected \"default\", \"all-linear\" or {\"modules\": [...]}, found %r"
                           % (targets,))
    # SEQ_CLS: peft trains a copy of the classifier (modules_to_save) beside the adapters
    task = "SEQ_CLS" if head == "sequence-classification" else "CAUSAL_LM"
    cfg = peft.LoraConfig(r=int(lora["r"]), lora_alpha=int(lora["alpha"]), lora_dropout=0.0,
                          target_modules=target_modules, task_type=task)
    try:
        model = peft.get_peft_model(model, cfg)
    except ValueError as e:
        raise ProbeFailure("unsupported_scenario", "peft: %s" % str(e).splitlines()[0])
    trainable, total = model.get_nb_trainable_parameters()
    resolved = cfg.target_modules if target_modules is not None else model.peft_config["default"].target_modules
    notes.append("LoRA target modules: %s" % sorted(resolved) if isinstance(resolved, (set, list)) else
                 "LoRA target modules: %s" % resolved)
    return model, int(trainable), int(total), peft.__version__


def param_groups_by_mesh(params):
    """One optimizer group per device mesh, as HF Trainer builds them when parameters are spread
    over meshes (`has_mixed_dtensor`, trainer.py): tensor parallelism leaves the norms plain
    tensors, and a foreach step cannot mix them with DTensors. One group otherwise."""
    by_mesh = {}
    for p in params:
        # keyed by the mesh itself, as Trainer does: equal meshes (each `fully_shard` call makes
        # its own default one) compare and hash equal
        by_mesh.setdefault(getattr(p, "device_mesh", None), []).append(p)
    if len(by_mesh) == 1:
        return params
    return [{"params": ps} for ps in by_mesh.values()]


def make_optimizer(torch, name, params, device_type):
    """The optimizer as users run it on CUDA (torch.optim defaults to foreach there)."""
    lr = 1e-5
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, foreach=True), "torch.optim.SGD(foreach=True)"
    if name == "sgd-momentum":
        return (torch.optim.SGD(params, lr=lr, momentum=0.9, foreach=True),
                "torch.optim.SGD(momentum=0.9, foreach=True)")
    if name == "adamw":
        return torch.optim.AdamW(params, lr=lr, foreach=True), "torch.optim.AdamW(foreach=True)"
    if name == "adafactor":
        if not hasattr(torch.optim, "Adafactor"):
            raise ProbeFailure("missing_package", "adafactor needs torch >= 2.5 (torch.optim.Adafactor)")
        return torch.optim.Adafactor(params, lr=lr, foreach=True), "torch.optim.Adafactor(foreach=True)"
    if name in ("adamw-8bit", "adamw8bit", "lion"):
        try:
            import bitsandbytes as bnb
        except ImportError:
            raise ProbeFailure("missing_package", "%s needs bitsandbytes (pip install bitsandbytes)" % name)
        if device_type != "cuda":
            raise ProbeFailure("unsupported_scenario", "%s (bitsandbytes) runs on CUDA only; use --device cuda" % name)
        if name != "lion":
            return bnb.optim.AdamW8bit(params, lr=lr), "bitsandbytes.optim.AdamW8bit"
        return bnb.optim.Lion(params, lr=lr), "bitsandbytes.optim.Lion"
    raise ProbeFailure("unsupported_scenario", "optimizer: unknown %r" % name)


def optimizer_state_bytes(torch, opt):
    """Bytes of the optimizer's state tensors, moments apart from the scalar step counters."""
    seen = set()
    states = 0
    steps = 0
    for st in opt.state.values():
        for key, v in st.items():
            if not isinstance(v, torch.Tensor):
                continue
            k = storage_key(v)
            if k in seen:
                continue
            seen.add(k)
            if key == "step":
                steps += local_tensor(v).untyped_storage().nbytes()
            else:
                states += local_tensor(v).untyped_storage().nbytes()
    return states, steps


def dtype_breakdown(model):
    out = {}
    for p in model.parameters():
        key = str(p.dtype).replace("torch.", "")
        out[key] = out.get(key, 0) + p.numel()
    return out


# --------------------------------------------------------------------------------------------------
# The runs
# --------------------------------------------------------------------------------------------------

def forward_kwargs(model, head, ids, labels):
    kw = {"input_ids": ids}
    if labels is not None:
        kw["labels"] = labels
    if head not in ("masked-lm", "sequence-classification", "encoder"):
        kw["use_cache"] = False
    return kw


def learned_position_limit(torch, model, config):
    """Largest position a model with learned absolute position embeddings (gpt2's wpe, OPT, bert)
    can embed; None for rotary / ALiBi models, which run past max_position_embeddings."""
    limit = getattr(config, "max_position_embeddings", None)
    if not isinstance(limit, int):
        return None
    for name, mod in model.named_modules():
        leaf = name.rsplit(".", 1)[-1]
        if isinstance(mod, torch.nn.Embedding) and ("pos" in leaf or leaf == "wpe"):
            return limit
    return None


def check_positions(torch, model, scenario, mode):
    limit = learned_position_limit(torch, model, model.config)
    if limit is None:
        return
    need = int(scenario["seq_len"]) + (1 if mode == "infer" else 0)
    if need > limit:
        raise ProbeFailure("unsupported_scenario",
                           "seq_len: this model embeds at most %d positions (learned position embeddings, "
                           "max_position_embeddings) and the %s needs %d%s"
                           % (limit, "step" if mode == "train" else "prefill + 1 decode token", need,
                              "; use --seq %d or less" % (limit - (1 if mode == "infer" else 0))))


# --------------------------------------------------------------------------------------------------
# torchtitan (`--framework torchtitan`)
# --------------------------------------------------------------------------------------------------

# The torchtitan release the probe drives (its library functions, not its Trainer: no dataset,
# tokenizer or checkpoint). torchtitan 0.3 moved to a config-driven API and always wraps the model
# with fully_shard; 0.2.x is the one with `parallelize_llama` / `pipeline_llm` as library calls.
TORCHTITAN_SERIES = "0.2"

# configs whose architecture torchtitan's Llama 3 model is: RMSNorm, RoPE, SwiGLU, no biases
TORCHTITAN_LLAMA_TYPES = ("llama", "mistral")


def import_torchtitan(device_type):
    """torchtitan's Llama 3 model and its parallelization functions. torchtitan picks its device
    type at import (`tools.utils.device_type`, "cuda" when no accelerator is found): on CPU the
    meshes must be CPU (gloo) meshes."""
    try:
        import torchtitan.tools.utils as tt_utils
        import torchtitan.distributed.parallel_dims as tt_dims
        from torchtitan.config import JobConfig
        from torchtitan.distributed import ParallelDims
        from torchtitan.distributed import utils as tt_dist
        from torchtitan.distributed.pipeline_parallel import pipeline_llm
        from torchtitan.components.loss import cross_entropy_loss
        from torchtitan.components.optimizer import build_optimizers
        from torchtitan.models.llama3.model.model import Transformer
        from torchtitan.models.llama3.model.args import TransformerModelArgs
        from torchtitan.models.llama3.infra.parallelize import parallelize_llama
    except ImportError as e:
        raise ProbeFailure("missing_package",
                           "--framework torchtitan needs torchtitan %s.x (scripts/python-env.sh installs it; or "
                           "pip install 'torchtitan==0.2.2'): %s" % (TORCHTITAN_SERIES, e))
    version = module_version("torchtitan") or "?"
    if not version.startswith(TORCHTITAN_SERIES + "."):
        raise ProbeFailure("missing_package",
                           "--framework torchtitan drives torchtitan %s.x's library functions; found %s "
                           "(pip install 'torchtitan==0.2.2')" % (TORCHTITAN_SERIES, version))
    tt_utils.device_type = device_type
    tt_dims.device_type = device_type
    if hasattr(tt_dist, "device_type"):
        tt_dist.device_type = device_type
    return {
        "JobConfig": JobConfig, "ParallelDims": ParallelDims, "dist": tt_dist,
        "pipeline_llm": pipeline_llm, "loss": cross_entropy_loss, "build_optimizers": build_optimizers,
        "Transformer": Transformer, "Args": TransformerModelArgs, "parallelize": parallelize_llama,
        "version": version,
    }


def torchtitan_model_args(tt, raw, seq_len):
    """torchtitan's `TransformerModelArgs` of a HF Llama-family config. torchtitan derives the MLP
    width from `dim` (int(8·dim/3), times `ffn_dim_multiplier`, rounded up to `multiple_of`):
    `multiple_of` = intermediate_size with a multiplier that keeps the product at or below it
    gives the config's width exactly."""
    def need(key):
        v = raw.get(key)
        if not isinstance(v, int) or v <= 0:
            raise ProbeFailure("bad_config", "%s: expected a positive integer for torchtitan's Llama, found %r" % (key, v))
        return v
    model_type = raw.get("model_type")
    if model_type not in TORCHTITAN_LLAMA_TYPES:
        raise ProbeFailure("unsupported_architecture",
                           "model_type %r: --framework torchtitan measures torchtitan's Llama 3 model (%s configs)"
                           % (model_type, ", ".join(TORCHTITAN_LLAMA_TYPES)))
    if raw.get("tie_word_embeddings"):
        raise ProbeFailure("unsupported_architecture",
                           "tie_word_embeddings: torchtitan's Llama 3 has an untied output layer")
    if raw.get("attention_bias") or raw.get("mlp_bias"):
        raise ProbeFailure("unsupported_architecture", "attention_bias / mlp_bias: torchtitan's Llama 3 has no biases")
    h, f, heads = need("hidden_size"), need("intermediate_size"), need("num_attention_heads")
    head_dim = raw.get("head_dim")
    if head_dim is not None and head_dim != h // heads:
        raise ProbeFailure("unsupported_architecture",
                           "head_dim %r: torchtitan's Llama 3 uses hidden_size / num_attention_heads = %d" % (head_dim, h // heads))
    base = int(2 * 4 * h / 3)
    return tt["Args"](
        dim=h, n_layers=need("num_hidden_layers"), n_heads=heads,
        n_kv_heads=raw.get("num_key_value_heads") or heads, vocab_size=need("vocab_size"),
        multiple_of=f, ffn_dim_multiplier=None if base <= f else (f / base) * 0.999,
        norm_eps=float(raw.get("rms_norm_eps", 1e-5)), rope_theta=float(raw.get("rope_theta", 10000.0)),
        max_seq_len=seq_len,
    )


def torchtitan_job(tt, scenario, world):
    """torchtitan's JobConfig for the scenario's layout: TP (with sequence parallel and loss
    parallel, torchtitan's defaults), PP (1F1B over the micro-batches of `global_batch`), FSDP2
    over the remaining ranks with MixedPrecisionPolicy(param_dtype, reduce_dtype=float32)."""
    layout = scenario.get("layout") or {}
    tp, pp = int(layout.get("tp", 1)), int(layout.get("pp", 1))
    for key in ("cp", "ep", "vpp"):
        if int(layout.get(key, 1)) > 1:
            raise ProbeFailure("unsupported_scenario", "--%s: the torchtitan probe measures TP, PP and FSDP2" % key)
    if world % (tp * pp) != 0:
        raise ProbeFailure("unsupported_scenario", "tp %d × pp %d does not divide the %d ranks" % (tp, pp, world))
    dp = world // (tp * pp)
    if dp > 1 and not layout.get("fsdp2"):
        raise ProbeFailure("unsupported_scenario",
                           "%d data-parallel ranks: torchtitan shards them with FSDP2 (--fsdp2)" % dp)
    if layout.get("fsdp2") and dp == 1:
        raise ProbeFailure("unsupported_scenario", "--fsdp2 with one data-parallel rank (tp × pp = the ranks)")
    if int(layout.get("hsdp_replicas", 1)) > 1:
        raise ProbeFailure("unsupported_scenario", "--hsdp-replicas: measured with --framework hf")
    b, s = int(scenario["batch"]), int(scenario["seq_len"])
    global_batch = int(layout.get("global_batch", 0) or 0)
    micro_batches = max(1, global_batch // max(1, b * dp)) if global_batch else 1
    if pp > 1 and micro_batches < pp:
        raise ProbeFailure("unsupported_scenario",
                           "pp %d runs 1F1B over at least %d micro-batches: --global-batch %d or more"
                           % (pp, pp, pp * b * dp))
    if micro_batches > 1 and pp == 1:
        raise ProbeFailure("unsupported_scenario",
                           "--global-batch without --pp: gradient accumulation is not measured")
    jc = tt["JobConfig"]()
    jc.parallelism.tensor_parallel_degree = tp
    jc.parallelism.pipeline_parallel_degree = pp
    jc.parallelism.data_parallel_shard_degree = dp
    jc.parallelism.pipeline_parallel_schedule = "1F1B"
    jc.parallelism.pipeline_parallel_microbatch_size = b
    jc.parallelism.fsdp_reshard_after_forward = (
        "default" if layout.get("reshard_after_forward", True) else "never")
    jc.training.local_batch_size = b * micro_batches
    jc.training.seq_len = s
    mp = scenario.get("mixed_precision", "none")
    if scenario.get("dtype") != "fp32":
        raise ProbeFailure("unsupported_scenario",
                           "dtype %s: torchtitan keeps fp32 parameters (mixed precision through FSDP2's policy: "
                           "--dtype fp32 --mixed-precision bf16)" % scenario.get("dtype"))
    if mp not in ("none", "bf16"):
        raise ProbeFailure("unsupported_scenario", "mixed_precision %s: torchtitan runs bf16 or fp32" % mp)
    jc.training.mixed_precision_param = "bfloat16" if mp == "bf16" else "float32"
    if scenario.get("optimizer", "adamw") != "adamw":
        raise ProbeFailure("unsupported_scenario", "optimizer %s: measured with torchtitan's AdamW" % scenario.get("optimizer"))
    recompute = layout.get("recompute", "none")
    if scenario.get("grad_checkpointing"):
        recompute = "full"
    if recompute == "selective":
        raise ProbeFailure("unsupported_scenario", "--recompute selective: torchtitan's op-level AC is not measured")
    jc.activation_checkpoint.mode = recompute
    jc.compile.enable = False
    dims = tt["ParallelDims"](dp_replicate=1, dp_shard=dp, cp=1, tp=tp, pp=pp, ep=1, etp=1, world_size=world)
    if hasattr(dims, "build_mesh"):
        dims.build_mesh()
    return jc, dims, micro_batches


def titan_stage_fqns(n_layers, pp):
    """Module names per pipeline stage as `Layout::stage_layers` splits them (an uneven split gives
    the earlier stages one more layer), the embedding first and the norm and output last."""
    base, extra = divmod(n_layers, pp)
    out, first = [], 0
    for i in range(pp):
        n = base + (1 if i < extra else 0)
        names = ["layers.%d" % l for l in range(first, first + n)]
        first += n
        if i == 0:
            names.insert(0, "tok_embeddings")
        if i == pp - 1:
            names += ["norm", "output"]
        out.append(names)
    return out


def name_phases(tracker):
    """Makes `tracker.phase` remember the phase running now: returns a one-item list holding its
    name ("load" until the first phase starts), for the OOM answer."""
    current = ["load"]
    orig_phase = tracker.phase

    @contextlib.contextmanager
    def named_phase(name):
        current[0] = name
        with orig_phase(name):
            yield
    tracker.phase = named_phase
    return current


def answer_oom(doc, measured, tracker, phase_name, e):
    """Fills `doc` as the answer to an out-of-memory error in `phase_name`: the phase records so
    far, and what was allocated and the peak when it happened."""
    allocated = tracker.allocated_now()
    peak = tracker.peak_now() if hasattr(tracker, "peak_now") else None
    records = tracker.finish(failed_phase=phase_name)
    measured["phases"] = records
    if allocated is None:
        for r in records:
            if r["name"] == phase_name:
                allocated, peak = r["allocated_bytes"], r["peak_allocated_bytes"]
    doc["status"] = "oom"
    doc["error"] = {
        "kind": "oom",
        "phase": phase_name,
        "allocated_bytes": allocated,
        "peak_allocated_bytes": peak,
        "message": "does not fit: OOM in phase %s after %.2f GiB"
                   % (phase_name, (peak or allocated or 0) / GIB),
        "detail": str(e).splitlines()[0] if str(e) else type(e).__name__,
    }
    return doc


def make_tracker(torch, device, dev_info, name_collective_inputs=True):
    """The live-bytes tracker of the device (CUDA's allocator and NVML, or the CPU profiler).
    name_collective_inputs=False for code that swaps parameters (`to_empty` on DTensors refuses
    the weak references the profiler's input shapes keep)."""
    if device.type == "cuda":
        torch.cuda.set_device(device)
        torch.cuda.init()
        tracker = CudaTracker(torch, device)
        dev_info["driver"] = tracker.nvml.driver
        return tracker
    return CpuTracker(torch, name_collective_inputs and distributed_world()[1] > 1)


def measure_torchtitan_ranks(torch, args, scenario, doc, notes, device, dev_info):
    """`measure` for `--framework torchtitan`: every rank under torchrun (one process too)."""
    if scenario.get("mode", "train") != "train":
        raise ProbeFailure("unsupported_scenario", "--framework torchtitan measures training steps")
    if scenario.get("lora"):
        raise ProbeFailure("unsupported_scenario", "LoRA with --framework torchtitan: measured with --framework hf")
    rank, world = distributed_world()
    init_distributed(torch, device)
    doc["rank"] = rank
    doc["world_size"] = world
    doc["measured"] = {}
    tracker = make_tracker(torch, device, dev_info, name_collective_inputs=False)
    phase_name = name_phases(tracker)
    try:
        return measure_torchtitan(torch, args, scenario, doc, notes, device, tracker)
    except Exception as e:
        if not isinstance(e, ProbeFailure) and is_oom(torch, e):
            return answer_oom(doc, doc["measured"], tracker, phase_name[0], e)
        with contextlib.suppress(Exception):
            tracker.finish(failed_phase=phase_name[0])
        raise


def measure_torchtitan(torch, args, scenario, doc, notes, device, tracker):
    """One torchtitan training step twice on this rank: the model built and initialized, then
    parallelized as torchtitan's Trainer does (`parallelize_llama`, or `pipeline_llm` with it), the
    step as `Trainer.train_step` runs it (loss parallel under TP, autocast only without
    FSDP/TP/PP, the pipeline schedule's `step`, `clip_grad_norm_`, fused AdamW)."""
    import torch.distributed as dist
    from torch.distributed.fsdp import FSDPModule
    tt = import_torchtitan(device.type)
    doc["environment"]["torchtitan"] = tt["version"]
    try:
        with open(args["config"], "r", encoding="utf-8") as f:
            raw = json.load(f)
    except (OSError, ValueError) as e:
        raise ProbeFailure("bad_config", "%s: cannot read the config as JSON (%s)" % (args["config"], e))
    if not isinstance(raw, dict):
        raise ProbeFailure("bad_config", "%s: expected a JSON object" % args["config"])
    rank, world = distributed_world()
    b, s = int(scenario["batch"]), int(scenario["seq_len"])
    model_args = torchtitan_model_args(tt, raw, s)
    jc, dims, micro_batches = torchtitan_job(tt, scenario, world)
    pp = dims.pp
    if pp > 1:
        if model_args.n_layers < pp:
            raise ProbeFailure("unsupported_scenario", "pp %d is more than the %d layers" % (pp, model_args.n_layers))
        jc.parallelism.module_fqns_per_model_part = titan_stage_fqns(model_args.n_layers, pp)
    measured = doc["measured"]
    measured["counting"] = tracker.counting
    with tracker.phase("load"):
        # built on the meta device and parallelized, as torchtitan's Trainer does, then materialized
        # on this rank and filled locally: torchtitan's `init_weights` on DTensors runs collectives
        # whose gloo outputs outlive the load (the values do not change what a step allocates)
        torch.manual_seed(0)
        with torch.device("meta"):
            model = tt["Transformer"](model_args)
        if pp > 1:
            schedule, parts, first, last = tt["pipeline_llm"](
                model, dims, jc, device, model_args, tt["parallelize"], tt["loss"])
            del model
        else:
            parts = [tt["parallelize"](model, dims, jc)]
            schedule, first, last = None, True, True
        for m in parts:
            m.to_empty(device=device)
            with torch.no_grad():
                if getattr(m, "freqs_cis", None) is not None:
                    with torch.device(device):
                        m.freqs_cis = m._precompute_freqs_cis()
                for p in m.parameters():
                    local_tensor(p).normal_(0.0, 0.02)
        for m in parts:
            for mod in m.modules():
                if isinstance(mod, FSDPModule) and device.type == "cpu":
                    # gloo has no PREMUL_SUM: torchtitan's gradient_divide_factor 1.0 as a SUM
                    # reduce-scatter (the same buffers)
                    mod.set_force_sum_reduction_for_comms(True)
            m.train()
        opts = tt["build_optimizers"](parts, jc.optimizer, dims)
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
    params = [p for m in parts for p in m.parameters()]
    seen = set()
    measured["weights_bytes"] = unique_storage_bytes(params, seen)
    measured["buffers_bytes"] = unique_storage_bytes([t for m in parts for t in m.buffers()], seen)
    measured["total_params"] = sum(local_tensor(p).numel() for p in params)
    measured["trainable_params"] = measured["total_params"]
    measured["trainable_bytes"] = measured["weights_bytes"]
    measured["optimizer_impl"] = "torchtitan AdamW (%s)" % jc.optimizer.implementation
    stage = dims.get_mesh("pp").get_local_rank() if pp > 1 else 0
    doc["model"] = {
        "class": "torchtitan.models.llama3.Transformer",
        "model_type": raw.get("model_type"),
        "head": "causal-lm",
        "attn_implementation": model_args.attn_type,
        "param_dtypes": {str(local_tensor(params[0]).dtype).replace("torch.", ""): measured["total_params"]} if params else {},
        "gradient_checkpointing": jc.activation_checkpoint.mode != "none",
        "pipeline_stage": stage,
    }
    notes.append("torchtitan %s: tp %d (sequence + loss parallel), pp %d%s, FSDP2 over %d rank%s; stage %d of this rank"
                 % (tt["version"], dims.tp, pp, " (1F1B, %d micro-batches)" % micro_batches if pp > 1 else "",
                    dims.dp_shard, "" if dims.dp_shard == 1 else "s", stage))
    loss_parallel = dims.tp_enabled and not jc.parallelism.disable_loss_parallel
    train_context = tt["dist"].get_train_context(loss_parallel)
    amp = tt["dist"].maybe_enable_amp(dims, jc.training.mixed_precision_param, device.type)
    vocab = model_args.vocab_size
    # every micro-batch of the step (the schedule splits them), or the one batch
    ids = prompt_ids(torch, vocab, b * micro_batches, s, device, measured)
    loss_fn = tt["loss"]
    pp_mesh = dims.get_mesh("pp") if pp > 1 else None
    for step in (1, 2):
        sfx = "" if step == 1 else "_2"
        if pp > 1:
            # the schedule runs every micro-batch's forward and backward inside one call
            with tracker.phase("step" + sfx):
                with train_context():
                    losses = [] if last else None
                    target = ids if last else None
                    if first:
                        schedule.step(ids, target=target, losses=losses, return_outputs=False)
                    else:
                        schedule.step(target=target, losses=losses, return_outputs=False)
                del losses
        else:
            with tracker.phase("forward" + sfx):
                with train_context():
                    with amp:
                        pred = parts[0](ids)
                        loss = loss_fn(pred, ids) / (b * s)
                    del pred  # as Trainer.forward_backward_step, before backward
            with tracker.phase("backward" + sfx):
                with train_context():
                    loss.backward()
                del loss
        if step == 1:
            measured["gradients_bytes"] = unique_storage_bytes(p.grad for p in params if p.grad is not None)
        with tracker.phase("optimizer" + sfx):
            tt["dist"].clip_grad_norm_(params, 1.0, foreach=True, pp_mesh=pp_mesh)
            opts.step()
            if step == 1:
                states, steps = 0, 0
                for o in opts.optimizers:
                    st, sp = optimizer_state_bytes(torch, o)
                    states, steps = states + st, steps + sp
                measured["optimizer_bytes"] = states
                measured["optimizer_step_bytes"] = steps
            # Trainer.train_step opens with zero_grad (set to None); done here, nothing runs between
            opts.zero_grad()
    measured["phases"] = tracker.finish()
    return doc


def run_train(torch, model, head, scenario, device, tracker, measured, autocast):
    b, s = int(scenario["batch"]), int(scenario["seq_len"])
    params = [p for p in model.parameters() if p.requires_grad]
    trainable_bytes = sum(p.numel() * p.element_size() for p in params)
    measured["trainable_bytes"] = trainable_bytes
    opt, impl = make_optimizer(torch, scenario.get("optimizer", "adamw"), param_groups_by_mesh(params), device.type)
    measured["optimizer_impl"] = impl
    scaler = None
    if scenario.get("mixed_precision") == "fp16":
        scaler = torch.amp.GradScaler(device.type)
    vocab = int(model.config.get_text_config().vocab_size if hasattr(model.config, "get_text_config")
                else model.config.vocab_size)
    ids = None
    for step in (1, 2):
        sfx = "" if step == 1 else "_2"
        with tracker.phase("forward" + sfx):
            if ids is None:
                ids = prompt_ids(torch, vocab, b, s, device, measured)
                # a class label per sequence (int64), or the tokens themselves for a language model
                labels = (torch.zeros(b, dtype=torch.long, device=device)
                          if head == "sequence-classification" else ids)
            with autocast():
                out = model(**forward_kwargs(model, head, ids, labels))
            loss = out.loss
            del out  # as HF Trainer's compute_loss: only the loss lives on
        with tracker.phase("backward" + sfx):
            if scaler is not None:
                scaler.scale(loss).backward()
            else:
                loss.backward()
            del loss
            if step == 1:
                measured["gradients_bytes"] = unique_storage_bytes(p.grad for p in params)
        with tracker.phase("optimizer" + sfx):
            if scaler is not None:
                scaler.step(opt)
                scaler.update()
            else:
                opt.step()
            if step == 1:
                states, steps = optimizer_state_bytes(torch, opt)
                measured["optimizer_bytes"] = states
                measured["optimizer_step_bytes"] = steps
            opt.zero_grad(set_to_none=True)


def run_infer(torch, model, head, scenario, device, tracker, measured, autocast):
    import inspect
    b, s = int(scenario["batch"]), int(scenario["seq_len"])
    if head == "encoder":
        # an encoder has no cache and generates nothing: inference is one forward pass
        with torch.no_grad():
            with tracker.phase("prefill"):
                ids = prompt_ids(torch, int(model.config.vocab_size), b, s, device, measured)
                with autocast():
                    out = model(input_ids=ids)
                del out
        return
    if head == "seq2seq-lm":
        run_infer_seq2seq(torch, model, b, s, device, tracker, measured, autocast)
        return
    if head != "causal-lm":
        raise ProbeFailure("unsupported_scenario", "inference is measured for causal LMs, seq2seq LMs "
                           "and encoders; this config builds a %s model" % head)
    keep = int(scenario.get("logits_to_keep", 1))
    vocab = int(model.config.vocab_size)
    accepts_keep = "logits_to_keep" in inspect.signature(model.forward).parameters
    kw = {"use_cache": True}
    if accepts_keep:
        kw["logits_to_keep"] = keep
    # recurrent_gemma keeps its recurrent states in its modules and returns no cache: the caller
    # owns the attention layers' DynamicCache, as generate() does, and the states are read off the
    # modules
    own_cache = None
    if model.config.model_type in MODULE_STATE_TYPES:
        import transformers
        own_cache = transformers.DynamicCache(config=model.config)
        kw["cache"] = own_cache
    with torch.no_grad():
        with tracker.phase("prefill"):
            ids = prompt_ids(torch, vocab, b, s, device, measured)
            with autocast():
                out = model(input_ids=ids, **kw)
            # as generate(): an fp32 copy of the last position's logits, greedy choice
            nxt = out.logits[:, -1, :].to(copy=True, dtype=torch.float32).argmax(-1, keepdim=True)
            cache_key, cache = output_cache(out)
            del out
            if own_cache is not None:
                cache_key, cache = "cache", own_cache
            measured["kv_cache_bytes"] = cache_bytes(torch, model, cache) if cache is not None else 0
        if cache is None:
            # a class without a cache (openai-gpt): generate() runs the whole sequence again
            with tracker.phase("decode"):
                ids = torch.cat([ids, nxt], dim=1)
                with autocast():
                    out = model(input_ids=ids, **kw)
                nxt = out.logits[:, -1, :].to(copy=True, dtype=torch.float32).argmax(-1, keepdim=True)
                del out
                measured["kv_cache_bytes_after_decode"] = 0
            if not accepts_keep:
                measured.setdefault("notes", []).append("forward has no logits_to_keep: logits of all positions")
            return
        with tracker.phase("decode"):
            with autocast():
                if own_cache is not None:
                    out = model(input_ids=nxt, **kw)
                else:
                    out = model(input_ids=nxt, **{cache_key: cache}, **kw)
            nxt = out.logits[:, -1, :].to(copy=True, dtype=torch.float32).argmax(-1, keepdim=True)
            cache = own_cache if own_cache is not None else getattr(out, cache_key)
            del out
            measured["kv_cache_bytes_after_decode"] = cache_bytes(torch, model, cache)
    if not accepts_keep:
        measured.setdefault("notes", []).append("forward has no logits_to_keep: logits of all positions")


# model types whose recurrent states live in their modules (`conv1d_state`, `recurrent_states`)
MODULE_STATE_TYPES = ("recurrent_gemma",)


def cache_bytes(torch, model, cache):
    """Bytes of a cache object's tensors, plus the recurrent states a MODULE_STATE_TYPES model keeps
    in its modules."""
    tensors = list(tensors_in(cache, torch))
    if model.config.model_type in MODULE_STATE_TYPES:
        for mod in model.modules():
            for name in ("conv1d_state", "recurrent_states"):
                t = getattr(mod, name, None)
                if isinstance(t, torch.Tensor):
                    tensors.append(t)
    return unique_storage_bytes(tensors)


def prompt_ids(torch, vocab, b, s, device, measured):
    """The same random prompt for every run (seeded), its bytes recorded as `input_bytes`."""
    g = torch.Generator(device="cpu").manual_seed(0)
    ids = torch.randint(0, vocab, (b, s), generator=g).to(device)
    measured["input_bytes"] = ids.untyped_storage().nbytes()
    return ids


def output_cache(out):
    """`(name, cache)` of the cache a model output carries, to pass back under the same name:
    `cache` (transformers 5.24+), `past_key_values` before, `cache_params` (state-space models
    before 5.24); `("past_key_values", None)` when it carries none."""
    for key in ("cache", "past_key_values", "cache_params"):
        found = getattr(out, key, None)
        if found is not None:
            return key, found
    return "past_key_values", None


def run_infer_seq2seq(torch, model, b, s, device, tracker, measured, autocast):
    """As `generate()` runs an encoder–decoder (t5): the encoder once over the prompt (its output kept
    for every step), then the decoder from `decoder_start_token_id`, one token per step, with an
    EncoderDecoderCache (self-attention K/V growing, cross-attention K/V of the prompt made at the
    first step). `prefill` is the encoder pass and the first decoder step; `decode` the second."""
    start_id = model.config.decoder_start_token_id
    if start_id is None:
        start_id = model.config.pad_token_id or 0
    with torch.no_grad():
        with tracker.phase("prefill"):
            ids = prompt_ids(torch, int(model.config.vocab_size), b, s, device, measured)
            with autocast():
                encoder_outputs = model.get_encoder()(input_ids=ids)
                start = torch.full((b, 1), int(start_id), dtype=torch.long, device=device)
                out = model(encoder_outputs=encoder_outputs, decoder_input_ids=start, use_cache=True)
            nxt = out.logits[:, -1, :].to(copy=True, dtype=torch.float32).argmax(-1, keepdim=True)
            cache = output_cache(out)[1]
            del out
            measured["kv_cache_bytes"] = unique_storage_bytes(tensors_in(cache, torch))
        with tracker.phase("decode"):
            with autocast():
                out = model(encoder_outputs=encoder_outputs, decoder_input_ids=nxt,
                            past_key_values=cache, use_cache=True)
            nxt = out.logits[:, -1, :].to(copy=True, dtype=torch.float32).argmax(-1, keepdim=True)
            cache = output_cache(out)[1]
            del out
            measured["kv_cache_bytes_after_decode"] = unique_storage_bytes(tensors_in(cache, torch))


def environment(torch, transformers):
    env = {
        "python": platform.python_version(),
        "python_executable": sys.executable,
        "platform": platform.platform(),
        "torch": torch.__version__,
        "transformers": transformers.__version__ if transformers is not None else None,
        "peft": module_version("peft"),
        "accelerate": module_version("accelerate"),
        "bitsandbytes": module_version("bitsandbytes"),
        "cuda_runtime": torch.version.cuda,
        "torch_threads": torch.get_num_threads(),
    }
    return env


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"


def resolve_device(torch, name):
    if name == "cpu":
        return torch.device("cpu"), {"kind": "cpu", "index": None, "name": cpu_name(),
                                     "total_bytes": None, "driver": None}
    if name == "cuda" or name.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise ProbeFailure("no_cuda", "torch %s sees no CUDA device (torch.cuda.is_available() is "
                               "False%s); use --device cpu for exact CPU numbers"
                               % (torch.__version__, "" if torch.version.cuda else ": this torch is a CPU-only build"))
        dev = torch.device(name)
        index = dev.index if dev.index is not None else int(os.environ.get("LOCAL_RANK", "0"))
        if index >= torch.cuda.device_count():
            raise ProbeFailure("no_cuda", "--device %s: only %d CUDA device(s) visible"
                               % (name, torch.cuda.device_count()))
        dev = torch.device("cuda", index)
        props = torch.cuda.get_device_properties(index)
        return dev, {"kind": "cuda", "index": index, "name": props.name,
                     "total_bytes": int(props.total_memory), "driver": None}
    raise ProbeFailure("unsupported_scenario", "--device: expected cpu, cuda or cuda:N, found %r" % name)


def is_oom(torch, e):
    if isinstance(e, getattr(torch, "OutOfMemoryError", ())) or \
            isinstance(e, getattr(torch.cuda, "OutOfMemoryError", ())):
        return True
    msg = str(e)
    return isinstance(e, (RuntimeError, MemoryError)) and (
        "out of memory" in msg.lower() or "can't allocate memory" in msg.lower()
        or isinstance(e, MemoryError))


def measure(args):
    notes = []
    doc = {"probe_version": PROBE_VERSION, "status": "ok", "notes": notes}
    torch = import_torch()
    doc["environment"] = environment(torch, None)
    transformers = import_transformers()
    doc["environment"] = environment(torch, transformers)
    scenario = json.loads(args["scenario"])
    check_scenario(scenario)
    device, dev_info = resolve_device(torch, args["device"])
    doc["device"] = dev_info
    if (scenario.get("layout") or {}).get("framework") == "torchtitan":
        return measure_torchtitan_ranks(torch, args, scenario, doc, notes, device, dev_info)
    config, model_type = load_config(transformers, args["config"], notes)
    mode = scenario.get("mode", "train")
    mp = scenario.get("mixed_precision", "none")
    if mp != "none" and scenario.get("dtype") != "fp32":
        notes.append("autocast over %s parameters (mixed precision normally keeps fp32 master weights)"
                     % scenario.get("dtype"))

    def autocast():
        if mp == "none":
            return contextlib.nullcontext()
        return torch.autocast(device_type=device.type, dtype=torch_dtype(torch, mp))

    measured = {}
    doc["measured"] = measured
    rank, world = distributed_world()
    if world > 1:
        if mode != "train":
            raise ProbeFailure("unsupported_scenario", "distributed measurement runs training steps")
        init_distributed(torch, device)
        doc["rank"] = rank
        doc["world_size"] = world
        # every rank builds the same random model, as a checkpoint load would give
        torch.manual_seed(0)
    tracker = make_tracker(torch, device, dev_info)
    measured["counting"] = tracker.counting
    phase_name = ["load"]
    try:
        progress("building %s (%s) on %s" % (model_type, mode, device))
        with tracker.phase("load"):
            model, head = build_model(torch, transformers, config, scenario, device, notes)
            lora = scenario.get("lora")
            peft_counts = None
            if lora:
                if mode != "train":
                    raise ProbeFailure("unsupported_scenario", "LoRA is measured in training mode")
                if scenario.get("grad_checkpointing"):
                    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
                model, trainable, total, peft_version = apply_lora(model, lora, notes, head)
                peft_counts = (trainable, total)
            elif mode == "train" and scenario.get("grad_checkpointing"):
                model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            if distributed_world()[1] > 1:
                model = apply_layout(torch, model, scenario, notes)
            if mode == "train":
                model.train()
            else:
                model.eval()
            gc.collect()
            if device.type == "cuda":
                # drop the allocator's cache of random-init temporaries, so that reserved memory
                # from here on is what a checkpoint load would leave
                torch.cuda.empty_cache()
        # the model itself (a DeepSpeed engine wraps it)
        inner = getattr(model, "module", model) if int(scenario.get("zero", 0)) >= 1 else model
        check_positions(torch, inner, scenario, mode)
        params = list(model.parameters())
        seen = set()
        measured["weights_bytes"] = unique_storage_bytes(params, seen)
        measured["buffers_bytes"] = unique_storage_bytes(list(model.buffers()), seen)
        measured["total_params"] = sum(p.numel() for p in params)
        measured["trainable_params"] = sum(p.numel() for p in params if p.requires_grad) if mode == "train" else 0
        if peft_counts is not None:
            measured["trainable_params_peft"] = peft_counts[0]
            measured["total_params_peft"] = peft_counts[1]
        doc["model"] = {
            "class": type(inner).__name__,
            "model_type": model_type,
            "head": head,
            "attn_implementation": getattr(getattr(inner, "config", None), "_attn_implementation", None),
            "param_dtypes": dtype_breakdown(model),
            "gradient_checkpointing": bool(getattr(inner, "is_gradient_checkpointing", False)),
        }
        if mode == "train":
            # the live bytes go through the phases; the name of the failing one is in tracker
            runner = run_train_deepspeed if int(scenario.get("zero", 0)) >= 1 else run_train
        else:
            runner = run_infer
        phase_name = name_phases(tracker)
        runner(torch, model, head, scenario, device, tracker, measured, autocast)
        measured["trainable_bytes"] = measured.get("trainable_bytes", 0)
        measured["phases"] = tracker.finish()
    except Exception as e:
        if not isinstance(e, ProbeFailure) and is_oom(torch, e):
            return answer_oom(doc, measured, tracker, phase_name[0], e)
        with contextlib.suppress(Exception):
            tracker.finish(failed_phase=phase_name[0])
        raise
    return doc


def self_test():
    """Tracker validation on tensors of known size (the Rust test asserts the numbers)."""
    torch = import_torch()
    tracker = CpuTracker(torch)
    with tracker.phase("operands"):
        a = torch.empty(64, 32, dtype=torch.float32)   # 8192 B
        b = torch.empty(32, 16, dtype=torch.float32)   # 2048 B
    with tracker.phase("matmul"):
        c = a @ b                                      # 4096 B
    with tracker.phase("views"):
        v = a[:10]                                     # view: 0 B
        w = a.view(32, 64)                             # view: 0 B
    with tracker.phase("free"):
        del c                                          # -4096 B
        d = a.t().contiguous()                         # +8192 B
        e = torch.empty(1000, dtype=torch.bfloat16)    # +2000 B
        del e                                          # -2000 B
    records = tracker.finish()
    del v, w, d
    # a free on an unwatched thread: block A (1,000 B) is never reported freed, then its address
    # is allocated again; B (500 B) lives across it and is freed where the profiler sees it
    lost_free = [[live, high] for _, live, high in live_bytes_timeline([
        (1, 0xA000, 1000, 1000, None), (2, 0xB000, 500, 1500, None),
        (3, 0xA000, 1000, 2500, None), (4, 0xB000, -500, 2000, None)])]
    # a collective's staging copy (C, 300 B, made at 5 inside the op of 4) no event frees: gone
    # when the run that takes it as an input ends (6), not with an earlier run on another tensor
    # (3); E (100 B), named by an op at 8 whose run ends at 9, has its address allocated again at 10
    collectives = collectives_by_storage({4: {0xB000}, 8: {0xE000}}, {4: {0xC000}},
                                         [(2, 3, {0xA000}), (5, 6, {0xC000}), (8, 9, {0xE000})])
    staging = [[t, live, high] for t, live, high in live_bytes_timeline([
        (1, 0xA000, 1000, 1000, None), (5, 0xC000, 300, 1300, 4),
        (6, 0xE000, 100, 1400, None), (7, 0xD000, 200, 1600, None),
        (10, 0xE000, 50, 1650, None)], collectives)]
    # F (400 B) and G (600 B), each named by a collective whose run ends at 3, kept by the events to
    # the end: F no tensor holds any more (freed at 3), G is still a tensor's
    held_check = [[t, live, high] for t, live, high in live_bytes_timeline(
        [(1, 0xF000, 400, 400, None), (2, 0x6000, 600, 1000, None), (4, 0xA000, 10, 1010, None)],
        collectives_by_storage({2: {0xF000, 0x6000}}, {}, [(2, 3, {0xF000})]), held={0x6000})]
    return {"probe_version": PROBE_VERSION, "status": "ok", "self_test": records,
            "lost_free_check": lost_free, "staging_copy_check": staging,
            "held_check": held_check, "environment": environment(torch, None)}


def parse_args(argv):
    args = {"device": "cpu"}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--self-test":
            args["self_test"] = True
            i += 1
        elif a in ("--config", "--scenario", "--device") and i + 1 < len(argv):
            args[a[2:]] = argv[i + 1]
            i += 2
        else:
            raise ProbeFailure("usage", "unknown probe argument %r" % a)
    if not args.get("self_test") and ("config" not in args or "scenario" not in args):
        raise ProbeFailure("usage", "the probe needs --config PATH and --scenario JSON")
    return args


def main(argv):
    t0 = time.perf_counter()
    try:
        args = parse_args(argv)
        doc = self_test() if args.get("self_test") else measure(args)
    except ProbeFailure as e:
        doc = {"probe_version": PROBE_VERSION, "status": "error",
               "error": {"kind": e.kind, "message": e.message}}
    except Exception as e:  # an unexpected failure: still one JSON answer, with the traceback on stderr
        traceback.print_exc(file=sys.stderr)
        first = str(e).splitlines()[0] if str(e) else ""
        doc = {"probe_version": PROBE_VERSION, "status": "error",
               "error": {"kind": "probe_error", "message": "%s: %s" % (type(e).__name__, first)}}
    doc["wall_seconds"] = round(time.perf_counter() - t0, 3)
    out_dir = os.environ.get("VRAM_PROBE_OUT_DIR")
    if out_dir:
        # under torchrun every rank answers in its own file (stdout lines would interleave)
        with open(os.path.join(out_dir, "rank%d.json" % distributed_world()[0]), "w") as f:
            f.write(json.dumps(doc) + "\n")
    else:
        sys.stdout.write(json.dumps(doc) + "\n")
        sys.stdout.flush()
    with contextlib.suppress(Exception):
        import torch.distributed as dist
        if dist.is_initialized():
            dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
