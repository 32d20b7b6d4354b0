#!/usr/bin/env python3
"""Writes the tensor inventory that `transformers` builds from a `config.json`, as a test fixture.

    PY=$(bash scripts/python-env.sh | tail -1)
    $PY scripts/arch-header.py crates/vram_core/presets/ORG__MODEL.json \
        > crates/vram_core/tests/headers/ORG__MODEL.json
    $PY scripts/arch-header.py CONFIG --remote DIR   # remote-code models: DIR holds the repo's
                                                     # configuration_*.py and modeling_*.py

EXAONE 3.x is native only from transformers 5.2x (built as LlamaForCausalLM): its fixture was
written with transformers 5.25 put first on the path (PYTHONPATH=DIR holding transformers 5.25 and
huggingface_hub 2.x, installed with `pip install --target DIR --no-deps`).

The model class named by the config's `architectures[0]` (or `auto_map` for remote code) is built
on the meta device, so no weight is allocated and a 400B model takes a second. The fixture lists
every tensor `save_pretrained` would write: parameters once each (a tied `lm_head` is dropped, as
`save_pretrained` drops it) and persistent buffers, with their shapes, in module order. Names are
those of the module tree of the installed `transformers` (5.x fuses the experts of MoE layers into
`experts.gate_up_proj` / `experts.down_proj`; checkpoints on the Hub may still hold one tensor per
expert, which holds the same count).

`crates/vram_core/tests/arch_headers.rs` compares the estimator's own inventory for the same
config with this one, name by name and shape by shape, and counts a safetensors header built
from it.
"""

import argparse
import importlib.util
import json
import os
import shutil
import sys
import tempfile


def load_remote(remote_dir, raw):
    """Imports a remote-code repo's configuration and modeling modules as one package."""
    auto_map = raw.get("auto_map", {})
    pkg = "vram_remote_model"
    spec = importlib.util.spec_from_file_location(
        pkg, os.path.join(remote_dir, "__init__.py"), submodule_search_locations=[remote_dir]
    )
    if not os.path.exists(os.path.join(remote_dir, "__init__.py")):
        open(os.path.join(remote_dir, "__init__.py"), "w").close()
    module = importlib.util.module_from_spec(spec)
    sys.modules[pkg] = module
    spec.loader.exec_module(module)

    def resolve(ref):
        mod, cls = ref.split(".")
        m = importlib.import_module(f"{pkg}.{mod}")
        return getattr(m, cls)

    config_cls = resolve(auto_map["AutoConfig"])
    model_ref = auto_map.get("AutoModelForCausalLM") or auto_map.get("AutoModel")
    return config_cls, resolve(model_ref)


def coerce(raw, field, to):
    """Converts `field` (anywhere in the nested config) to the type named `to`; True if found."""
    found = False
    for key, value in list(raw.items()):
        if key == field and not isinstance(value, dict):
            raw[key] = {"bool": bool, "float": float, "int": int}[to](value)
            found = True
        elif isinstance(value, dict):
            found = coerce(value, field, to) or found
    return found


def drop(raw, field):
    """Removes `field` from the nested dicts of the config (not the top level); True if found."""
    found = False
    for value in raw.values():
        if isinstance(value, dict):
            if field in value:
                del value[field]
                found = True
            found = drop(value, field) or found
    return found


def load_config(transformers, raw):
    """AutoConfig of the raw config; values that transformers' strict dataclass validation refuses
    although the published file has them (llama4's `attn_temperature_tuning: 4`, dbrx's
    `moe_normalize_expert_weights: 1`) are coerced to the declared type, and nested keys it no
    longer accepts are dropped; each is listed in the fixture's source."""
    import re

    raw = json.loads(json.dumps(raw))
    coerced = []
    for _ in range(8):
        tmp = tempfile.mkdtemp()
        try:
            with open(os.path.join(tmp, "config.json"), "w") as fh:
                json.dump(raw, fh)
            return transformers.AutoConfig.from_pretrained(tmp), coerced
        except Exception as err:  # huggingface_hub's StrictDataclassFieldValidationError
            unknown = re.search(r"Found unknown kwargs=\{'(\w+)'", str(err))
            if unknown and drop(raw, unknown.group(1)):
                # dbrx's published ffn_config has `uniform_expert_assignment`, which
                # DbrxFFNConfig no longer accepts; it sizes nothing
                coerced.append(f"{unknown.group(1)} dropped")
                continue
            m = re.search(r"field '(\w+)'.*?expected (bool|float|int)", str(err), re.S)
            if not m or not coerce(raw, m.group(1), m.group(2)):
                raise
            coerced.append(f"{m.group(1)} -> {m.group(2)}")
        finally:
            shutil.rmtree(tmp)
    raise RuntimeError("config does not validate")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("--remote", help="folder with the repo's configuration_*.py and modeling_*.py")
    ap.add_argument("--class", dest="cls", help="model class (default: architectures[0])")
    args = ap.parse_args()

    import torch
    import transformers

    with open(args.config) as fh:
        raw = json.load(fh)

    if args.remote:
        config_cls, model_cls = load_remote(os.path.abspath(args.remote), raw)
        kwargs = {k: v for k, v in raw.items() if k not in ("auto_map", "architectures")}
        config = config_cls(**kwargs)
        source = f"remote code {model_cls.__name__} ({os.path.basename(args.remote)})"
    else:
        config, coerced = load_config(transformers, raw)
        name = args.cls or (raw.get("architectures") or [None])[0]
        try:
            model_cls = getattr(transformers, name)
        except (AttributeError, TypeError):
            # a remote-code class name (mpt's "MPTForCausalLM"): the native class the auto map picks
            auto = transformers.AutoModelForCausalLM
            model_cls = auto._model_mapping[type(config)]
        source = f"transformers {transformers.__version__} {model_cls.__name__}"
        if coerced:
            source += f" (config values its strict validation refuses were coerced: {', '.join(coerced)})"

    with torch.device("meta"):
        if hasattr(model_cls, "_from_config"):
            model = model_cls._from_config(config)
        else:
            model = model_cls(config)

    state_keys = set(model.state_dict().keys())
    tensors = []
    params = 0
    for name, p in model.named_parameters():  # deduplicated: a tied head appears once
        tensors.append([name, list(p.shape)])
        params += p.numel()
    buffer_elems = 0
    for name, b in model.named_buffers():
        if name in state_keys:  # persistent buffers only: those save_pretrained writes
            tensors.append([name, list(b.shape), "buffer"])
            buffer_elems += b.numel()

    doc = {
        "config": os.path.basename(args.config),
        "source": f"{source} on the meta device (scripts/arch-header.py)",
        "parameters": params,
        "buffer_elements": buffer_elems,
        "tensors": tensors,
    }
    out = json.dumps(doc, separators=(",", ":"))
    # one tensor per line keeps the fixture diffable
    out = out.replace("],[", "],\n[")
    print(out)


if __name__ == "__main__":
    main()
