"""Real checkpoint directories (config.json, quantization metadata, safetensors files) for the tests."""

from __future__ import annotations

import ast
import copy
import json
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from specdraft.checkpoints import find_shape_facts


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


# Every GPU vLLM release on PyPI from 0.19.0 to 0.33.0: the releases the per-release tables are read from.
RELEASES = ["0.19.0", "0.19.1", "0.20.0", "0.20.1", "0.20.2", "0.21.0", "0.22.0", "0.22.1", "0.23.0", "0.24.0",
            "0.25.0", "0.25.1", "0.26.0", "0.27.0", "0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0",
            "0.33.0"]


@pytest.fixture(scope="module")
def release():
    """Factory: the unpacked sources of a published vLLM release (downloaded once into the cache)."""
    from tools.release_trees import release_tree

    return lambda version: release_tree(version, progress=lambda line: None)


@pytest.fixture
def empty_hub(tmp_path, monkeypatch):
    """An empty Hugging Face cache and no ``vllm`` on PATH: plans read the shipped facts and the given tree only."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")


def assert_every_release_read_once(rules: list[dict]) -> None:
    """A per-release table's rules were read from every release in ``RELEASES``, each once, inside its range."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    read = [version for rule in rules for version in rule["read"]]
    assert sorted(read, key=Version) == RELEASES
    for rule in rules:
        assert all(Version(v) in SpecifierSet(rule["versions"]) for v in rule["read"]), rule["versions"]
        assert not any(Version(v) in SpecifierSet(other["versions"]) for other in rules if other is not rule
                       for v in rule["read"]), rule["versions"]


def raised_messages(code: str) -> set[str]:
    """The text of every ``raise ValueError(...)`` in ``code``, f-string fields kept as ``{name}``."""
    messages = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
            text = ast.unparse(node.exc.args[0])
            messages.add(text[2:-1] if text.startswith("f") else text[1:-1])
    return messages


def dynamic_sd_utils(tree: Path) -> dict:
    """A release's ``vllm/v1/spec_decode/dynamic/utils.py`` run on its own (it imports nothing, so no vLLM package
    is imported): its schedule validator and expansion, as the release ships them."""
    namespace: dict = {}
    path = tree / "vllm" / "v1" / "spec_decode" / "dynamic" / "utils.py"
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace
