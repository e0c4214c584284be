"""Tiny random Gemma 4 checkpoints that fail and pass in vLLM exactly like the real pair does.

`build_tiny_pair` writes a target shaped like Gemma 4 31B and a draft shaped like Gemma 4 E2B, a
few MB each, sharing one tokenizer. What matters is kept; only sizes shrink:

- target: `Gemma4ForCausalLM` (text-only, like the 31B NVFP4 "turbo"), no KV sharing, sliding
  window 1024, five sliding layers to one full layer, full layers with the larger head size and
  `attention_k_eq_v` (one K/V projection for full layers);
- draft: KV-shared tail layers (the last 5 of 10, as E2B's last 20 of 35), per-layer input
  embeddings, the double-wide MLP in shared layers, sliding window 512, a 4:1 pattern, so every
  shared layer has an earlier non-shared layer of its type to read the cache of;
- like the real BF16 E2B checkpoints, the draft still ships k_proj/v_proj/k_norm for its shared
  layers (vLLM drops them on load).

Random models agree on nothing, so a random draft would never have a token accepted. The draft's
layers therefore write nothing into the residual stream (zero `o_proj`, `down_proj` and
`per_layer_projection`; they still compute, KV-shared attention included): with tied embeddings
it then proposes "repeat the last token", which the random target does about a quarter of the
time. Speculation on this pair accepts tokens, so tests cover the accept path, not only rejection.

Real-shaped checkpoints without weights are `dummy_checkpoint.py`'s; tiny EAGLE-3 / DFlash drafters for this
target are `tiny_speculator.py`'s.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from specdraft.families.gemma4 import (
    ASSISTANT_ARCHITECTURE,
    ASSISTANT_MODEL_TYPE,
    BOS,
    PAD,
    SPECIAL_TOKENS,
    STOP_TOKENS,
    TEXT_MODEL_TYPE,
    TEXT_ONLY_ARCHITECTURE,
    TOOL_RESPONSE_OPEN,
)
from specdraft.testbed.tokenizer import write_tokenizer

TINY_VOCAB_SIZE = 512
MAX_POSITION_EMBEDDINGS = 8192
# Bump when the files written change in a way the shapes below do not show.
_LAYOUT_VERSION = 2
# Draft weights zeroed so the draft proposes "repeat the last token" (see the module docstring).
_SILENCED_DRAFT_OUTPUTS = ("o_proj.weight", "down_proj.weight", "per_layer_projection.weight")

_ROPE = {
    "full_attention": {"partial_rotary_factor": 0.25, "rope_theta": 1000000.0, "rope_type": "proportional"},
    "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"},
}
_COMMON = {
    "architectures": [TEXT_ONLY_ARCHITECTURE],
    "model_type": TEXT_MODEL_TYPE,
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": SPECIAL_TOKENS[BOS],
    "eos_token_id": [SPECIAL_TOKENS[token] for token in STOP_TOKENS],
    "pad_token_id": SPECIAL_TOKENS[PAD],
    "dtype": "bfloat16",
    "enable_moe_block": False,
    "final_logit_softcapping": 30.0,
    "hidden_activation": "gelu_pytorch_tanh",
    "initializer_range": 0.02,
    "max_position_embeddings": MAX_POSITION_EMBEDDINGS,
    "rms_norm_eps": 1e-6,
    "rope_parameters": _ROPE,
    "tie_word_embeddings": True,
    "use_bidirectional_attention": None,
    "use_cache": True,
    "vocab_size": TINY_VOCAB_SIZE,
}

TARGET_CONFIG: dict = {
    **_COMMON,
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 6,
    "layer_types": ["sliding_attention"] * 5 + ["full_attention"],
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "global_head_dim": 128,
    "num_global_key_value_heads": 1,
    "attention_k_eq_v": True,
    "sliding_window": 1024,
    "num_kv_shared_layers": 0,
    "hidden_size_per_layer_input": 0,
    "vocab_size_per_layer_input": TINY_VOCAB_SIZE,
    "use_double_wide_mlp": False,
}

DRAFT_CONFIG: dict = {
    **_COMMON,
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 10,
    "layer_types": (["sliding_attention"] * 4 + ["full_attention"]) * 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 1,
    "head_dim": 64,
    "global_head_dim": 128,
    "num_global_key_value_heads": None,
    "attention_k_eq_v": False,
    "sliding_window": 512,
    "num_kv_shared_layers": 5,
    "hidden_size_per_layer_input": 16,
    "vocab_size_per_layer_input": TINY_VOCAB_SIZE,
    "use_double_wide_mlp": True,
}

# A Gemma 4 MTP assistant for TARGET_CONFIG, shaped like google/gemma-4-31B-it-assistant: its own
# (smaller) width, 3 sliding + 1 full layer that all read the target's KV cache (so their attention
# shapes are the target's), and `backbone_hidden_size` = the target's width.
ASSISTANT_CONFIG: dict = {
    "architectures": [ASSISTANT_ARCHITECTURE],
    "model_type": ASSISTANT_MODEL_TYPE,
    "backbone_hidden_size": TARGET_CONFIG["hidden_size"],
    "num_centroids": 32,
    "centroid_intermediate_top_k": 4,
    "use_ordered_embeddings": False,
    "tie_word_embeddings": True,
    "dtype": "bfloat16",
    "text_config": {
        **{k: v for k, v in _COMMON.items() if k != "architectures"},
        "final_logit_softcapping": None,
        "hidden_size": 128,
        "intermediate_size": 256,
        "num_hidden_layers": 4,
        "layer_types": ["sliding_attention"] * 3 + ["full_attention"],
        "num_kv_shared_layers": 4,
        **{k: TARGET_CONFIG[k] for k in ("num_attention_heads", "num_key_value_heads", "head_dim", "global_head_dim",
                                         "num_global_key_value_heads", "attention_k_eq_v", "sliding_window")},
        "hidden_size_per_layer_input": 0,
        "vocab_size_per_layer_input": 0,
        "use_double_wide_mlp": False,
    },
}

_GENERATION_CONFIG = {
    "bos_token_id": SPECIAL_TOKENS[BOS],
    "eos_token_id": [SPECIAL_TOKENS[token] for token in (*STOP_TOKENS, TOOL_RESPONSE_OPEN)],
    "pad_token_id": SPECIAL_TOKENS[PAD],
}


@dataclass(frozen=True)
class TinyPair:
    """Checkpoint directories of a tiny target and its draft (each with tokenizer files)."""

    target: Path
    draft: Path


def build_tiny_pair(out_dir: str | os.PathLike, seed: int = 0) -> TinyPair:
    """Write (or find already written) a tiny 31B-shaped target and E2B-shaped draft under `out_dir`.

    The pair lands in `out_dir/tiny-gemma4-<key>/{target,draft}`, where the key hashes the shapes,
    the seed and the file layout; a complete pair with the same key is reused without touching
    torch. Weights are seeded random, bf16.
    """
    root = Path(out_dir).expanduser() / f"tiny-gemma4-{_content_key(seed)}"

    def write(staging: Path) -> None:
        _write_checkpoint(staging / "target", TARGET_CONFIG, seed)
        _write_checkpoint(staging / "draft", DRAFT_CONFIG, seed + 1, silence=_SILENCED_DRAFT_OUTPUTS)
        (staging / ".complete").write_text(json.dumps({"seed": seed, "layout": _LAYOUT_VERSION}) + "\n")

    write_once(root, write)
    return TinyPair(target=root / "target", draft=root / "draft")


def write_once(root: Path, write: Callable[[Path], None]) -> None:
    """Have `write` fill a staging directory that becomes `root`, unless `root` is already complete.

    `write` must create `.complete` in the directory it is given; a process that loses the race
    to another writing the same `root` keeps the other's (identical) result.
    """
    if (root / ".complete").is_file():
        return
    root.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{root.name}-", dir=root.parent))
    staging.chmod(0o755)
    try:
        write(staging)
        try:
            staging.rename(root)
        except OSError:
            if not (root / ".complete").is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def write_tiny_assistant(out_dir: str | os.PathLike) -> Path:
    """Write (or find) the config of a tiny MTP assistant for the tiny target, under `out_dir`.

    Only `config.json`: it serves with `--load-format dummy` (random weights), beside the tiny pair's
    target, as `speculative_config={"method": "mtp", "model": <this directory>}`.
    """
    text = json.dumps(ASSISTANT_CONFIG, indent=2) + "\n"
    directory = Path(out_dir).expanduser() / f"tiny-gemma4-assistant-{hashlib.sha256(text.encode()).hexdigest()[:12]}"
    write_config_once(directory, text)
    return directory


def write_config_once(directory: Path, text: str) -> None:
    if not (directory / "config.json").is_file():
        directory.mkdir(parents=True, exist_ok=True)
        staging = directory / ".config.json.tmp"
        staging.write_text(text)
        os.replace(staging, directory / "config.json")


def _content_key(seed: int) -> str:
    spec = {"target": TARGET_CONFIG, "draft": DRAFT_CONFIG, "seed": seed, "layout": _LAYOUT_VERSION}
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]


def _write_checkpoint(directory: Path, config: dict, seed: int, silence: tuple[str, ...] = ()) -> None:
    import torch
    from safetensors.torch import save_file
    from transformers import Gemma4ForCausalLM, Gemma4TextConfig

    torch.manual_seed(seed)
    hf_config = Gemma4TextConfig(**{k: v for k, v in config.items() if k not in ("architectures", "model_type", "dtype")})
    model = Gemma4ForCausalLM(hf_config).to(torch.bfloat16)
    tensors = {name: tensor.contiguous() for name, tensor in model.state_dict().items()}
    for name in tensors:
        if name.endswith(silence):
            tensors[name] = torch.zeros_like(tensors[name])
    if config["tie_word_embeddings"]:
        tensors.pop("lm_head.weight", None)
    tensors.update(_unused_kv_weights_of_shared_layers(config, tensors, seed))
    directory.mkdir(parents=True)
    save_file(tensors, str(directory / "model.safetensors"), metadata={"format": "pt"})
    # config.json is written from our own dict in the flat layout the hub files use, not by
    # save_pretrained, so any transformers release vLLM runs with reads it the same way.
    (directory / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    (directory / "generation_config.json").write_text(json.dumps(_GENERATION_CONFIG, indent=2) + "\n")
    write_tokenizer(directory, config["vocab_size"], config["max_position_embeddings"])


def _unused_kv_weights_of_shared_layers(config: dict, tensors: dict, seed: int) -> dict:
    """k_proj/v_proj/k_norm of KV-shared layers: real E2B checkpoints ship them, models ignore them."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    first_shared = config["num_hidden_layers"] - config["num_kv_shared_layers"]
    extra = {}
    for index in range(first_shared, config["num_hidden_layers"]):
        full = config["layer_types"][index] == "full_attention"
        head_dim = config["global_head_dim"] if full else config["head_dim"]
        kv_heads = config["num_key_value_heads"]
        prefix = f"model.layers.{index}.self_attn."
        shapes = {
            "k_proj.weight": (kv_heads * head_dim, config["hidden_size"]),
            "v_proj.weight": (kv_heads * head_dim, config["hidden_size"]),
            "k_norm.weight": (head_dim,),
        }
        for name, shape in shapes.items():
            if prefix + name not in tensors:
                weight = torch.ones(shape) if name.startswith("k_norm") else torch.randn(shape, generator=generator) * 0.02
                extra[prefix + name] = weight.to(torch.bfloat16)
    return extra


__all__ = ["TinyPair", "build_tiny_pair", "write_tiny_assistant", "TARGET_CONFIG", "DRAFT_CONFIG", "ASSISTANT_CONFIG"]
