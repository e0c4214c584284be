"""Reading a checkpoint without loading its weights.

A checkpoint reference is a local directory or a Hugging Face repo id. A repo id is looked up in
the local Hugging Face cache only (huggingface_hub's cache API; never the network). What is read:
config.json, hf_quant_config.json, generation_config.json, tokenizer_config.json and the JSON
headers of the safetensors files. When the checkpoint is not on this machine the shipped shape
facts stand in, and ``notes`` says so.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from specdraft.errors import UserError
from specdraft.families import LayerKV, ModelFamily, family_of, family_with_layer_formula, rules_for
from specdraft.model_config import read_model_config
from specdraft.paths import expand_user
from specdraft.checkpoints._beside_config import safetensors_bytes, special_token_ids
from specdraft.checkpoints._references import looks_like_path, reference_problem
from specdraft.checkpoints._shape_facts import find_shape_facts
from specdraft.checkpoints._speculator_params import speculator_parameters
from specdraft.quantization import read_quantization

Source = Literal["local", "hf-cache", "shape-facts", "unknown"]

BF16_BYTES = 2
VALIDATED_MODELOPT = "modelopt"
# NVFP4: 4-bit weights plus one FP8 scale per 16 weights.
NVFP4_BYTES_PER_PARAM = 0.5 + 1 / 16


@dataclass(frozen=True)
class Quantization:
    """What a checkpoint says about its quantization (None: unquantized)."""

    method: str | None
    """The value for vLLM's ``--quantization`` (``modelopt``, ``compressed-tensors``)."""
    algo: str | None = None
    kv_cache: str | None = None
    basis: str = ""
    accepted: tuple[str, ...] = ()
    """Every ``--quantization`` value vLLM accepts for it, when known."""
    info: object | None = None
    """specdraft.quantization's full reading (a QuantizationInfo), for its own checks."""


@dataclass(frozen=True)
class Checkpoint:
    """The facts about one checkpoint that planning and checks need."""

    ref: str
    source: Source
    path: Path | None
    config: dict
    notes: tuple[str, ...] = ()
    quantization: Quantization = Quantization(method=None)
    weight_bytes: int | None = None
    weight_bytes_basis: str | None = None
    special_token_ids: dict[str, int] = field(default_factory=dict)
    eos_token_ids: tuple[int, ...] = ()
    language_model_params: int | None = None

    @property
    def text_config(self) -> dict:
        """The language model's config: ``text_config`` of a multimodal config, ``transformer_layer_config`` of a
        speculators-format drafter (vLLM builds the drafter's config from it), else the config itself."""
        return self.config.get("text_config") or self.config.get("transformer_layer_config") or self.config

    @property
    def is_known(self) -> bool:
        return self.source != "unknown"

    @property
    def architectures(self) -> tuple[str, ...]:
        return tuple(self.config.get("architectures") or ())

    @property
    def model_type(self) -> str | None:
        return self.config.get("model_type")

    @property
    def vocab_size(self) -> int | None:
        return self.text_config.get("vocab_size")

    @property
    def max_position_embeddings(self) -> int | None:
        return self.text_config.get("max_position_embeddings")

    @property
    def sliding_window(self) -> int | None:
        return self.text_config.get("sliding_window")

    @property
    def num_kv_shared_layers(self) -> int:
        """Decoder layers that read another layer's KV cache (all of an MTP assistant's)."""
        return len(rules_for(self.config).kv_shared_layers(self.config))

    @property
    def family(self) -> ModelFamily | None:
        """The model family the config belongs to (None: no family specdraft knows)."""
        return family_of(self.config)

    @property
    def is_assistant(self) -> bool:
        """An MTP drafter (Gemma 4's ``gemma4_assistant``): served with ``method: mtp``."""
        return rules_for(self.config).is_assistant(self.config)

    @property
    def is_multimodal(self) -> bool:
        if any(a.endswith("ForConditionalGeneration") for a in self.architectures):
            return True
        return "vision_config" in self.config or "audio_config" in self.config

    @property
    def template_variant(self) -> Literal["e", "large"]:
        """The chat-template variant that serves it (Gemma 4 E-series: ``e``, the rest ``large``)."""
        return rules_for(self.config).template_variant(self.config)

    @property
    def dtype_bytes(self) -> int:
        dtype = self.text_config.get("dtype") or self.config.get("dtype") or self.config.get("torch_dtype")
        return 4 if dtype == "float32" else BF16_BYTES

    def kv_layers(self) -> list[LayerKV]:
        """Per decoder layer: its kind, KV heads, head size and whether it shares another's cache."""
        return rules_for(self.config).kv_layers(self.config)

    def summary(self) -> dict:
        """A JSON-able digest for ``--json`` output."""
        return {
            "ref": self.ref,
            "source": self.source,
            "path": str(self.path) if self.path else None,
            "architectures": list(self.architectures),
            "multimodal": self.is_multimodal if self.is_known else None,
            "vocab_size": self.vocab_size,
            "max_position_embeddings": self.max_position_embeddings,
            "sliding_window": self.sliding_window,
            "num_kv_shared_layers": self.num_kv_shared_layers,  # family name kept: the --json field's name
            "quantization": self.quantization.method,
            "weight_bytes": self.weight_bytes,
            "weight_bytes_basis": self.weight_bytes_basis,
            "notes": list(self.notes),
        }


def _quantization(directory: Path) -> Quantization:
    """The checkpoint's quantization, as specdraft.quantization reads it."""
    try:
        info = read_quantization(directory)
    except UserError as err:
        return Quantization(method=None, basis=f"unreadable quantization metadata: {err.message}")
    if info is None:
        return Quantization(method=None, basis="no quantization metadata")
    # `modelopt` is the spelling the validated DGX Spark command uses; vLLM resolves NVFP4 from it.
    method = VALIDATED_MODELOPT if VALIDATED_MODELOPT in info.accepted_quantization else info.vllm_quantization
    return Quantization(method=method, algo=info.quant_algo or info.scheme, kv_cache=info.kv_cache,
                        basis=" + ".join(info.sources), accepted=tuple(info.accepted_quantization), info=info)


def estimate_weight_bytes(config: dict, params: int, quant_method: str | None) -> int:
    """Weight bytes from a parameter count: BF16, or NVFP4 for everything but the embeddings."""
    if quant_method is None:
        return params * BF16_BYTES
    embedded = rules_for(config).embedding_params(config)
    return int(embedded * BF16_BYTES + max(params - embedded, 0) * NVFP4_BYTES_PER_PARAM)


def _hf_cache_snapshot(repo_id: str, revision: str | None, hf_cache: Path | None) -> Path | None:
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(repo_id, "config.json", revision=revision,
                                   cache_dir=str(hf_cache) if hf_cache else None)
    return Path(found).parent if isinstance(found, str) else None


def _from_directory(ref: str, directory: Path, source: Source) -> Checkpoint:
    if not os.path.lexists(directory / "config.json"):
        return Checkpoint(ref=ref, source="unknown", path=directory, config={},
                          notes=(f"{directory / 'config.json'} is missing",))
    config = read_model_config(directory / "config.json")
    ids, eos = special_token_ids(directory, config)
    quantization = _quantization(directory)
    weight_bytes, basis = safetensors_bytes(directory), "safetensors headers"
    params = language_model_parameters(config)
    if weight_bytes is None and params:
        # no weights on disk (config.json only, or a download in progress): the family's formula, not 0
        weight_bytes = estimate_weight_bytes(config, params, quantization.method)
        basis = (f"computed from config.json: {params:,} language-model parameters by the "
                 + (f"{family_with_layer_formula(config).display_name} formula (towers not counted)"
                    if family_with_layer_formula(config) else "speculators layout (embeddings counted)")
                 + (f" as {quantization.method} NVFP4" if quantization.method else " in BF16"))
    return Checkpoint(
        ref=ref, source=source, path=directory, config=config,
        quantization=quantization,
        weight_bytes=weight_bytes,
        weight_bytes_basis=basis if weight_bytes is not None else None,
        special_token_ids=ids, eos_token_ids=eos,
        language_model_params=params,
    )


def language_model_parameters(config: dict) -> int | None:
    """The language model's parameter count by its family's formula (a speculators drafter's by its layout);
    None when no family knows its layers."""
    family = family_with_layer_formula(config)
    if family is None:
        return speculator_parameters(config)
    try:
        return family.count_parameters(config).total
    except (KeyError, TypeError, IndexError):  # a config missing a shape the formula needs
        return None


def inspect_checkpoint(ref: str, *, revision: str | None = None, hf_cache: Path | None = None) -> Checkpoint:
    """Facts about ``ref`` (local directory or repo id), reading metadata only, never the network.

    ``hf_cache`` is the hub cache directory (default: huggingface_hub's, which honours ``HF_HUB_CACHE``).
    """
    problem = reference_problem(ref)
    if problem is not None:
        raise UserError(problem, hint="pass a local checkpoint directory or a repo id such as google/gemma-4-31B-it")
    local = expand_user(ref, option="checkpoint")
    if local.is_dir():
        return _from_directory(ref, local, "local")
    if looks_like_path(ref):
        what = "is not a directory" if local.exists() else "no such directory"
        return Checkpoint(ref=ref, source="unknown", path=local, config={}, notes=(f"{ref}: {what}",))
    snapshot = _hf_cache_snapshot(ref, revision, hf_cache)
    if snapshot is not None:
        return _from_directory(ref, snapshot, "hf-cache")
    facts = find_shape_facts(ref)
    if facts is None:
        return Checkpoint(ref=ref, source="unknown", path=None, config={},
                          notes=(f"{ref} is not in the Hugging Face cache and no shipped shape facts match it",))
    notes = [f"{ref} is not in the Hugging Face cache; using {facts.basis}"]
    weight_bytes, basis = facts.weight_bytes, facts.weight_bytes_basis
    if weight_bytes is None and facts.language_model_params:
        text_only = not any(a.endswith("ForConditionalGeneration") for a in facts.config.get("architectures", []))
        params = facts.language_model_params if text_only else (facts.hf_params or facts.language_model_params)
        weight_bytes = estimate_weight_bytes(facts.config, params, facts.quant_method)
        basis = f"estimated from {params:,} parameters" + (f" as {facts.quant_method} NVFP4" if facts.quant_method else " in BF16")
    ids, eos = special_token_ids(None, facts.config)
    return Checkpoint(
        ref=ref, source="shape-facts", path=None, config=facts.config, notes=tuple(notes),
        quantization=Quantization(method=facts.quant_method, algo=facts.quant_algo, basis=facts.basis),
        weight_bytes=weight_bytes, weight_bytes_basis=basis,
        special_token_ids=ids, eos_token_ids=eos,
        language_model_params=facts.language_model_params,
    )
