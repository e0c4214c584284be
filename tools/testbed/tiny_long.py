"""A tiny Gemma 4 pair that agrees past both sliding windows: the proof bench for long sequences.

`build_tiny_pair` (tiny.py) silences its draft, so past a few tokens only the reject path runs. The
pair here agrees because the draft *is* the target, re-housed in an E2B-shaped body:

- target: TARGET_CONFIG's shapes (five sliding layers to one full, `attention_k_eq_v` full layers,
  the larger global head size) with a sliding window of `TARGET_WINDOW` tokens, seeded random;
- draft: the target's six layers, weight for weight, then six KV-shared layers of the same types
  (as E2B's tail) whose outputs are zeroed, per-layer input embeddings whose projection is zeroed,
  the double-wide MLP in the shared layers, and a sliding window of `DRAFT_WINDOW` < `TARGET_WINDOW`
  (Gemma 4: 512 against 1024).

With random weights any difference in a sliding layer's context flips most greedy choices (a draft
with window 32 beside a target with 64 agreed on 3% of 110 tokens, transformers float32), so the
sliding layers' attention output is zeroed (their `post_attention_layernorm` weight: the norm would
undo a scaled `o_proj`) and the full-attention layer's is tripled. Every layer still computes and
writes its KV; the output is shaped by the full layer's attention over the whole context, the same in
both models, so the draft agrees with the target token for token (110 of 110 above), and the
long-sequence test checks that the target's greedy output is not a function of the last token alone.
What this pair cannot show: a sliding layer masked with a wrong window (its output is silent); a
block freed or reused too early shows, since the full layer reads every block back to position 0.

No training: the weights are a seeded transformers initialisation (bf16 on disk, as tiny.py) and a
copy, written once under `out_dir` keyed by the shapes, the seed and the layout.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from specdraft.testbed.tiny import (
    _GENERATION_CONFIG,
    ASSISTANT_CONFIG,
    TARGET_CONFIG,
    TinyPair,
    _content_key,
    _unused_kv_weights_of_shared_layers,
    write_once,
)
from specdraft.testbed.tokenizer import write_tokenizer

TARGET_WINDOW = 64
DRAFT_WINDOW = 32
# Bump when the files written change in a way the configs below do not show.
_LAYOUT_VERSION = 2
# The full-attention layers' attention output is scaled up by this (the sliding layers' is zeroed).
_FULL_ATTENTION_GAIN = 3.0

LONG_TARGET_CONFIG: dict = {**TARGET_CONFIG, "sliding_window": TARGET_WINDOW}

_TARGET_LAYERS = LONG_TARGET_CONFIG["num_hidden_layers"]
LONG_DRAFT_CONFIG: dict = {
    **LONG_TARGET_CONFIG,
    "num_hidden_layers": 2 * _TARGET_LAYERS,
    "layer_types": LONG_TARGET_CONFIG["layer_types"] * 2,
    "num_kv_shared_layers": _TARGET_LAYERS,
    "hidden_size_per_layer_input": 16,
    "use_double_wide_mlp": True,
    "sliding_window": DRAFT_WINDOW,
}

# The MTP assistant of the long target: tiny.py's assistant with the long target's window.
LONG_ASSISTANT_CONFIG: dict = {
    **ASSISTANT_CONFIG,
    "text_config": {**ASSISTANT_CONFIG["text_config"], "sliding_window": TARGET_WINDOW},
}

# Zeroed so a draft layer adds nothing to the residual stream (it still computes).
_SILENCED_IN_SHARED_LAYERS = ("self_attn.o_proj.weight", "mlp.down_proj.weight")
_SILENCED_IN_EVERY_LAYER = ("per_layer_projection.weight",)


def build_long_pair(out_dir: str | os.PathLike, seed: int = 0) -> TinyPair:
    """Write (or find already written) the long-window target and its re-housed draft under `out_dir`.

    The pair lands in `out_dir/tiny-gemma4-long-<key>/{target,draft}`; a complete pair with the same
    key is reused without touching torch.
    """
    spec = {"long": [LONG_TARGET_CONFIG, LONG_DRAFT_CONFIG], "layout": _LAYOUT_VERSION}
    root = Path(out_dir).expanduser() / f"tiny-gemma4-long-{_content_key(seed)}-{_key(spec)}"

    def write(staging: Path) -> None:
        target = _initialised(LONG_TARGET_CONFIG, seed)
        target.update(_attention_outputs_set(target))
        draft = _initialised(LONG_DRAFT_CONFIG, seed + 1)
        draft.update(_rehoused(target, draft))
        _write(staging / "target", LONG_TARGET_CONFIG, target)
        draft.update(_unused_kv_weights_of_shared_layers(LONG_DRAFT_CONFIG, draft, seed))
        _write(staging / "draft", LONG_DRAFT_CONFIG, draft)
        (staging / ".complete").write_text(json.dumps({"seed": seed, "layout": _LAYOUT_VERSION}) + "\n")

    write_once(root, write)
    return TinyPair(target=root / "target", draft=root / "draft")


def write_long_assistant(out_dir: str | os.PathLike, seed: int = 2) -> Path:
    """Write (or find) a seeded random MTP assistant for the long target (weights, not `--load-format dummy`:
    the target beside it must load its own). It agrees with the target by chance only: the comparison it
    gives is exactness on the reject path, with the assistant reading the target's KV cache."""
    key = _key({"config": LONG_ASSISTANT_CONFIG, "seed": seed})
    root = Path(out_dir).expanduser() / f"tiny-gemma4-long-assistant-{key}"

    def write(staging: Path) -> None:
        import torch
        from safetensors.torch import save_file
        from transformers import Gemma4AssistantConfig, Gemma4AssistantForCausalLM

        torch.manual_seed(seed)
        config = {k: v for k, v in LONG_ASSISTANT_CONFIG.items() if k not in ("architectures", "model_type", "dtype")}
        model = Gemma4AssistantForCausalLM(Gemma4AssistantConfig(**config)).to(torch.bfloat16)
        tensors = {name: tensor.contiguous() for name, tensor in model.state_dict().items() if name != "lm_head.weight"}
        save_file(tensors, str(staging / "model.safetensors"), metadata={"format": "pt"})
        (staging / "config.json").write_text(json.dumps(LONG_ASSISTANT_CONFIG, indent=2) + "\n")
        (staging / ".complete").write_text("{}\n")

    write_once(root, write)
    return root


def _key(spec: dict) -> str:
    import hashlib

    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:8]


def _initialised(config: dict, seed: int) -> dict:
    import torch
    from transformers import Gemma4ForCausalLM, Gemma4TextConfig

    torch.manual_seed(seed)
    hf_config = Gemma4TextConfig(**{k: v for k, v in config.items()
                                    if k not in ("architectures", "model_type", "dtype")})
    model = Gemma4ForCausalLM(hf_config).to(torch.bfloat16)
    return {name: tensor.contiguous() for name, tensor in model.state_dict().items()}


def _attention_outputs_set(target: dict) -> dict:
    """Zero the sliding layers' attention output and raise the full layers' (see the module docstring)."""
    out = {}
    for index, layer_type in enumerate(LONG_TARGET_CONFIG["layer_types"]):
        name = f"model.layers.{index}.post_attention_layernorm.weight"
        gain = _FULL_ATTENTION_GAIN if layer_type == "full_attention" else 0.0
        out[name] = target[name] * gain
    return out


def _rehoused(target: dict, draft: dict) -> dict:
    """The draft's tensors that become the target's (same name and shape), and those zeroed."""
    import torch

    first_shared = LONG_DRAFT_CONFIG["num_hidden_layers"] - LONG_DRAFT_CONFIG["num_kv_shared_layers"]
    out = {}
    for name, tensor in draft.items():
        if name in target:
            if target[name].shape != tensor.shape:
                raise ValueError(f"draft {name} is {tuple(tensor.shape)}, the target's {tuple(target[name].shape)}")
            out[name] = target[name].clone()
        layer = _layer_index(name)
        shared = layer is not None and layer >= first_shared
        if name.endswith(_SILENCED_IN_EVERY_LAYER) or (shared and name.endswith(_SILENCED_IN_SHARED_LAYERS)):
            out[name] = torch.zeros_like(tensor)
    copied = {name for name in out if name in target}
    missing = {name for name in target if name.startswith("model.layers.") and name not in copied}
    if missing:
        raise ValueError(f"target tensors with no place in the draft: {sorted(missing)[:5]}")
    return out


def _layer_index(name: str) -> int | None:
    parts = name.split(".")
    return int(parts[2]) if parts[:2] == ["model", "layers"] else None


def _write(directory: Path, config: dict, tensors: dict) -> None:
    from safetensors.torch import save_file

    if config["tie_word_embeddings"]:
        tensors = {name: tensor for name, tensor in tensors.items() if name != "lm_head.weight"}
    directory.mkdir(parents=True)
    save_file(tensors, str(directory / "model.safetensors"), metadata={"format": "pt"})
    (directory / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    (directory / "generation_config.json").write_text(json.dumps(_GENERATION_CONFIG, indent=2) + "\n")
    write_tokenizer(directory, config["vocab_size"], config["max_position_embeddings"])


__all__ = ["build_long_pair", "write_long_assistant", "LONG_TARGET_CONFIG", "LONG_DRAFT_CONFIG", "LONG_ASSISTANT_CONFIG",
           "TARGET_WINDOW", "DRAFT_WINDOW"]
