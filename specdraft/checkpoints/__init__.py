"""What a checkpoint is, read from its metadata alone: config.json, safetensors headers, tokenizer files.

``inspect_checkpoint`` takes a local directory or a Hugging Face repo id (read from the local hub
cache, never the network; a repo that is not on the machine falls back to the shipped shape facts in
``data/``). Planning and the tuner both read checkpoints through here, so neither depends on the other
for it. Nothing here imports torch, transformers' models or vllm.
"""

from specdraft.checkpoints._checkpoint import (
    Checkpoint, Quantization, estimate_weight_bytes, inspect_checkpoint, language_model_parameters,
)
from specdraft.checkpoints._references import REPO_ID_RULE, looks_like_path, reference_problem
from specdraft.checkpoints._published import (published_assistant, published_assistant_facts, published_drafters,
                                              published_speculators)
from specdraft.checkpoints._shape_facts import ShapeFacts, find_shape_facts, shipped_assistants, shipped_speculators

__all__ = [
    "Checkpoint", "Quantization", "REPO_ID_RULE", "ShapeFacts", "estimate_weight_bytes", "find_shape_facts",
    "inspect_checkpoint", "language_model_parameters", "looks_like_path", "published_assistant",
    "published_assistant_facts", "published_drafters", "published_speculators", "reference_problem",
    "shipped_assistants", "shipped_speculators",
]
