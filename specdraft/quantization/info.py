"""What a quantized checkpoint is, in the words vLLM's loaders use: ``QuantizationInfo`` and its vocabularies.

``inspect.read_quantization`` fills it from the files; ``checks.check_quantization`` judges it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

QuantizationFormat = Literal["modelopt", "compressed-tensors", "other"]

Scheme = Literal[
    "nvfp4",  # FP4 (E2M1) weights and activations, group 16, FP8-E4M3 block scales (W4A4)
    "nvfp4-a16",  # FP4 weights only, BF16/FP16 activations (W4A16)
    "mxfp4",  # FP4 weights, group 32, E8M0 scales
    "fp8",  # FP8-E4M3 weights and activations, per-tensor scales
    "fp8-per-channel",  # FP8 weights per output channel, activations per token
    "fp8-block",  # FP8 block-scaled weights, weight only
    "fp8-a16",  # FP8 weights only
    "mxfp8",
    "w4a16",  # INT4 weights only (AWQ/GPTQ style)
    "w8a16",  # INT8 weights only
    "w8a8-int8",
    "mixed",  # per-layer schemes (ModelOpt MIXED_PRECISION, several compressed-tensors groups)
    "other",  # something this table does not name; `quant_algo` / `format` carry the raw value
]

KvCacheQuantization = Literal["fp8", "nvfp4"]

# quant_algo values vLLM 0.26.0's ModelOpt loader accepts (modelopt.py QUANT_ALGOS).
VLLM_MODELOPT_QUANT_ALGOS: frozenset[str] = frozenset(
    {"FP8", "FP8_PER_CHANNEL_PER_TOKEN", "FP8_PB_WO", "NVFP4", "W4A16_NVFP4", "MXFP8", "MIXED_PRECISION"}
)
# quant_algo values vLLM 0.26.0 can resolve from a lone hf_quant_config.json
# (model_arch_config_convertor.py _normalize_quantization_config raises on anything else).
VLLM_LEGACY_FILE_QUANT_ALGOS: frozenset[str] = frozenset({"FP8", "FP8_PER_CHANNEL_PER_TOKEN", "FP8_PB_WO", "NVFP4"})

FP4_SCHEMES: frozenset[str] = frozenset({"nvfp4", "nvfp4-a16", "mxfp4"})
FP8_SCHEMES: frozenset[str] = frozenset({"fp8", "fp8-per-channel", "fp8-block", "fp8-a16", "mxfp8"})


class Producer(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    version: str | None = None


class QuantizationInfo(BaseModel):
    """What a quantized checkpoint is, and how vLLM must be told about it."""

    model_config = ConfigDict(frozen=True)

    format: QuantizationFormat
    """Who wrote the metadata: ModelOpt, compressed-tensors (llm-compressor), or ``other`` (AWQ, GPTQ, ...:
    reported with the checkpoint's own ``quant_method``, not analysed further)."""
    vllm_quantization: str
    """The value for ``--quantization`` and the speculative config's ``quantization`` (what vLLM 0.26 resolves to)."""
    accepted_quantization: tuple[str, ...]
    """Every ``--quantization`` value vLLM 0.26 accepts for this checkpoint (``vllm_quantization`` first)."""
    scheme: Scheme
    weight_bits: int | None = None
    activation_bits: int | None = None
    """None when activations stay in BF16/FP16 (weight-only schemes)."""
    group_size: int | None = None
    kv_cache: KvCacheQuantization | None = None
    """KV-cache quantization the checkpoint carries scales for; None when it carries none."""
    exclusions: tuple[str, ...] = ()
    """Modules left unquantized, as the checkpoint lists them (ModelOpt wildcards, compressed-tensors ``re:`` patterns)."""
    producer: Producer | None = None
    quant_algo: str | None = None
    """ModelOpt's raw ``quant_algo`` (upper-cased)."""
    checkpoint_format: str | None = None
    """compressed-tensors ``format`` (e.g. ``nvfp4-pack-quantized``)."""
    sources: tuple[str, ...] = ()
    """The files the metadata was read from, the one vLLM uses first."""
    tensor_dtypes: dict[str, int] = {}
    """Tensor count per safetensors dtype, from the file headers (empty when there are no weights)."""
    quantized_modules: tuple[str, ...] = ()
    """Modules whose weight is stored quantized (packed U8/I32, FP8, INT8), from the safetensors headers."""
    multimodal_parts: tuple[str, ...] = ()
    """``vision`` / ``audio`` when config.json declares those towers."""
    kv_shared_layers: tuple[int, ...] = ()
    """Decoder layers that read another layer's KV cache (Gemma 4 E2B/E4B ``num_kv_shared_layers``)."""
    raw: dict[str, Any] = {}
    """The quantization block vLLM reads, as found."""
    legacy_file: dict[str, Any] | None = None
    """``hf_quant_config.json`` when present."""

    @property
    def is_fp4(self) -> bool:
        return self.scheme in FP4_SCHEMES

    @property
    def is_fp8(self) -> bool:
        return self.scheme in FP8_SCHEMES
