"""Read a checkpoint's quantization metadata the way vLLM does, from files alone (no torch, no vLLM).

Two producers matter for Gemma 4 drafts:

- **NVIDIA ModelOpt** writes ``config.json`` ``quantization_config`` (``quant_method: modelopt``,
  ``quant_algo``, ``config_groups``, ``ignore``, ``kv_cache_scheme``, ``producer``) and, in releases up
  to 0.29 only, a separate ``hf_quant_config.json`` (``quantization.quant_algo``, ``group_size``,
  ``kv_cache_quant_algo``, ``exclude_modules``). Current releases write both; vLLM reads
  ``config.json`` first and the separate file only when ``config.json`` has no quantization block
  (vllm 0.26.0 ``vllm/transformers_utils/config.py``).
- **llm-compressor** writes ``config.json`` ``quantization_config`` with
  ``quant_method: compressed-tensors``, a ``format`` and per-group ``weights`` / ``input_activations``.

The ``--quantization`` value follows vLLM 0.26.0's own resolution
(``vllm/config/model.py`` ``_verify_quantization`` and the ``override_quantization_method`` class
methods in ``vllm/model_executor/layers/quantization/modelopt.py``): a ModelOpt ``quant_algo``
containing ``FP4`` resolves to ``modelopt_fp4``, ``MXFP8`` to ``modelopt_mxfp8``,
``MIXED_PRECISION`` to ``modelopt_mixed``, and the FP8 family stays ``modelopt``. Because an
override replaces whatever the user passed, ``--quantization modelopt`` on an NVFP4 checkpoint is
accepted and silently becomes ``modelopt_fp4``; a ``compressed-tensors`` checkpoint has no override,
so ``--quantization modelopt`` on it fails with "Quantization method specified in the model config
(compressed-tensors) does not match the quantization method specified in the `quantization`
argument (modelopt)".
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from specdraft.errors import UserError
from specdraft.families import rules_for
from specdraft.model_config import read_json_document
from specdraft.quantization.info import FP4_SCHEMES, KvCacheQuantization, Producer, QuantizationInfo, Scheme
from specdraft.safetensors_index import TensorEntry, dtype_counts, read_tensor_index

# ModelOpt quant_algo -> scheme. Names from modelopt 0.47 torch/export/convert_hf_config.py.
_MODELOPT_SCHEMES: dict[str, Scheme] = {
    "NVFP4": "nvfp4",
    "W4A16_NVFP4": "nvfp4-a16",
    "FP8": "fp8",
    "FP8_PER_CHANNEL_PER_TOKEN": "fp8-per-channel",
    "FP8_PB_WO": "fp8-block",
    "MXFP8": "mxfp8",
    "W4A16_AWQ": "w4a16",
    "W8A16": "w8a16",
    "W8A8_SQ_PER_CHANNEL": "w8a8-int8",
    "MIXED_PRECISION": "mixed",
}

_QUANTIZED_DTYPES = frozenset({"U8", "I8", "I32", "F8_E4M3", "F8_E5M2", "F4"})


def read_quantization(checkpoint_dir: Path) -> QuantizationInfo | None:
    """The quantization of the checkpoint in ``checkpoint_dir``; None when it is not quantized.

    Reads ``config.json`` (top level, then ``text_config``, as vLLM does), ``hf_quant_config.json``
    and the safetensors headers. Raises ``UserError`` when the directory or ``config.json`` is
    missing or unreadable, or when a quantization block names a method this reader does not know.
    """
    checkpoint_dir = Path(checkpoint_dir)
    config = read_json_object(checkpoint_dir / "config.json", required=True)
    legacy = read_json_object(checkpoint_dir / "hf_quant_config.json", required=False)
    found = _quantization_block(checkpoint_dir, config, legacy)
    if found is None:
        return None
    block, sources = found
    try:
        index = read_tensor_index(checkpoint_dir)
    except UserError:  # e.g. an LFS pointer instead of weights: the metadata still stands on its own
        index = {}
    common = {
        "sources": sources,
        "tensor_dtypes": dtype_counts(index),
        "quantized_modules": quantized_modules(index),
        "multimodal_parts": tuple(part for part in ("vision", "audio") if config.get(f"{part}_config")),
        "kv_shared_layers": rules_for(config).kv_shared_layers(config),
        "raw": block,
        "legacy_file": legacy,
    }
    method = str(block.get("quant_method", "")).lower()
    if method.startswith("modelopt") or _is_modelopt_file(block):
        return _read_modelopt(block, **common)
    if method == "compressed-tensors":
        return _read_compressed_tensors(block, **common)
    if not method:
        raise UserError(
            f"{checkpoint_dir / sources[0]}: the quantization block names no quant_method",
            hint="re-export the checkpoint with its quantization tool",
        )
    bits = block.get("bits") or block.get("w_bit")
    return QuantizationInfo(
        format="other", vllm_quantization=method, accepted_quantization=(method,),
        scheme="w4a16" if bits == 4 else "w8a16" if bits == 8 else "other",
        weight_bits=bits, group_size=block.get("group_size") or block.get("q_group_size"),
        exclusions=tuple(block.get("modules_to_not_convert") or ()), **common,
    )


def _quantization_block(checkpoint_dir: Path, config: dict[str, Any],
                        legacy: dict[str, Any] | None) -> tuple[dict[str, Any], tuple[str, ...]] | None:
    """The quantization block vLLM reads and the files it comes from (the one read first first); None when there
    is none. config.json's block wins (top level, then ``text_config``); hf_quant_config.json stands in without it."""
    block = config.get("quantization_config") or config.get("compression_config")
    if block is None and isinstance(config.get("text_config"), dict):
        block = config["text_config"].get("quantization_config")
    sources: tuple[str, ...]
    if block is not None:
        sources = ("config.json", "hf_quant_config.json") if legacy is not None else ("config.json",)
    elif legacy is not None:
        block, sources = legacy, ("hf_quant_config.json",)
    else:
        return None
    if not isinstance(block, dict):
        raise UserError(f"{checkpoint_dir / sources[0]}: quantization_config is not a JSON object")
    return block, sources


def quantized_modules(index: dict[str, TensorEntry]) -> tuple[str, ...]:
    """Modules stored quantized: a ``weight`` in a quantized dtype, or a compressed-tensors ``weight_packed``."""
    modules = set()
    for name, entry in index.items():
        module, _, leaf = name.rpartition(".")
        if leaf == "weight_packed" or (leaf == "weight" and entry.dtype in _QUANTIZED_DTYPES):
            modules.add(module)
    return tuple(sorted(modules))


def _is_modelopt_file(block: dict[str, Any]) -> bool:
    producer = block.get("producer")
    return isinstance(block.get("quantization"), dict) and (
        isinstance(producer, dict) and producer.get("name") == "modelopt"
    )


def _read_modelopt(block: dict[str, Any], **common: Any) -> QuantizationInfo:
    if isinstance(block.get("quantization"), dict):  # hf_quant_config.json layout
        details = block["quantization"]
        algo = str(details.get("quant_algo") or "").upper()
        kv_cache = _kv_from_algo(details.get("kv_cache_quant_algo"))
        exclusions = details.get("exclude_modules") or []
        group_size = details.get("group_size")
    else:  # config.json layout
        algo = str(block.get("quant_algo") or "").upper()
        kv_cache = _kv_from_scheme(block.get("kv_cache_scheme"))
        exclusions = block.get("ignore") or []
        group_size = block.get("group_size") or _first_group_size(block.get("config_groups"))
    if not algo:
        raise UserError("ModelOpt quantization metadata has no quant_algo", hint="re-export the checkpoint with ModelOpt")
    scheme = _MODELOPT_SCHEMES.get(algo, "other")
    if scheme in FP4_SCHEMES and group_size is None:
        group_size = 16  # vLLM's default for ModelOpt NVFP4
    vllm_quantization = _modelopt_vllm_method(algo)
    accepted = (vllm_quantization,) if vllm_quantization == "modelopt" else (vllm_quantization, "modelopt")
    weight_bits, activation_bits = _modelopt_bits(scheme)
    return QuantizationInfo(
        format="modelopt",
        vllm_quantization=vllm_quantization,
        accepted_quantization=accepted,
        scheme=scheme,
        weight_bits=weight_bits,
        activation_bits=activation_bits,
        group_size=int(group_size) if group_size is not None else None,
        kv_cache=kv_cache,
        exclusions=tuple(exclusions),
        producer=_producer(block.get("producer")),
        quant_algo=algo,
        **common,
    )


def _modelopt_vllm_method(algo: str) -> str:
    if "FP4" in algo:
        return "modelopt_fp4"
    if "MXFP8" in algo:
        return "modelopt_mxfp8"
    if algo == "MIXED_PRECISION":
        return "modelopt_mixed"
    return "modelopt"


def _modelopt_bits(scheme: str) -> tuple[int | None, int | None]:
    return {
        "nvfp4": (4, 4),
        "nvfp4-a16": (4, None),
        "fp8": (8, 8),
        "fp8-per-channel": (8, 8),
        "fp8-block": (8, None),
        "mxfp8": (8, 8),
        "w4a16": (4, None),
        "w8a16": (8, None),
        "w8a8-int8": (8, 8),
    }.get(scheme, (None, None))


def _read_compressed_tensors(block: dict[str, Any], **common: Any) -> QuantizationInfo:
    groups = [g for g in (block.get("config_groups") or {}).values() if isinstance(g, dict)]
    schemes = {_compressed_tensors_scheme(g.get("weights"), g.get("input_activations")) for g in groups}
    scheme: Scheme = schemes.pop() if len(schemes) == 1 else ("mixed" if schemes else "other")
    first = groups[0] if groups else {}
    weights = first.get("weights") or {}
    activations = first.get("input_activations") or {}
    producer = _producer(block.get("producer"))
    if producer is None and block.get("version"):
        producer = Producer(name="compressed-tensors", version=str(block["version"]))
    return QuantizationInfo(
        format="compressed-tensors",
        vllm_quantization="compressed-tensors",
        accepted_quantization=("compressed-tensors",),
        scheme=scheme,
        weight_bits=weights.get("num_bits"),
        activation_bits=activations.get("num_bits"),
        group_size=weights.get("group_size"),
        kv_cache=_kv_from_scheme(block.get("kv_cache_scheme")),
        exclusions=tuple(block.get("ignore") or ()),
        producer=producer,
        checkpoint_format=block.get("format"),
        **common,
    )


def _compressed_tensors_scheme(weights: dict | None, activations: dict | None) -> Scheme:
    if not isinstance(weights, dict):
        return "other"
    bits, kind = weights.get("num_bits"), weights.get("type", "int")
    act_bits = activations.get("num_bits") if isinstance(activations, dict) else None
    act_kind = activations.get("type", "int") if isinstance(activations, dict) else None
    if bits == 4 and kind == "float":
        if weights.get("group_size") == 32:
            return "mxfp4"
        if act_bits is None:
            return "nvfp4-a16"
        return "nvfp4" if (act_bits, act_kind) == (4, "float") else "other"
    if bits == 8 and kind == "float":
        if act_bits is None:
            return "fp8-a16"
        if weights.get("strategy") == "block":
            return "fp8-block"
        return "fp8-per-channel" if weights.get("strategy") == "channel" else "fp8"
    if bits == 4 and kind == "int" and act_bits is None:
        return "w4a16"
    if bits == 8 and kind == "int":
        return "w8a16" if act_bits is None else "w8a8-int8"
    return "other"


def _first_group_size(config_groups: Any) -> int | None:
    if not isinstance(config_groups, dict):
        return None
    for group in config_groups.values():
        size = ((group or {}).get("weights") or {}).get("group_size")
        if size is not None:
            return size
    return None


def _kv_from_algo(value: Any) -> KvCacheQuantization | None:
    if not value:
        return None
    value = str(value).upper()
    return "fp8" if value == "FP8" else "nvfp4" if value == "NVFP4" else None


def _kv_from_scheme(value: Any) -> KvCacheQuantization | None:
    if isinstance(value, str):  # ModelOpt writes the bare algo name for anything but FP8
        return _kv_from_algo(value)
    if not isinstance(value, dict) or value.get("type") != "float":
        return None
    return {8: "fp8", 4: "nvfp4"}.get(value.get("num_bits"))


def _producer(value: Any) -> Producer | None:
    if isinstance(value, dict) and value.get("name"):
        version = value.get("version")
        return Producer(name=str(value["name"]), version=str(version) if version is not None else None)
    return None


def read_json_object(path: Path, *, required: bool = True) -> dict[str, Any] | None:
    """The JSON object in ``path``; None when absent and not ``required``; ``UserError`` for anything else."""
    if not os.path.lexists(path):
        if not required:
            return None
        if not path.parent.is_dir():
            raise UserError(f"{path.parent} is not a directory", hint="pass the checkpoint directory (the one holding config.json)")
        raise UserError(f"{path.parent} has no {path.name}", hint="pass a Hugging Face checkpoint directory")
    data = read_json_document(path, what="checkpoint file", hint=f"check {path.name}, or download the checkpoint again")
    if not isinstance(data, dict):
        raise UserError(f"{path}: a JSON {type(data).__name__}, expected an object",
                        hint=f"check {path.name}, or download the checkpoint again")
    return data
