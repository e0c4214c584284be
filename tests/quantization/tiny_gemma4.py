"""Tiny random Gemma 4 models shaped like E2B (KV-shared tail, per-layer inputs, double-wide MLP), built here."""

from pathlib import Path

import torch

E2B_LIKE_LAYERS = ["sliding_attention"] * 4 + ["full_attention"] + ["sliding_attention"] * 4 + ["full_attention"]


def tiny_text_config():
    from transformers import Gemma4TextConfig

    return Gemma4TextConfig(
        vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=10,
        num_attention_heads=2, num_key_value_heads=1, head_dim=32, global_head_dim=64,
        hidden_size_per_layer_input=16, vocab_size_per_layer_input=512, num_kv_shared_layers=5,
        use_double_wide_mlp=True, layer_types=E2B_LIKE_LAYERS, sliding_window=16,
    )


def save_tiny(model, directory: Path, architecture: str) -> Path:
    """save_pretrained with the architecture a hub checkpoint names."""
    model.config.architectures = [architecture]
    model.save_pretrained(directory)
    return directory


def build_tiny_multimodal(directory: Path) -> Path:
    """A tiny random Gemma4ForConditionalGeneration (text + vision + audio) with the E2B-like text model."""
    from transformers import Gemma4Config, Gemma4ForConditionalGeneration
    from transformers.models.gemma4.configuration_gemma4 import Gemma4AudioConfig, Gemma4VisionConfig

    vision = Gemma4VisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                                num_key_value_heads=2, head_dim=16, global_head_dim=16)
    audio = Gemma4AudioConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, output_proj_dims=64)
    torch.manual_seed(0)
    model = Gemma4ForConditionalGeneration(Gemma4Config(text_config=tiny_text_config(), vision_config=vision, audio_config=audio))
    return save_tiny(model.to(torch.bfloat16), directory, "Gemma4ForConditionalGeneration")
