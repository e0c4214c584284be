"""The cost ratio c = (one draft step) / (one target step), measured or estimated.

Measured: from two bench runs at the same workload, one against the draft served alone and one
against the target served alone; a decode step of a non-speculative server emits one token per
sequence, so its step time is the mean inter-token latency (``step_ms_from``).

Estimated: on a bandwidth-bound device (decode at small batch), a step costs about the bytes it reads,
so ``c ~ bytes_per_token(draft) / bytes_per_token(target)``. Bytes read per decoded token are the weights
every token touches (all language-model weights except lookup-only tables: Gemma 4's per-layer embedding
table, and MoE experts that the router did not pick) plus the KV cache read at the given context length.
This is a lower bound for small drafts on fast GPUs: on an H200, an E2B-shaped draft stepped in 3.2 ms
against 17.8 ms for a 31B-shaped target (c = 0.18) where bytes predict ~0.07, because a small model
does not saturate memory bandwidth. Prefer a measured c.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from specdraft.checkpoints import inspect_checkpoint
from specdraft.errors import UserError
from specdraft.families import FAMILIES, family_with_layer_formula, rules_for
from specdraft.model_config import read_model_config

BYTES_PER_PARAM: dict[str, float] = {
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    # NVFP4: 4-bit values plus one FP8 scale per group of 16 (the per-tensor scale is negligible).
    "nvfp4": 0.5 + 1.0 / 16,
}


@dataclass(frozen=True)
class DecodeFootprint:
    """What one decoded token reads from memory, for one model."""

    name: str
    total_params: int
    """Language-model parameters (what transformers instantiates for the text stack)."""
    active_params: int
    """Parameters read per decoded token: total minus lookup-only tables and unpicked experts."""
    weight_bytes: float
    kv_bytes: float
    """KV cache bytes read per decoded token at the given context length."""
    basis: str = ""
    """Where the shapes and the weight dtype came from, in words."""

    @property
    def bytes_per_token(self) -> float:
        return self.weight_bytes + self.kv_bytes


def load_text_config(path: Path) -> dict:
    """The Gemma 4 text config from a config.json (multimodal ``text_config`` or a text-only config)."""
    path = Path(path)
    if not os.path.lexists(path):
        raise UserError(f"model config {path} does not exist", hint="give the path of a config.json")
    return _transformer_text(read_model_config(path), path)


def _transformer_text(config: dict, path: Path) -> dict:
    """The language model's config of ``config``, refused unless it has layers and a width."""
    text = config.get("text_config", config)
    if "num_hidden_layers" not in text or "hidden_size" not in text:
        raise UserError(f"{path} is not a transformer config.json (no num_hidden_layers/hidden_size)")
    return text


def _kv_bytes(text_config: Mapping, context_tokens: int, kv_bytes_per_element: float) -> float:
    """KV cache bytes one token reads: every layer that owns a cache, over its history (window-capped)."""
    layers = rules_for(text_config).kv_layers(text_config)
    window = text_config.get("sliding_window") or context_tokens
    total = 0.0
    for layer in layers:
        if not layer.shared:
            tokens = context_tokens if layer.kind == "full" else min(context_tokens, window)
            total += 2 * layer.kv_heads * layer.head_dim * kv_bytes_per_element * tokens  # K and V both cached
    return total


def decode_footprint(
    text_config: Mapping,
    *,
    bytes_per_param: float = 2.0,
    embedding_bytes_per_param: float | None = None,
    context_tokens: int = 2048,
    kv_bytes_per_element: float = 2.0,
    name: str = "model",
) -> DecodeFootprint:
    """Bytes one decoded token reads from a Gemma 4 text stack (batch 1, ``context_tokens`` of history).

    ``embedding_bytes_per_param`` prices the token embedding (tied: also the LM head, read whole every
    token); quantized checkpoints usually keep it in BF16. Defaults to ``bytes_per_param``.
    """
    family = family_with_layer_formula(text_config)
    if family is None:
        raise UserError(
            f"{name}: the bytes-per-token estimate knows "
            + ", ".join(f"{f.display_name} text stacks" for f in FAMILIES)
            + f", not model_type {text_config.get('model_type')!r}",
            hint="measure c instead: tune --step-times DRAFT_ONLY.json TARGET_ONLY.json",
        )
    layers = family.kv_layers(text_config)
    if layers and all(layer.shared for layer in layers):
        raise UserError(
            f"{name} shares every layer's KV cache (an MTP assistant); its cost is not a standalone decode",
            hint="measure c with bench instead, or give --cost-ratio",
        )
    params = family.count_parameters(text_config)
    embedding_bytes = params.embedding * (
        bytes_per_param if embedding_bytes_per_param is None else embedding_bytes_per_param)
    return DecodeFootprint(
        name=name,
        total_params=params.total,
        active_params=params.active,
        weight_bytes=embedding_bytes + (params.active - params.embedding) * bytes_per_param,
        kv_bytes=_kv_bytes(text_config, context_tokens, kv_bytes_per_element),
    )


def estimate_cost_ratio(draft: DecodeFootprint, target: DecodeFootprint) -> float:
    """c estimated as bytes read per token, draft over target (bandwidth-bound lower bound)."""
    return draft.bytes_per_token / target.bytes_per_token


def bytes_per_param(dtype: str) -> float:
    """Bytes per weight for a dtype name (bf16, fp16, fp8, nvfp4) or a plain number."""
    key = dtype.strip().lower()
    if key in BYTES_PER_PARAM:
        return BYTES_PER_PARAM[key]
    try:
        value = float(key)
    except ValueError:
        raise UserError(
            f"unknown weight dtype {dtype!r}", hint=f"use one of {', '.join(BYTES_PER_PARAM)} or bytes per weight"
        ) from None
    if not (math.isfinite(value) and value > 0):
        raise UserError(f"bytes per weight must be a finite number > 0, got {dtype}")
    return value


def cost_ratio_from_step_times(draft_step_ms: float, target_step_ms: float) -> float:
    """c measured: draft decode step time over target decode step time."""
    if not (draft_step_ms > 0 and target_step_ms > 0):
        raise UserError(f"step times must be > 0 ms (draft {draft_step_ms}, target {target_step_ms})")
    return draft_step_ms / target_step_ms


def _dtype_of(quant_method: str | None, quant_algo: str | None) -> str:
    """The weight dtype a checkpoint's quantization metadata implies (bf16 when it has none)."""
    algo = (quant_algo or "").upper()
    if "FP4" in algo:
        return "nvfp4"
    if "FP8" in algo:
        return "fp8"
    # Shipped facts name a method without an algorithm only for NVFP4 repackagings (specdraft.planning
    # prices them the same way).
    return "nvfp4" if quant_method else "bf16"


def footprint_of(ref: str, *, dtype: str = "auto", context_tokens: int = 2048,
                 kv_bytes_per_element: float = 2.0) -> DecodeFootprint:
    """The decode footprint of a checkpoint: a config.json file, a local checkpoint directory, or a repo id
    (looked up in the Hugging Face cache, then in specdraft's shipped shape facts; never the network).

    ``dtype="auto"`` takes the weight dtype from the checkpoint's quantization metadata; quantized
    weights keep the embedding in BF16, as NVFP4 checkpoints do.
    """
    path = Path(ref).expanduser()
    if os.path.lexists(path) and not path.is_dir():
        if path.suffix != ".json":
            raise UserError(f"{ref} is not a config.json", hint="give a config.json, a checkpoint directory or a repo id")
        config = read_model_config(path)
        _transformer_text(config, path)  # refuses files that are not transformer configs
        quant = config.get("quantization_config") or {}
        method, algo, basis = quant.get("quant_method"), quant.get("quant_algo"), str(path)
    else:
        checkpoint = inspect_checkpoint(ref)
        if not checkpoint.is_known:
            raise UserError(f"cannot find the shapes of {ref}: {'; '.join(checkpoint.notes)}",
                            hint="give a config.json, a local checkpoint directory, or a known repo id "
                                 "such as google/gemma-4-31B-it")
        config, method, algo = checkpoint.config, checkpoint.quantization.method, checkpoint.quantization.algo
        basis = "; ".join(checkpoint.notes) or f"{ref} ({checkpoint.source})"
    chosen = _dtype_of(method, algo) if dtype == "auto" else dtype
    weights = bytes_per_param(chosen)
    footprint = decode_footprint(
        config.get("text_config") or config, bytes_per_param=weights,
        embedding_bytes_per_param=BYTES_PER_PARAM["bf16"] if chosen not in ("bf16", "fp16") and dtype == "auto" else None,
        context_tokens=context_tokens, kv_bytes_per_element=kv_bytes_per_element, name=ref)
    embedding_note = ", embedding bf16" if dtype == "auto" and chosen not in ("bf16", "fp16") else ""
    return DecodeFootprint(footprint.name, footprint.total_params, footprint.active_params, footprint.weight_bytes,
                           footprint.kv_bytes,
                           basis=f"{basis}; weights {chosen}{embedding_note}{_routed_note(config, footprint)}")


def _routed_note(config: Mapping, footprint: DecodeFootprint) -> str:
    """For a mixture-of-experts stack: that only its active parameters are priced, and how many they are."""
    routed = rules_for(config).routed_experts(config)
    if routed is None:
        return ""
    picked, experts = routed
    return (f"; mixture of experts: {footprint.active_params / 1e9:.2f}B of {footprint.total_params / 1e9:.2f}B "
            f"parameters read per token (the router picks {picked} of {experts} "
            "experts), so the cost ratio uses its active parameters")
