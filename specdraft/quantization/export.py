"""Writing a quantized checkpoint: ModelOpt's export into a staging directory, the source's config.json layout and
tokenizer files added, read back and checked, and only then moved to ``--out``."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

from specdraft.families.gemma4 import TEXT_MODEL_TYPE, TEXT_ONLY_ARCHITECTURE
from specdraft.errors import UserError
from specdraft.quantization.checks import check_quantization
from specdraft.quantization.inspect import read_quantization
from specdraft.quantization.plan import QuantizePlan

_TOKENIZER_FILES = (
    "tokenizer.json", "tokenizer_config.json", "tokenizer.model", "special_tokens_map.json",
    "chat_template.jinja", "chat_template.json", "processor_config.json", "preprocessor_config.json",
    "generation_config.json",
)
_PROCESSOR_FILES = ("processor_config.json", "preprocessor_config.json")
# ``.experts.{id}.`` of ModelOpt's export, not already preceded by ``.moe``.
_MODELOPT_EXPERT = re.compile(r"(?<!\.moe)\.experts\.(?=\d+\.)")


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


def export_checked(model: Any, plan: QuantizePlan, out_dir: Path, export_hf_checkpoint: Callable[..., Any],
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
