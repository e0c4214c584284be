"""``plan_quantization``: whether and how a Gemma 4 checkpoint can be quantized here, decided from files alone.

It reads config.json, the safetensors headers and the memory available (``/proc/meminfo``, or the GPU's free
memory), and refuses what cannot work before anything heavy is imported: a model that is not Gemma 4, missing
weights, an already-quantized checkpoint, not enough memory. ``quantize.py`` says which layers stay BF16 and why.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Mapping

from specdraft.errors import RefusedError, UserError
from specdraft.families import rules_for, text_config
from specdraft.families.gemma4 import GEMMA4, TEXT_ONLY_ARCHITECTURE
from specdraft.families.gemma4 import QUANTIZABLE_ARCHITECTURES as GEMMA4_ARCHITECTURES
from specdraft.model_config import check_model_config, read_model_config
from specdraft.quantization.checks import is_excluded
from specdraft.quantization.inspect import read_json_object, read_quantization
from specdraft.safetensors_index import TensorEntry, element_count, read_tensor_index, safetensors_files

DraftScheme = Literal["nvfp4", "nvfp4-a16", "fp8"]

# scheme -> (ModelOpt preset in modelopt.torch.quantization, quant_algo the export must carry)
SCHEME_PRESETS: dict[str, tuple[str, str]] = {
    "nvfp4": ("NVFP4_DEFAULT_CFG", "NVFP4"),
    "nvfp4-a16": ("W4A16_NVFP4_CFG", "W4A16_NVFP4"),
    "fp8": ("FP8_DEFAULT_CFG", "FP8"),
}
# scheme -> elements per weight scale block along the input features (the preset's weight_quantizer
# ``block_sizes[-1]`` in modelopt 0.47 torch/quantization/config.py); None: one scale per tensor.
SCHEME_WEIGHT_BLOCK: dict[str, int | None] = {"nvfp4": 16, "nvfp4-a16": 16, "fp8": None}

# Peak memory while quantizing: the BF16 model, the packed copy the export builds, activations.
# Measured on the CPU with ModelOpt 0.47 (peak RSS): 2.7M parameters -> 0.54 GB, a 398M-parameter
# E2B-shaped model (0.80 GB in BF16) -> 1.73 GB, i.e. ~0.5 GB + 1.5x the BF16 weights. The fixed
# part is rounded up to 2 GiB for real vocabularies (262144-wide logits during calibration).
_PEAK_OVER_WEIGHTS = 1.5
_FIXED_OVERHEAD_BYTES = 2 * 1024**3
NEEDED_SHAPES = ("num_hidden_layers", "vocab_size")
"""What quantizing reads of the language model's shapes: the layers (which of them share a KV cache) and the
vocabulary (random calibration tokens); the weights' shapes come from the safetensors headers."""

# ``...experts.{id}.``: ModelOpt's export and per-expert checkpoints.
_PER_EXPERT_TENSOR = re.compile(r"\.experts\.\d+\.")


@dataclass(frozen=True)
class QuantizePlan:
    """What ``quantize_draft`` will do, decided from files alone."""

    model_dir: Path
    architecture: str
    scheme: DraftScheme
    exclusions: tuple[str, ...]
    """ModelOpt quantizer-name wildcards disabled on top of the scheme's preset."""
    unblockable: tuple[str, ...]
    """Linear layers whose input features are not a multiple of the scheme's weight block: kept BF16 (in ``exclusions``)."""
    kv_shared_layers: tuple[int, ...]
    parameters: int
    bf16_bytes: int
    required_bytes: int
    available_bytes: int
    device: str
    text_only: bool = False
    """Export only the language model, as ``Gemma4ForCausalLM`` (towers and their projections dropped)."""
    moe_prefix: bool = False
    """Store each expert under ``.moe.experts.{id}.`` (the community per-expert layout) instead of ModelOpt's ``.experts.{id}.``."""

    @property
    def output_architecture(self) -> str:
        return TEXT_ONLY_ARCHITECTURE if self.text_only else self.architecture


def check_model_dir(model_dir: str | os.PathLike) -> None:
    """Refuse (``UserError``, naming it as given) a ``--model`` that is not a directory, before anything looks
    inside it."""
    if Path(model_dir).is_dir():
        return
    what = "is not a directory" if Path(model_dir).exists() else "does not exist"
    raise UserError(f"--model {model_dir} {what}",
                    hint="pass the local directory of a Hugging Face Gemma 4 checkpoint (e.g. gemma-4-E2B-it)")


def plan_quantization(
    model_dir: str | os.PathLike,
    scheme: DraftScheme = "nvfp4",
    *,
    extra_exclusions: tuple[str, ...] = (),
    device: str = "cpu",
    available_bytes: int | None = None,
    text_only: bool = False,
    moe_prefix: bool = False,
) -> QuantizePlan:
    """Check that ``model_dir`` can be quantized here, and how; raises ``UserError`` / ``RefusedError`` if not,
    naming ``model_dir`` as given (``./x`` keeps its ``./``).

    ``available_bytes`` defaults to this machine's available memory (``MemAvailable``) for ``cpu``,
    or the GPU's free memory for ``cuda``.
    """
    typed, model_dir = model_dir, Path(model_dir)
    check_model_dir(typed)
    if scheme not in SCHEME_PRESETS:
        raise UserError(f"scheme {scheme!r} is not one of {', '.join(SCHEME_PRESETS)}")
    config, architecture = _read_bf16_gemma4(typed)
    index = read_tensor_index(model_dir)
    _check_expert_layout(typed, config, index, moe_prefix)
    parameters = sum(element_count(entry) for entry in index.values())
    bf16_bytes = 2 * parameters
    required = int(bf16_bytes * _PEAK_OVER_WEIGHTS) + _FIXED_OVERHEAD_BYTES
    if available_bytes is None:
        available_bytes = _available_bytes(device)
    _check_fits(model_dir, parameters, required, available_bytes, device)
    kv_shared = GEMMA4.kv_shared_layers(config)
    exclusions = GEMMA4.quantization_exclusions(config) + tuple(extra_exclusions)
    unblockable = tuple(
        name for name, in_features in _linear_input_features(index)
        if not is_excluded(f"{name}.weight_quantizer", exclusions) and is_unblockable(in_features, scheme)
    )
    return QuantizePlan(
        model_dir=model_dir, architecture=architecture, scheme=scheme, unblockable=unblockable,
        exclusions=exclusions + tuple(f"{name}.*" for name in unblockable),
        kv_shared_layers=kv_shared, parameters=parameters, bf16_bytes=bf16_bytes,
        required_bytes=required, available_bytes=available_bytes, device=device, text_only=text_only,
        moe_prefix=moe_prefix,
    )


def _read_bf16_gemma4(typed: str | os.PathLike) -> tuple[dict, str]:
    """The config.json and architecture of a BF16 Gemma 4 checkpoint with its weights in place, else a ``UserError``
    naming the directory as given."""
    model_dir = Path(typed)
    if not os.path.lexists(model_dir / "config.json"):
        raise UserError(f"{typed} has no config.json", hint="pass the directory of a Hugging Face Gemma 4 checkpoint")
    config = read_model_config(model_dir / "config.json", needs=())
    architecture = _gemma4_architecture(typed, config)
    check_model_config(config, model_dir / "config.json", needs=NEEDED_SHAPES)
    if read_quantization(model_dir) is not None:
        raise UserError(
            f"{typed} is already quantized",
            hint="quantize the BF16 base checkpoint (e.g. google/gemma-4-E2B-it) instead",
        )
    _check_weights_present(typed)
    return config, architecture


def _check_expert_layout(model_dir: str | os.PathLike, config: dict, index: dict[str, TensorEntry], moe_prefix: bool) -> None:
    """Refuse ``moe_prefix`` for a dense model, and a MoE checkpoint whose experts are already stored apart."""
    is_moe = isinstance(text_config(config), Mapping) and rules_for(config).is_moe(config)
    if moe_prefix and not is_moe:
        raise UserError(f"--moe-prefix: {model_dir} has no mixture-of-experts layers (its config enables none)",
                        hint="leave --moe-prefix out for a dense model")
    apart = next((name for name in index if _PER_EXPERT_TENSOR.search(name)), None)
    if is_moe and apart is not None:
        raise UserError(f"{model_dir} stores its experts one tensor per expert ({apart}); transformers loads only "
                        "the fused layout (experts.gate_up_proj / experts.down_proj)",
                        hint="quantize the BF16 checkpoint as Google publishes it (e.g. google/gemma-4-26B-A4B-it)")


def _gemma4_architecture(model_dir: str | os.PathLike, config: dict) -> str:
    """The checkpoint's architecture, refused unless it is one of Gemma 4's."""
    architectures = config.get("architectures")
    architecture = architectures[0] if isinstance(architectures, list) and architectures else None
    if architecture not in GEMMA4_ARCHITECTURES:
        raise UserError(
            f"{model_dir} is a {architecture or config.get('model_type') or 'model of unknown architecture'}, "
            f"not Gemma 4 ({' / '.join(GEMMA4_ARCHITECTURES)})",
            hint="specdraft quantize makes Gemma 4 checkpoints only (E2B / E4B drafts, the 26B-A4B)",
        )
    return architecture


def _check_fits(model_dir: Path, parameters: int, required: int, available: int, device: str) -> None:
    """Refuse before loading anything when quantizing would run out of ``device`` memory."""
    if required > available:
        raise RefusedError(
            f"quantizing {model_dir.name} ({parameters:,} parameters, {2 * parameters / 1024**3:.1f} GiB in BF16) "
            f"needs about {required / 1024**3:.1f} GiB of {device} memory; {available / 1024**3:.1f} GiB "
            "is available",
            hint="run it on a machine with more memory (or a GPU: --device cuda)",
        )


def _linear_input_features(index: dict[str, TensorEntry]) -> list[tuple[str, int]]:
    """(module, input features) of every 2-D ``weight`` in the headers except the embedding tables."""
    return [(entry.name.removesuffix(".weight"), entry.shape[1]) for entry in index.values()
            if entry.name.endswith(".weight") and len(entry.shape) == 2
            and not entry.name.rsplit(".", 2)[-2].startswith("embed_tokens")]


def is_unblockable(in_features: int, scheme: str) -> bool:
    block = SCHEME_WEIGHT_BLOCK[scheme]
    return block is not None and in_features % block != 0


def _check_weights_present(model_dir: str | os.PathLike) -> None:
    files = safetensors_files(Path(model_dir))
    if not files:
        found = sorted(p.name for p in Path(model_dir).glob("*.bin")) or ["no weight files"]
        raise UserError(
            f"{model_dir} has no *.safetensors weights ({', '.join(found[:3])})",
            hint="download the safetensors checkpoint (huggingface-cli download google/gemma-4-E2B-it --local-dir DIR)",
        )
    index_path = Path(model_dir, "model.safetensors.index.json")
    if index_path.is_file():
        weight_map = read_json_object(index_path).get("weight_map", {})
        if not isinstance(weight_map, dict) or not all(isinstance(name, str) for name in weight_map.values()):
            raise UserError(f"{index_path}: weight_map is not an object of tensor -> file names",
                            hint="finish the download, then run quantize again")
        missing = sorted({name for name in weight_map.values() if not Path(model_dir, name).is_file()})
        if missing:
            raise UserError(
                f"{model_dir} is missing {len(missing)} weight shard(s) named in model.safetensors.index.json: {missing[0]}",
                hint="finish the download, then run quantize again",
            )


def _available_bytes(device: str) -> int:
    if device.startswith("cuda"):
        import torch  # noqa: PLC0415 - only a GPU plan needs it

        free, _total = torch.cuda.mem_get_info()
        return int(free)
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
