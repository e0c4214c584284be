"""Quantized drafts: read a checkpoint's quantization metadata, check it, and make one with ModelOpt.

Reading and checking are pure file reading (no torch, no vLLM); ``quantize_draft`` needs the
``quantize`` extra (torch + nvidia-modelopt) and is imported only when used.
"""

from specdraft.quantization.checks import (
    Finding,
    check_quantization,
    is_excluded,
    nvfp4_kernel_path,
    parse_compute_capability,
)
from specdraft.quantization.info import Producer, QuantizationInfo
from specdraft.quantization.inspect import read_quantization

__all__ = [
    "Finding",
    "Producer",
    "QuantizationInfo",
    "check_quantization",
    "is_excluded",
    "nvfp4_kernel_path",
    "parse_compute_capability",
    "read_quantization",
]
