"""Quantized checkpoint directories whose metadata mirrors real Gemma 4 NVFP4 repos.

The quantization blocks are the ones recorded for each repo (transcriptions and hub listings;
see the project's models research). Tensors are real safetensors files with the real names and
dtypes, shrunk to a few elements: the reader only looks at headers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

NVFP4_GROUP = {"dynamic": False, "num_bits": 4, "type": "float", "group_size": 16}


def nvfp4_linear(prefix: str) -> dict[str, torch.Tensor]:
    """The four tensors ModelOpt exports for one NVFP4 Linear layer."""
    return {
        f"{prefix}.weight": torch.zeros(32, 8, dtype=torch.uint8),
        f"{prefix}.weight_scale": torch.zeros(32, 1, dtype=torch.float8_e4m3fn),
        f"{prefix}.weight_scale_2": torch.zeros((), dtype=torch.float32),
        f"{prefix}.input_scale": torch.zeros((), dtype=torch.float32),
    }


def bf16(name: str) -> dict[str, torch.Tensor]:
    return {name: torch.zeros(4, 4, dtype=torch.bfloat16)}


def write_checkpoint(directory: Path, config: dict, tensors: dict[str, torch.Tensor], hf_quant_config: dict | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config, indent=2))
    if hf_quant_config is not None:
        (directory / "hf_quant_config.json").write_text(json.dumps(hf_quant_config, indent=2))
    if tensors:
        save_file(tensors, str(directory / "model.safetensors"))
    return directory


def nvidia_31b_nvfp4(directory: Path, *, ignore: list[str] | None = None, quantized_tower: bool = False) -> Path:
    """nvidia/Gemma-4-31B-IT-NVFP4: W4A4 MLPs, BF16 attention and vision tower, FP8 KV scheme."""
    if ignore is None:
        ignore = ["lm_head", "model.embed_vision*"]
        ignore += [f"model.language_model.layers.{i}.self_attn*" for i in range(60)]
        ignore += ["model.vision_tower*"]
    config = {
        "architectures": ["Gemma4ForConditionalGeneration"],
        "model_type": "gemma4",
        "text_config": {"model_type": "gemma4_text", "num_hidden_layers": 60},
        "vision_config": {"model_type": "gemma4_vision", "hidden_size": 1152},
        "audio_config": None,
        "quantization_config": {
            "config_groups": {"group_0": {"input_activations": NVFP4_GROUP, "targets": ["Linear"], "weights": NVFP4_GROUP}},
            "ignore": ignore,
            "kv_cache_scheme": {"dynamic": False, "num_bits": 8, "type": "float"},
            "producer": {"name": "modelopt", "version": "0.37.0"},
            "quant_algo": "NVFP4",
            "quant_method": "modelopt",
        },
    }
    tensors = {
        **nvfp4_linear("model.language_model.layers.0.mlp.down_proj"),
        **nvfp4_linear("model.language_model.layers.0.mlp.gate_proj"),
        **bf16("model.language_model.layers.0.self_attn.q_proj.weight"),
        **bf16("model.language_model.embed_tokens.weight"),
        **bf16("model.vision_tower.encoder.layers.0.mlp.fc1.weight"),
        **bf16("model.embed_vision.embedding_projection.weight"),
    }
    if quantized_tower:
        tensors.update(nvfp4_linear("model.vision_tower.encoder.layers.0.mlp.fc1"))
    return write_checkpoint(directory, config, tensors)


def bg_26b_nvfp4a16(directory: Path) -> Path:
    """bg-digitalservices/Gemma-4-26B-A4B-it-NVFP4A16 as transcribed: quant_algo NVFP4, no KV scheme."""
    ignore = ["lm_head", "model.embed_vision*"]
    ignore += [f"model.language_model.layers.{i}.router*" for i in range(30)]
    ignore += ["model.vision_tower*"]
    config = {
        "architectures": ["Gemma4ForConditionalGeneration"],
        "model_type": "gemma4",
        "transformers_version": "5.5.0",
        "text_config": {"model_type": "gemma4_text", "num_hidden_layers": 30},
        "vision_config": {"model_type": "gemma4_vision", "hidden_size": 1152},
        "quantization_config": {
            "config_groups": {"group_0": {"input_activations": NVFP4_GROUP, "targets": ["Linear"], "weights": NVFP4_GROUP}},
            "ignore": ignore,
            "producer": {"name": "modelopt", "version": "0.43.0rc2.dev57+g87ea8babe"},
            "quant_algo": "NVFP4",
            "quant_method": "modelopt",
        },
    }
    tensors = {
        **nvfp4_linear("model.language_model.layers.0.experts.down_proj"),
        **bf16("model.language_model.layers.0.router.proj.weight"),
        **bf16("model.vision_tower.encoder.layers.0.mlp.fc1.weight"),
        **bf16("model.embed_vision.embedding_projection.weight"),
    }
    return write_checkpoint(directory, config, tensors)


def coolthor_e4b_nvfp4a16(directory: Path) -> Path:
    """coolthor/Gemma-4-E4B-it-NVFP4A16: llm-compressor, compressed-tensors nvfp4-pack-quantized, weight-only."""
    config = {
        "architectures": ["Gemma4ForConditionalGeneration"],
        "model_type": "gemma4",
        "text_config": {"model_type": "gemma4_text", "num_hidden_layers": 42},
        "vision_config": {"model_type": "gemma4_vision", "hidden_size": 768},
        "audio_config": {"model_type": "gemma4_audio", "hidden_size": 1024},
        "quantization_config": {
            "quant_method": "compressed-tensors",
            "format": "nvfp4-pack-quantized",
            "quantization_status": "compressed",
            "version": "0.12.2",
            "config_groups": {
                "group_0": {
                    "targets": ["Linear"],
                    "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16,
                                "symmetric": True, "dynamic": False},
                    "input_activations": None,
                }
            },
            "ignore": ["lm_head", "re:.*vision_tower.*", "re:.*audio_tower.*", "re:.*embed_vision.*", "re:.*embed_audio.*"],
            "kv_cache_scheme": None,
        },
    }
    prefix = "model.language_model.layers.0.mlp.down_proj"
    tensors = {
        f"{prefix}.weight_packed": torch.zeros(32, 8, dtype=torch.uint8),
        f"{prefix}.weight_scale": torch.zeros(32, 1, dtype=torch.float8_e4m3fn),
        f"{prefix}.weight_global_scale": torch.zeros(1, dtype=torch.float32),
        **bf16("model.vision_tower.encoder.layers.0.mlp.fc1.weight"),
        **bf16("model.embed_vision.embedding_projection.weight"),
        **bf16("model.audio_tower.layers.0.feed_forward1.ffw_layer_1.weight"),
        **bf16("model.embed_audio.embedding_projection.weight"),
    }
    return write_checkpoint(directory, config, tensors)


def lilarest_31b_text_only(directory: Path) -> Path:
    """LilaRest/gemma-4-31B-it-NVFP4-turbo: text-only Gemma4ForCausalLM, attention FP4 too."""
    config = {
        "architectures": ["Gemma4ForCausalLM"],
        "model_type": "gemma4_text",
        "num_hidden_layers": 60,
        "quantization_config": {
            "config_groups": {"group_0": {"input_activations": NVFP4_GROUP, "targets": ["Linear"], "weights": NVFP4_GROUP}},
            "ignore": ["lm_head"],
            "producer": {"name": "modelopt", "version": "0.37.0"},
            "quant_algo": "NVFP4",
            "quant_method": "modelopt",
        },
    }
    tensors = {
        **nvfp4_linear("model.layers.0.self_attn.q_proj"),
        **nvfp4_linear("model.layers.0.mlp.down_proj"),
        **bf16("model.embed_tokens.weight"),
    }
    return write_checkpoint(directory, config, tensors)


def legacy_file_only(directory: Path, quant_algo: str) -> Path:
    """ModelOpt <= 0.29 layout: no quantization_config in config.json, only hf_quant_config.json."""
    config = {"architectures": ["Gemma4ForCausalLM"], "model_type": "gemma4_text"}
    hf_quant_config = {
        "producer": {"name": "modelopt", "version": "0.29.0"},
        "quantization": {"quant_algo": quant_algo, "kv_cache_quant_algo": "FP8", "group_size": 16,
                         "exclude_modules": ["lm_head"]},
    }
    return write_checkpoint(directory, config, nvfp4_linear("model.layers.0.mlp.down_proj"), hf_quant_config)


class Checkpoints:
    """Builds the mirrored checkpoints under one temporary directory, each in a folder of its own."""

    def __init__(self, root: Path):
        self.root = root

    def nvidia_31b_nvfp4(self, **kwargs) -> Path:
        return nvidia_31b_nvfp4(self.root / "nvidia-31b", **kwargs)

    def bg_26b_nvfp4a16(self) -> Path:
        return bg_26b_nvfp4a16(self.root / "bg-26b")

    def coolthor_e4b_nvfp4a16(self) -> Path:
        return coolthor_e4b_nvfp4a16(self.root / "coolthor-e4b")

    def lilarest_31b_text_only(self) -> Path:
        return lilarest_31b_text_only(self.root / "lilarest-31b")

    def legacy_file_only(self, quant_algo: str) -> Path:
        return legacy_file_only(self.root / f"legacy-{quant_algo.lower()}", quant_algo)

    def unquantized(self) -> Path:
        return write_checkpoint(self.root / "bf16", {"architectures": ["Gemma4ForCausalLM"]}, bf16("model.embed_tokens.weight"))


@pytest.fixture
def checkpoints(tmp_path: Path) -> Checkpoints:
    return Checkpoints(tmp_path)
