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
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from specdraft.dependencies import missing_dependency
from specdraft.errors import UserError
from specdraft.families import text_config
from specdraft.families.gemma4 import TEXT_ONLY_ARCHITECTURE
from specdraft.model_config import read_model_config
from specdraft.quantization.calibration import TOKENIZER_FILES, calibration_token_ids
from specdraft.quantization.checks import Finding, is_excluded
from specdraft.quantization.export import check_out_dir, export_checked
from specdraft.quantization.info import QuantizationInfo
from specdraft.quantization.inspect import read_quantization
from specdraft.quantization.plan import (
    NEEDED_SHAPES,
    SCHEME_PRESETS,
    SCHEME_WEIGHT_BLOCK,
    DraftScheme,
    QuantizePlan,
    check_model_dir,
    is_unblockable,
    plan_quantization,
)

__all__ = [
    "SCHEME_PRESETS",
    "SCHEME_WEIGHT_BLOCK",
    "DraftScheme",
    "QuantizePlan",
    "QuantizeResult",
    "check_model_dir",
    "check_out_dir",
    "plan_quantization",
    "quantize_draft",
]


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

    phase = time.perf_counter()
    model = _calibrate(model, plan, quant_config, sequences, mtq, torch)
    seconds["calibrate"] = time.perf_counter() - phase
    if plan.text_only and plan.architecture != TEXT_ONLY_ARCHITECTURE:
        model = _language_model_only(model, transformers, torch)

    phase = time.perf_counter()
    progress(f"exporting to {out_dir}")
    findings = export_checked(model, plan, out_dir, export_hf_checkpoint, torch, expected_algo)
    seconds["export"] = time.perf_counter() - phase
    seconds["total"] = time.perf_counter() - started
    return QuantizeResult(
        out_dir=out_dir, info=read_quantization(out_dir), findings=findings, modelopt_version=modelopt_version,
        calibration_sequences=len(sequences), calibration_tokens=sum(len(ids) for ids in sequences), seconds=seconds,
        kept_in_bf16=kept,
    )


def _calibrate(model: Any, plan: QuantizePlan, quant_config: dict[str, Any], sequences: list[list[int]], mtq: Any,
               torch: Any) -> Any:
    """``mtq.quantize`` with the calibration set run through the model once."""
    from tqdm.auto import tqdm  # noqa: PLC0415 - a transformers dependency, needed only here

    def forward_loop(quantized_model: Any) -> None:
        with torch.no_grad():
            for ids in tqdm(sequences, desc=f"calibrating ({plan.scheme})", unit="seq", file=sys.stderr):
                quantized_model(input_ids=torch.tensor([ids], device=plan.device))

    with contextlib.redirect_stdout(sys.stderr):  # ModelOpt prints its progress to stdout
        return mtq.quantize(model, quant_config, forward_loop)


def _calibration_sequences(plan: QuantizePlan, transformers: Any, calib: str, *, samples: int | None,
                           max_seq_len: int) -> list[list[int]]:
    """The calibration set as token ids, tokenized with the model's own tokenizer and chat template."""
    tokenizer = _load_tokenizer(transformers, plan.model_dir)
    config_path = plan.model_dir / "config.json"
    vocab_size = text_config(read_model_config(config_path, needs=NEEDED_SHAPES)).get("vocab_size")
    if not isinstance(vocab_size, int) or vocab_size < 4:
        raise UserError(f"{config_path}: vocab_size is {vocab_size!r}, not a vocabulary size",
                        hint="pass the config.json of a Hugging Face Gemma 4 checkpoint")
    sequences = calibration_token_ids(calib, tokenizer=tokenizer, vocab_size=vocab_size, samples=samples,
                                      max_seq_len=max_seq_len)
    if not sequences:
        raise UserError("no calibration sequences", hint="pass --calib builtin or a file with samples")
    return sequences


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
        if is_unblockable(module.in_features, plan.scheme):
            kept[name] = f"{module.in_features} input features, not a multiple of the {block}-element block"
        elif not bool(module.weight.any()):
            kept[name] = "all-zero weight"
    return kept


def _with_exclusions(preset: dict[str, Any], exclusions: tuple[str, ...]) -> dict[str, Any]:
    """The preset with ``exclusions`` disabled; the preset object itself is left untouched."""
    config = copy.deepcopy(preset)  # not a JSON round trip: block_sizes has int keys (-1)
    config["quant_cfg"] = list(config["quant_cfg"]) + [{"quantizer_name": name, "enable": False} for name in exclusions]
    return config


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
