"""Real checkpoint directories (config.json, quantization metadata, safetensors files) for the tests."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from specdraft.planning._shape_facts import find_shape_facts


def shipped_config(repo_id: str) -> dict:
    facts = find_shape_facts(repo_id)
    assert facts is not None, repo_id
    return copy.deepcopy(facts.config)


def write_checkpoint(directory: Path, config: dict, *, tensors: dict[str, np.ndarray] | None = None,
                     hf_quant_config: dict | None = None, tokenizer_config: dict | None = None,
                     generation_config: dict | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config))
    if hf_quant_config is not None:
        (directory / "hf_quant_config.json").write_text(json.dumps(hf_quant_config))
    if tokenizer_config is not None:
        (directory / "tokenizer_config.json").write_text(json.dumps(tokenizer_config))
    if generation_config is not None:
        (directory / "generation_config.json").write_text(json.dumps(generation_config))
    if tensors:
        save_file(tensors, str(directory / "model.safetensors"))
    return directory


def gemma_tokenizer_config(**overrides: int) -> dict:
    ids = {"<pad>": 0, "<eos>": 1, "<bos>": 2, "<|turn>": 105, "<turn|>": 106, "<|channel>": 100, "<channel|>": 101}
    ids.update(overrides)
    return {"added_tokens_decoder": {str(i): {"content": name, "special": True} for name, i in ids.items()}}


@pytest.fixture
def checkpoint_dir(tmp_path):
    """Factory: a checkpoint directory made from a shipped config, with optional edits to text_config."""
    def make(name: str, repo_id: str, **kwargs) -> Path:
        config = shipped_config(repo_id)
        for key, value in kwargs.pop("text", {}).items():
            config["text_config"][key] = value
        return write_checkpoint(tmp_path / name, config, **kwargs)
    return make
