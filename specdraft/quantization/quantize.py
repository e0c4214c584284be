"""Make an NVFP4 / FP8 Gemma 4 draft with NVIDIA ModelOpt, in a form vLLM loads.

``plan_quantization`` reads files only (config.json, safetensors headers, /proc/meminfo) and refuses
what cannot work before anything heavy is imported: a model that is not Gemma 4, missing weights,
an already-quantized checkpoint, not enough memory. ``quantize_draft`` then loads the model with
transformers, calibrates it with ModelOpt (``mtq.quantize`` with the scheme's preset plus the Gemma 4
exclusions below), exports it with ``export_hf_checkpoint`` into a staging directory, copies the
tokenizer/processor files, keeps the source's config.json layout (adding the export's
``quantization_config``), checks the result with ``read_quantization`` / ``check_quantization``,
and only then moves it to ``out_dir``.

Gemma 4 exclusions, and why:

- ``lm_head``: tied to the token embedding (``tie_word_embeddings``), which stays BF16.
- ``vision_tower``, ``audio_tower``: vLLM builds the towers from transformers' ``AutoModel``
  without quantization (vllm 0.26 ``gemma4_mm.py``); quantized tower weights cannot load.
  ModelOpt's preset already skips ``*vision_tower*`` but not the audio tower (E2B/E4B have one).
- ``embed_vision``, ``embed_audio``: the multimodal projections are tiny and ModelOpt's NVIDIA
  checkpoints keep them BF16; listing them in the exclusions tells vLLM to build them unquantized.
- ``self_attn`` of the KV-shared layers (E2B: 15-34, E4B: 24-41): transformers does not create
  ``k_proj``/``v_proj`` for those layers, so the export has none, but vLLM still builds a fused
  ``qkv_proj`` and, for NVFP4/FP8, takes the max of the per-shard global scales — the missing k/v
  shards would contribute uninitialised memory (``torch.empty``) to the q projection's scale. Keeping
  those attention blocks BF16 sidesteps it at a cost of ~0.13B BF16 parameters for E2B.
- ``text_only`` drops the towers and projections altogether and exports a ``Gemma4ForCausalLM``
  (as the text-only 31B "turbo" target does): a draft never sees images, and the towers cost memory.
- A Linear whose input features are not a multiple of the scheme's weight block (16 for NVFP4; FP8 is
  per-tensor, so any width works): ModelOpt calibrates it but cannot pack it and asserts during the
  export ("Weight shape is not divisible for block size"). The plan finds such layers in the
  safetensors headers and keeps them BF16, as it does for all-zero weights.
- Mixture-of-experts targets (26B-A4B): transformers holds the experts fused (3-D ``experts.gate_up_proj``);
  ModelOpt quantizes them per expert and exports ``experts.{id}.{gate,up,down}_proj`` (the router stays BF16 by
  its preset). ``moe_prefix`` renames those to ``.moe.experts.{id}.``, the layout community checkpoints ship
  (bg-digitalservices/Gemma-4-26B-A4B-it-NVFP4), which vLLM 0.19.1-0.20.2 and 0.31.0-0.33.0 load only with the
  ``gemma4-moe-expert-prefix`` hotfix. A BF16 checkpoint that already stores its experts apart is refused:
  transformers loads the fused layout only, and would leave the experts random.
- The per-layer embedding tables (``embed_tokens_per_layer``) are ``nn.Embedding`` lookups, which the
  preset never quantizes; ``per_layer_model_projection``/``per_layer_input_gate``/``per_layer_projection``
  are Linear layers that vLLM builds with the quantization config, so they are quantized.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Mapping

from specdraft.dependencies import missing_dependency
from specdraft.errors import RefusedError, UserError
from specdraft.families import rules_for, text_config
from specdraft.families.gemma4 import GEMMA4, TEXT_MODEL_TYPE, TEXT_ONLY_ARCHITECTURE
from specdraft.families.gemma4 import QUANTIZABLE_ARCHITECTURES as GEMMA4_ARCHITECTURES
from specdraft.quantization.calibration import TOKENIZER_FILES, calibration_token_ids
from specdraft.quantization.checks import Finding, check_quantization, is_excluded
from specdraft.quantization.inspect import QuantizationInfo, read_json_object, read_quantization
from specdraft.model_config import check_model_config, read_model_config
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
_TOKENIZER_FILES = (
    "tokenizer.json", "tokenizer_config.json", "tokenizer.model", "special_tokens_map.json",
    "chat_template.jinja", "chat_template.json", "processor_config.json", "preprocessor_config.json",
    "generation_config.json",
)
_NEEDED_SHAPES = ("num_hidden_layers", "vocab_size")
"""What quantizing reads of the language model's shapes: the layers (which of them share a KV cache) and the
vocabulary (random calibration tokens); the weights' shapes come from the safetensors headers."""
_PROCESSOR_FILES = ("processor_config.json", "preprocessor_config.json")
# ``...experts.{id}.`` (ModelOpt's export and per-expert checkpoints), not preceded by ``.moe`` when renaming.
_PER_EXPERT_TENSOR = re.compile(r"\.experts\.\d+\.")
_MODELOPT_EXPERT = re.compile(r"(?<!\.moe)\.experts\.(?=\d+\.)")


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


@dataclass
class QuantizeResult:
    out_dir: Path
    info: QuantizationInfo
    findings: list[Finding]
    modelopt_version: str
    calibration_sequences: int
    calibration_tokens: int
    seconds: dict[str, float] = field(default_factory=dict)
    kept_in_bf16: dict[str, str] = field(default_factory=dict)
    """Linear layers kept BF16 beyond the Gemma 4 exclusions, and why (all-zero weight, not a multiple of the block)."""


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
    if not os.path.lexists(model_dir / "config.json"):
        raise UserError(f"{typed} has no config.json", hint="pass the directory of a Hugging Face Gemma 4 checkpoint")
    config = read_model_config(model_dir / "config.json", needs=())
    architecture = _gemma4_architecture(typed, config)
    check_model_config(config, model_dir / "config.json", needs=_NEEDED_SHAPES)
    if read_quantization(model_dir) is not None:
        raise UserError(
            f"{typed} is already quantized",
            hint="quantize the BF16 base checkpoint (e.g. google/gemma-4-E2B-it) instead",
        )
    _check_weights_present(typed)
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
        if not is_excluded(f"{name}.weight_quantizer", exclusions) and _is_unblockable(in_features, scheme)
    )
    return QuantizePlan(
        model_dir=model_dir, architecture=architecture, scheme=scheme, unblockable=unblockable,
        exclusions=exclusions + tuple(f"{name}.*" for name in unblockable),
        kv_shared_layers=kv_shared, parameters=parameters, bf16_bytes=bf16_bytes,
        required_bytes=required, available_bytes=available_bytes, device=device, text_only=text_only,
        moe_prefix=moe_prefix,
    )


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


def quantize_draft(
    plan: QuantizePlan,
    out_dir: str | os.PathLike,
    *,
    calib: str = "builtin",
    samples: int | None = None,
    max_seq_len: int = 512,
    progress: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
) -> QuantizeResult:
    """Quantize ``plan.model_dir`` with ModelOpt and write a vLLM-loadable checkpoint to ``out_dir``.

    ``out_dir`` must not exist or be empty; nothing is written there unless the export succeeds and
    reads back as the requested scheme.
    """
    check_out_dir(out_dir)
    out_dir = Path(out_dir)
    torch, transformers, mtq, export_hf_checkpoint, modelopt_version = _import_quantize_stack()
    from tqdm.auto import tqdm  # noqa: PLC0415 - a transformers dependency, needed only here

    seconds: dict[str, float] = {}
    started = time.perf_counter()
    sequences = _calibration_sequences(plan, transformers, calib, samples=samples, max_seq_len=max_seq_len)

    progress(f"loading {plan.model_dir} ({plan.parameters:,} parameters) on {plan.device}")
    model_class = getattr(transformers, plan.architecture)
    model = model_class.from_pretrained(plan.model_dir, dtype=torch.bfloat16).to(plan.device).eval()
    seconds["load"] = time.perf_counter() - started

    preset_name, expected_algo = SCHEME_PRESETS[plan.scheme]
    kept = _kept_in_bf16(model, plan, torch)
    if kept:
        progress(f"keeping {len(kept)} Linear layers in BF16: "
                 + ", ".join(f"{name} ({why})" for name, why in list(kept.items())[:3]) + (", ..." if len(kept) > 3 else ""))
    quant_config = _with_exclusions(getattr(mtq, preset_name), plan.exclusions + tuple(f"{name}.*" for name in kept))

    def forward_loop(quantized_model: Any) -> None:
        with torch.no_grad():
            for ids in tqdm(sequences, desc=f"calibrating ({plan.scheme})", unit="seq", file=sys.stderr):
                quantized_model(input_ids=torch.tensor([ids], device=plan.device))

    phase = time.perf_counter()
    with contextlib.redirect_stdout(sys.stderr):  # ModelOpt prints its progress to stdout
        model = mtq.quantize(model, quant_config, forward_loop)
    seconds["calibrate"] = time.perf_counter() - phase
    if plan.text_only and plan.architecture != TEXT_ONLY_ARCHITECTURE:
        model = _language_model_only(model, transformers, torch)

    phase = time.perf_counter()
    progress(f"exporting to {out_dir}")
    findings = _export_checked(model, plan, out_dir, export_hf_checkpoint, torch, expected_algo)
    seconds["export"] = time.perf_counter() - phase
    seconds["total"] = time.perf_counter() - started
    return QuantizeResult(
        out_dir=out_dir, info=read_quantization(out_dir), findings=findings, modelopt_version=modelopt_version,
        calibration_sequences=len(sequences), calibration_tokens=sum(len(ids) for ids in sequences), seconds=seconds,
        kept_in_bf16=kept,
    )


def _calibration_sequences(plan: QuantizePlan, transformers: Any, calib: str, *, samples: int | None,
                           max_seq_len: int) -> list[list[int]]:
    """The calibration set as token ids, tokenized with the model's own tokenizer and chat template."""
    tokenizer = _load_tokenizer(transformers, plan.model_dir)
    config_path = plan.model_dir / "config.json"
    vocab_size = text_config(read_model_config(config_path, needs=_NEEDED_SHAPES)).get("vocab_size")
    if not isinstance(vocab_size, int) or vocab_size < 4:
        raise UserError(f"{config_path}: vocab_size is {vocab_size!r}, not a vocabulary size",
                        hint="pass the config.json of a Hugging Face Gemma 4 checkpoint")
    sequences = calibration_token_ids(calib, tokenizer=tokenizer, vocab_size=vocab_size, samples=samples,
                                      max_seq_len=max_seq_len)
    if not sequences:
        raise UserError("no calibration sequences", hint="pass --calib builtin or a file with samples")
    return sequences


def _export_checked(model: Any, plan: QuantizePlan, out_dir: Path, export_hf_checkpoint: Callable[..., Any],
                    torch: Any, expected_algo: str) -> list:
    """Export into a staging directory beside ``out_dir``, read it back, and only then rename it into place.

    Returns the export's own findings; raises (leaving ``out_dir`` untouched) when the export reads back as
    another scheme, carries a non-finite scale or fails its own checks.
    """
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.partial-", dir=out_dir.parent))
    try:
        with torch.no_grad(), contextlib.redirect_stdout(sys.stderr):
            export_hf_checkpoint(model, export_dir=staging)
        _keep_source_config(plan.model_dir, staging, text_only=plan.text_only)
        if plan.moe_prefix:
            _move_experts_under_moe(staging)
        _copy_tokenizer_files(plan.model_dir, staging, text_only=plan.text_only)
        info = read_quantization(staging)
        if info is None or info.quant_algo != expected_algo:
            raise RuntimeError(f"ModelOpt export in {staging} reads back as {info and info.quant_algo}, "
                               f"not {expected_algo}")
        broken = _non_finite_scales(staging, torch)
        if broken:
            raise RuntimeError(f"ModelOpt export in {staging} has non-finite scales: {', '.join(broken[:3])}")
        findings = check_quantization(info)
        errors = [f for f in findings if f.level == "error"]
        if errors:
            raise RuntimeError(f"ModelOpt export in {staging} fails its own checks: {errors[0].message}")
        if out_dir.exists():
            out_dir.rmdir()
        staging.rename(out_dir)
        return findings
    finally:
        if staging.exists():
            shutil.rmtree(staging)


def check_out_dir(out_dir: str | os.PathLike) -> None:
    """Refuse (``UserError``, naming it as given) an ``--out`` that exists and is not an empty directory, or that
    cannot be created."""
    typed, out_dir = out_dir, Path(out_dir)
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise UserError(f"{typed} exists and is not an empty directory", hint="pass a new --out directory")
    parent = out_dir if out_dir.exists() else out_dir.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(f"cannot create {typed}: {parent} is not a writable directory",
                        hint="pass an --out directory you can write to")


def _linear_input_features(index: dict[str, TensorEntry]) -> list[tuple[str, int]]:
    """(module, input features) of every 2-D ``weight`` in the headers except the embedding tables."""
    return [(entry.name.removesuffix(".weight"), entry.shape[1]) for entry in index.values()
            if entry.name.endswith(".weight") and len(entry.shape) == 2
            and not entry.name.rsplit(".", 2)[-2].startswith("embed_tokens")]


def _is_unblockable(in_features: int, scheme: str) -> bool:
    block = SCHEME_WEIGHT_BLOCK[scheme]
    return block is not None and in_features % block != 0


def _kept_in_bf16(model: Any, plan: QuantizePlan, torch: Any) -> dict[str, str]:
    """Linear layers of the loaded model that must stay BF16 beyond the plan's wildcards, and why.

    An all-zero weight has amax 0, so ModelOpt's block scales come out 0/0 = NaN (vLLM then warns about
    negative scales and runs on garbage); such a layer gains nothing from quantization. A layer whose
    input features are not a multiple of the weight block cannot be packed (the plan names those from
    the headers; the loaded model is the authority).
    """
    kept = {}
    block = SCHEME_WEIGHT_BLOCK[plan.scheme]
    for name, module in model.named_modules():
        if not isinstance(module, torch.nn.Linear) or (
                name not in plan.unblockable and is_excluded(f"{name}.weight_quantizer", plan.exclusions)):
            continue
        if _is_unblockable(module.in_features, plan.scheme):
            kept[name] = f"{module.in_features} input features, not a multiple of the {block}-element block"
        elif not bool(module.weight.any()):
            kept[name] = "all-zero weight"
    return kept


def _non_finite_scales(checkpoint: Path, torch: Any) -> list[str]:
    """Names of the scale tensors (``*_scale``, ``*_scale_2``) in ``checkpoint`` holding a NaN or an infinity."""
    from safetensors import safe_open  # noqa: PLC0415 - installed with transformers, needed only here

    broken = []
    for path in sorted(checkpoint.glob("*.safetensors")):
        with safe_open(str(path), framework="pt") as tensors:
            for name in tensors.keys():
                if name.endswith(("_scale", "_scale_2")) and not bool(torch.isfinite(tensors.get_tensor(name).float()).all()):
                    broken.append(name)
    return broken


def _move_experts_under_moe(checkpoint: Path) -> None:
    """Rename ``.experts.{id}.`` tensors to ``.moe.experts.{id}.`` in every shard and in the shard index."""
    from safetensors.torch import load_file, save_file  # noqa: PLC0415 - installed with transformers

    def renamed(name: str) -> str:
        return _MODELOPT_EXPERT.sub(".moe.experts.", name)

    for path in sorted(checkpoint.glob("*.safetensors")):
        tensors = load_file(str(path))
        save_file({renamed(name): tensor for name, tensor in tensors.items()}, str(path), metadata={"format": "pt"})
    index_path = checkpoint / "model.safetensors.index.json"
    if index_path.is_file():
        index = json.loads(index_path.read_text(encoding="utf-8"))
        index["weight_map"] = {renamed(name): shard for name, shard in index.get("weight_map", {}).items()}
        index_path.write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")


def _with_exclusions(preset: dict[str, Any], exclusions: tuple[str, ...]) -> dict[str, Any]:
    """The preset with ``exclusions`` disabled; the preset object itself is left untouched."""
    config = copy.deepcopy(preset)  # not a JSON round trip: block_sizes has int keys (-1)
    config["quant_cfg"] = list(config["quant_cfg"]) + [{"quantizer_name": name, "enable": False} for name in exclusions]
    return config


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


def _import_quantize_stack() -> tuple[Any, Any, Any, Any, str]:
    try:
        import modelopt  # noqa: PLC0415
        import modelopt.torch.quantization as mtq  # noqa: PLC0415
        import torch  # noqa: PLC0415
        import transformers  # noqa: PLC0415
        from modelopt.torch.export import export_hf_checkpoint  # noqa: PLC0415
    except ImportError as err:
        raise (missing_dependency(err, "quantize") or err) from None
    return torch, transformers, mtq, export_hf_checkpoint, modelopt.__version__


def _load_tokenizer(transformers: Any, model_dir: Path) -> Any | None:
    if not any((model_dir / name).is_file() for name in TOKENIZER_FILES):
        return None
    return transformers.AutoTokenizer.from_pretrained(model_dir)


def _language_model_only(model: Any, transformers: Any, torch: Any) -> Any:
    """A ``Gemma4ForCausalLM`` around the quantized language model and lm_head of a multimodal Gemma 4.

    Built on the meta device, then given the real (already quantized) modules, so nothing is copied.
    """
    with torch.device("meta"):
        text_model = transformers.Gemma4ForCausalLM(model.config.text_config)
    text_model.model = model.model.language_model
    text_model.lm_head = model.lm_head
    text_model.config.architectures = [TEXT_ONLY_ARCHITECTURE]
    return text_model.eval()


# Top-level keys a text-only config inherits when its text_config lacks them.
_TEXT_ONLY_INHERITED = ("tie_word_embeddings", "dtype", "torch_dtype", "bos_token_id", "eos_token_id", "pad_token_id")


def _keep_source_config(source: Path, target: Path, *, text_only: bool = False) -> None:
    """config.json = the source's (its ``text_config`` for a text-only draft), plus the export's ``quantization_config``.

    ``save_pretrained`` in recent transformers rewrites Gemma 4 configs in its own layout (e.g.
    ``global_head_dim`` moves into ``per_layer_config``); the source's hub layout is the one every
    transformers release that vLLM runs with reads the same way.
    """
    exported = json.loads((target / "config.json").read_text(encoding="utf-8"))
    config = json.loads((source / "config.json").read_text(encoding="utf-8"))
    if text_only and isinstance(config.get("text_config"), dict):
        text = dict(config["text_config"])
        for key in _TEXT_ONLY_INHERITED:
            if key not in text and key in config:
                text[key] = config[key]
        config = {"architectures": [TEXT_ONLY_ARCHITECTURE], **text, "model_type": TEXT_MODEL_TYPE}
    config["quantization_config"] = exported["quantization_config"]
    (target / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def _copy_tokenizer_files(source: Path, target: Path, *, text_only: bool = False) -> None:
    for name in _TOKENIZER_FILES:
        if text_only and name in _PROCESSOR_FILES:
            continue
        if (source / name).is_file() and not (target / name).exists():
            shutil.copy2(source / name, target / name)
