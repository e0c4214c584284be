"""Findings about a quantized checkpoint: will vLLM load it as declared, and run it on this GPU?

Each rule below cites the vLLM 0.26.0 source it mirrors. GPU facts:

- **NVFP4 runs natively from compute capability 10.0** (Blackwell: sm100/sm103 data centre, sm110,
  sm120/sm121 GeForce/RTX Pro/GB10). The CUTLASS path is gated by ``cutlass_scaled_mm_supports_fp4``
  (``csrc/.../fp4/nvfp4_scaled_mm_entry.cu``: capability >= 100 and CUDA runtime >= 12.8), the
  FlashInfer paths by ``has_device_capability(100)``
  (``vllm/model_executor/kernels/linear/nvfp4/flashinfer.py``).
- **Capability 7.5 to 9.x (Turing, Ampere, Ada, Hopper sm90) has no FP4 tensor cores:** vLLM falls
  back to the Marlin kernel (``kernels/linear/nvfp4/marlin.py``, ``is_fp4_marlin_supported``:
  capability >= 75), which keeps the FP4 weights but dequantizes them in the GEMM and leaves
  activations in BF16 — a W4A4 checkpoint runs as W4A16 ("Your GPU does not have native support
  for FP4 computation ... Weight-only FP4 compression will be used leveraging the Marlin kernel").
  ``ModelOptNvFp4Config.get_min_capability`` is 75; below it vLLM refuses to load.
- **ModelOpt FP8 needs capability 8.9** (``ModelOptFp8Config.get_min_capability``: Ada, Hopper,
  Blackwell), enforced in ``vllm/config/vllm.py``.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Literal

from specdraft.errors import UserError
from specdraft.families.gemma4 import EMBEDDER_PROJECTIONS as _EMBEDDERS
from specdraft.families.gemma4 import UNQUANTIZED_TOWER_PREFIXES as _UNQUANTIZABLE_PREFIXES
from specdraft.findings import Finding
from specdraft.quantization.info import (
    VLLM_LEGACY_FILE_QUANT_ALGOS,
    VLLM_MODELOPT_QUANT_ALGOS,
    QuantizationInfo,
)

Fp4KernelPath = Literal["native", "marlin-weight-only", "unsupported"]

NATIVE_FP4_MIN_CAPABILITY = 100
MARLIN_FP4_MIN_CAPABILITY = 75
MODELOPT_FP8_MIN_CAPABILITY = 89


def parse_compute_capability(value: int | float | str | tuple[int, int]) -> int:
    """``90``, ``9.0``, ``"9.0"``, ``"sm_90"``, ``"sm90"``, ``(9, 0)`` -> ``90``; ``"12.1"`` -> ``121``."""
    if isinstance(value, tuple):
        major, minor = value
        return int(major) * 10 + int(minor)
    if isinstance(value, int):
        return value
    text = str(value).strip().lower().removeprefix("sm").lstrip("_")
    match = re.fullmatch(r"(\d+)\.(\d)", text)
    if match:
        return int(match.group(1)) * 10 + int(match.group(2))
    if text.isdigit():
        return int(text)
    raise UserError(f"compute capability {value!r} is not one of the forms 9.0, sm_90, 90", hint="e.g. --gpu-capability 9.0 (Hopper) or 12.1 (GB10)")


def nvfp4_kernel_path(compute_capability: int) -> Fp4KernelPath:
    """How vLLM 0.26 executes an NVFP4 linear layer on a GPU of this capability."""
    if compute_capability >= NATIVE_FP4_MIN_CAPABILITY:
        return "native"
    if compute_capability >= MARLIN_FP4_MIN_CAPABILITY:
        return "marlin-weight-only"
    return "unsupported"


def is_excluded(module: str, patterns: tuple[str, ...] | list[str]) -> bool:
    """True when ``module`` matches an exclusion: a ModelOpt wildcard, a prefix, or a compressed-tensors ``re:``."""
    for pattern in patterns:
        if pattern.startswith("re:"):
            if re.match(pattern[3:], module):
                return True
        elif module == pattern or module.startswith(pattern + ".") or fnmatch.fnmatchcase(module, pattern):
            return True
        elif "." in module and module.split(".", 1)[1] == pattern:  # vLLM maps "model.x" to "x"
            return True
    return False


def check_quantization(
    info: QuantizationInfo | None,
    *,
    declared: str | None = None,
    compute_capability: int | float | str | tuple[int, int] | None = None,
) -> list[Finding]:
    """Findings for a checkpoint whose metadata is ``info`` (None: not quantized).

    ``declared`` is the ``--quantization`` (or speculative ``quantization``) value the user set;
    ``compute_capability`` the GPU's, when known.
    """
    findings: list[Finding] = []
    if info is None:
        if declared:
            findings.append(Finding(
                level="error", check="quantization-mismatch",
                message=f"quantization {declared!r} is declared but the checkpoint has no quantization metadata "
                        "(no quantization_config in config.json, no hf_quant_config.json)",
                hint="drop the quantization setting for this checkpoint, or quantize it: python -m specdraft quantize",
            ))
        return findings
    findings += _declared_findings(info, declared)
    findings += _metadata_findings(info)
    findings += _exclusion_findings(info)
    if compute_capability is not None:
        findings += _gpu_findings(info, parse_compute_capability(compute_capability))
    return findings


def _declared_findings(info: QuantizationInfo, declared: str | None) -> list[Finding]:
    if not declared or declared == info.vllm_quantization:
        return []
    if declared in info.accepted_quantization:
        return [Finding(
            level="info", check="quantization-resolved",
            message=f"quantization {declared!r} is accepted for this {info.scheme} checkpoint; vLLM resolves it to "
                    f"{info.vllm_quantization!r}",
        )]
    if info.format == "modelopt" and declared.startswith("modelopt"):
        # A ModelOpt override replaces the declared value, so vLLM still loads it.
        return [Finding(
            level="warning", check="quantization-resolved",
            message=f"quantization {declared!r} does not describe this {info.scheme} checkpoint; vLLM overrides it "
                    f"with {info.vllm_quantization!r}",
            hint=f"set quantization to {info.vllm_quantization!r}",
        )]
    if info.format != "compressed-tensors":
        return [Finding(
            level="warning", check="quantization-mismatch",
            message=f"quantization {declared!r} is declared for a {info.format} {info.quant_algo or info.scheme} "
                    f"checkpoint whose own method is {info.vllm_quantization!r}; vLLM may override the declared "
                    "value or refuse to start",
            hint=f"set quantization to {info.vllm_quantization!r}",
        )]
    return [Finding(
        level="error", check="quantization-mismatch",
        message=f"quantization {declared!r} is declared but the checkpoint is {info.format} ({info.scheme}); vLLM "
                f"fails with 'Quantization method specified in the model config ({info.vllm_quantization}) does not "
                f"match the quantization method specified in the `quantization` argument ({declared})'",
        hint=f"set quantization to {info.vllm_quantization!r}",
    )]


def _metadata_findings(info: QuantizationInfo) -> list[Finding]:
    findings: list[Finding] = []
    if info.format != "modelopt":
        return findings
    if info.quant_algo not in VLLM_MODELOPT_QUANT_ALGOS:
        findings.append(Finding(
            level="error", check="quant-algo-unsupported",
            message=f"ModelOpt quant_algo {info.quant_algo!r} is not one vLLM 0.26 loads "
                    f"({', '.join(sorted(VLLM_MODELOPT_QUANT_ALGOS))})",
            hint="re-export with --scheme nvfp4, nvfp4-a16 or fp8",
        ))
    if info.sources == ("hf_quant_config.json",) and info.quant_algo not in VLLM_LEGACY_FILE_QUANT_ALGOS:
        findings.append(Finding(
            level="error", check="legacy-metadata-unresolvable",
            message=f"only hf_quant_config.json describes this checkpoint, and vLLM 0.26 cannot resolve quant_algo "
                    f"{info.quant_algo!r} from it ('Unknown ModelOpt quant algo')",
            hint="add the quantization_config block to config.json (current ModelOpt exports write it)",
        ))
    legacy = (info.legacy_file or {}).get("quantization")
    if "config.json" in info.sources and isinstance(legacy, dict):
        legacy_algo = str(legacy.get("quant_algo") or "").upper()
        if legacy_algo and legacy_algo != info.quant_algo:
            findings.append(Finding(
                level="warning", check="metadata-disagree",
                message=f"config.json says quant_algo {info.quant_algo!r} but hf_quant_config.json says {legacy_algo!r}; "
                        "vLLM reads config.json",
                hint="make the two files agree (re-export, or delete the stale hf_quant_config.json)",
            ))
    return findings


def _exclusion_findings(info: QuantizationInfo) -> list[Finding]:
    findings: list[Finding] = []
    towers = [m for m in info.quantized_modules if m.startswith(_UNQUANTIZABLE_PREFIXES)]
    if towers:
        findings.append(Finding(
            level="error", check="tower-quantized",
            message=f"{len(towers)} vision/audio tower modules are stored quantized (first: {towers[0]}); vLLM builds "
                    "Gemma 4's towers unquantized and cannot load them",
            hint="re-quantize excluding *vision_tower* and *audio_tower* (python -m specdraft quantize does)",
        ))
    for part in info.multimodal_parts:
        embedder = _EMBEDDERS[part]
        if embedder not in info.quantized_modules and not is_excluded(embedder, info.exclusions):
            findings.append(Finding(
                level="error", check="embedder-not-excluded",
                message=f"{embedder} is stored unquantized but the checkpoint's exclusions do not list it; vLLM "
                        f"builds it quantized and the BF16 weight will not load",
                hint=f"add 'model.embed_{part}*' to the exclusions (ignore / exclude_modules)",
            ))
    for layer in info.kv_shared_layers:
        q_proj = next((m for m in info.quantized_modules if m.endswith(f"layers.{layer}.self_attn.q_proj")), None)
        if q_proj and q_proj.replace("q_proj", "k_proj") not in info.quantized_modules:
            findings.append(Finding(
                level="warning", check="kv-shared-qkv-incomplete",
                message=f"{q_proj} is quantized but its KV-shared layer has no k_proj/v_proj tensors; vLLM fuses "
                        "q/k/v and takes the max of their global scales, so the missing shards' uninitialised "
                        "scales reach the q projection (vllm 0.26 modelopt.py process_weights_after_loading)",
                hint="re-quantize keeping the KV-shared layers' self_attn in BF16 (python -m specdraft quantize does)",
            ))
            break
    if "lm_head" in info.quantized_modules:
        findings.append(Finding(
            level="warning", check="lm-head-quantized",
            message="lm_head is stored quantized; Gemma 4 ties lm_head to the embedding, which stays BF16",
            hint="re-quantize excluding lm_head",
        ))
    return findings


def _gpu_findings(info: QuantizationInfo, capability: int) -> list[Finding]:
    gpu = f"compute capability {capability // 10}.{capability % 10}"
    if info.is_fp4:
        path = nvfp4_kernel_path(capability)
        if path == "unsupported":
            return [Finding(
                level="error", check="fp4-unsupported",
                message=f"{info.scheme} needs compute capability 7.5 or newer; this GPU has {gpu}",
                hint="use a BF16 draft on this GPU",
            )]
        if path == "marlin-weight-only" and info.scheme == "nvfp4":
            return [Finding(
                level="warning", check="fp4-not-native",
                message=f"{gpu} has no FP4 tensor cores (native NVFP4 needs 10.0+, Blackwell): vLLM runs this W4A4 "
                        "checkpoint through the Marlin kernel as weight-only FP4 with BF16 activations",
                hint="on Hopper/Ada prefer an FP8 draft: python -m specdraft quantize --scheme fp8"
                     if capability >= MODELOPT_FP8_MIN_CAPABILITY else "expect weight-only speed, not FP4 compute",
            )]
        return []
    if info.format == "modelopt" and info.is_fp8 and capability < MODELOPT_FP8_MIN_CAPABILITY:
        return [Finding(
            level="error", check="fp8-unsupported",
            message=f"ModelOpt FP8 needs compute capability 8.9 or newer; this GPU has {gpu}",
            hint="use a BF16 or NVFP4 (Marlin weight-only) draft on this GPU",
        )]
    return []
