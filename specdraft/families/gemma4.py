"""Gemma 4: tokens, chat-template variants, parsers, checkpoint kinds, layer shapes, quantization limits.

Token ids are those of the Gemma 4 tokenizers (``tokenizer_config.json`` of
https://huggingface.co/google/gemma-4-31B-it and its siblings: every size shares one tokenizer);
layer rules follow transformers' ``Gemma4TextConfig`` / ``modeling_gemma4.py`` and vLLM's
``vllm/model_executor/models/gemma4.py``.

Kinds of checkpoint:

- ``e-series`` (E2B, E4B): per-layer input embeddings, the last ``num_kv_shared_layers`` layers
  read an earlier layer's KV cache, an audio tower;
- ``moe`` (26B-A4B): a mixture-of-experts block in every layer;
- ``large`` (12B, 31B): dense; the 12B is the "unified" model (``gemma4_unified``: patch and audio embedders, no
  towers), whose text stack has the 31B's layer rules;
- ``assistant``: an MTP drafter (``gemma4_assistant``, the 12B's ``gemma4_unified_assistant``) whose layers all
  read the target's KV cache.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal, Mapping

from specdraft.families._family import LayerKV, ModelFamily, ParameterCount, text_config

Kind = Literal["e-series", "large", "moe", "assistant"]
TemplateVariant = Literal["e", "large"]
TEMPLATE_VARIANTS: tuple[TemplateVariant, ...] = ("e", "large")

BOS, EOS, PAD, UNK, MASK = "<bos>", "<eos>", "<pad>", "<unk>", "<mask>"
TURN_OPEN, TURN_CLOSE = "<|turn>", "<turn|>"
CHANNEL_OPEN, CHANNEL_CLOSE = "<|channel>", "<channel|>"
TOOL_OPEN, TOOL_CLOSE = "<|tool>", "<tool|>"
TOOL_CALL_OPEN, TOOL_CALL_CLOSE = "<|tool_call>", "<tool_call|>"
TOOL_RESPONSE_OPEN, TOOL_RESPONSE_CLOSE = "<|tool_response>", "<tool_response|>"
STRING_DELIMITER = '<|"|>'
"""Wraps every string value in tool declarations, calls and results."""
THINK = "<|think|>"
"""The thinking switch at the top of the system turn, not a delimiter."""
THOUGHT_LABEL = "thought\n"
"""What the model writes right after ``<|channel>``; left bare when a server skips special tokens."""

MARKER_PAIRS: Mapping[str, str] = {
    TURN_OPEN: TURN_CLOSE,
    CHANNEL_OPEN: CHANNEL_CLOSE,
    TOOL_OPEN: TOOL_CLOSE,
    TOOL_CALL_OPEN: TOOL_CALL_CLOSE,
    TOOL_RESPONSE_OPEN: TOOL_RESPONSE_CLOSE,
}
ROLES = ("system", "user", "model")
"""Turn roles: ``assistant`` renders as ``model``, a leading ``developer`` as ``system``."""

SPECIAL_TOKENS: Mapping[str, int] = {
    PAD: 0,
    EOS: 1,
    BOS: 2,
    UNK: 3,
    MASK: 4,
    # The ids of <|tool> and <tool|> were not seen in a published file; they sit just before <|tool_call>.
    TOOL_OPEN: 46,
    TOOL_CLOSE: 47,
    TOOL_CALL_OPEN: 48,
    TOOL_CALL_CLOSE: 49,
    TOOL_RESPONSE_OPEN: 50,
    TOOL_RESPONSE_CLOSE: 51,
    STRING_DELIMITER: 52,
    THINK: 98,
    CHANNEL_OPEN: 100,
    CHANNEL_CLOSE: 101,
    TURN_OPEN: 105,
    TURN_CLOSE: 106,
}
NEWLINE_ID = 107
NAMED_SPECIAL_TOKENS: Mapping[str, str] = {
    "bos_token": BOS, "eos_token": EOS, "pad_token": PAD, "unk_token": UNK, "mask_token": MASK,
}
"""The tokenizer's ``special_tokens_map``."""
STOP_TOKENS = (EOS, TURN_CLOSE)
"""The -it models' ``eos_token_id`` in config.json; generation_config.json adds ``<|tool_response>``."""
VOCAB_SIZE = 262144

MULTIMODAL_ARCHITECTURE = "Gemma4ForConditionalGeneration"
TEXT_ONLY_ARCHITECTURE = "Gemma4ForCausalLM"
ASSISTANT_ARCHITECTURE = "Gemma4AssistantForCausalLM"
TEXT_MODEL_TYPE = "gemma4_text"
ASSISTANT_MODEL_TYPE = "gemma4_assistant"
QUANTIZABLE_ARCHITECTURES = (MULTIMODAL_ARCHITECTURE, TEXT_ONLY_ARCHITECTURE)
"""The architectures ``specdraft quantize`` makes drafts of (the 12B's "unified" classes are not among them)."""

# vLLM builds the towers from transformers' AutoModel without quantization (vllm gemma4_mm.py), so
# their weights must stay BF16 in a checkpoint it loads.
UNQUANTIZED_TOWER_PREFIXES = ("model.vision_tower", "model.audio_tower", "vision_tower", "audio_tower")
# The multimodal embedders' projections, which vLLM quantizes unless the checkpoint excludes them
# (gemma4_mm.py: tower_quant = quant_config when the vision dims divide by 64).
EMBEDDER_PROJECTIONS = {"vision": "model.embed_vision.embedding_projection",
                        "audio": "model.embed_audio.embedding_projection"}
ALWAYS_EXCLUDED = ("*lm_head*", "*vision_tower*", "*embed_vision*", "*audio_tower*", "*embed_audio*")
"""Quantizer wildcards every quantized draft leaves out: the tied LM head, the towers and their projections."""

_SIZE_IN_NAME = re.compile(r"(?<![0-9a-z])(e2b|e4b|12b|26b-a4b|31b)(?![0-9a-z])")
ASSISTANT_SUFFIX = "-assistant"
# transformers' Gemma4UnifiedTextConfig builds the same decoder layers (modeling_gemma4_unified.py)
_LAYER_FORMULA_MODEL_TYPES = (None, TEXT_MODEL_TYPE, "gemma4", "gemma4_unified_text", "gemma4_unified")


class Gemma4(ModelFamily):
    name = "gemma4"
    display_name = "Gemma 4"
    model_types = frozenset({"gemma4", TEXT_MODEL_TYPE, ASSISTANT_MODEL_TYPE,
                             "gemma4_unified", "gemma4_unified_text", "gemma4_unified_assistant"})
    special_tokens = SPECIAL_TOKENS
    pairing_tokens = (BOS, EOS, PAD, TURN_OPEN, TURN_CLOSE, CHANNEL_OPEN, CHANNEL_CLOSE, THINK,
                      TOOL_CALL_OPEN, TOOL_CALL_CLOSE)
    # vLLM's gemma4 tool parser turns <|tool_call>call:NAME{...}<tool_call|> into tool_calls; its
    # reasoning parser moves <|channel>thought ...<channel|> into `reasoning`.
    tool_call_parser = "gemma4"
    reasoning_parser = "gemma4"
    template_files = {"e": "gemma4-e-series.jinja", "large": "gemma4-large.jinja"}
    base_repos = {
        "e2b": "google/gemma-4-E2B-it",
        "e4b": "google/gemma-4-E4B-it",
        "12b": "google/gemma-4-12B-it",
        "26b-a4b": "google/gemma-4-26B-A4B-it",
        "31b": "google/gemma-4-31B-it",
    }
    first_vllm = "0.19.0"
    text_only_architecture = TEXT_ONLY_ARCHITECTURE
    has_template_rules = True
    costs_file = Path(__file__).with_name("data") / "gemma4.costs.json"
    contexts_file = Path(__file__).with_name("data") / "gemma4.contexts.json"
    stack_fields = {"num_kv_shared_layers": "layers", "enable_moe_block": "flag"}
    top_fields = {"backbone_hidden_size": "width"}

    def is_moe(self, config: Mapping) -> bool:
        return bool(text_config(config).get("enable_moe_block"))

    def routed_experts(self, config: Mapping) -> tuple[int | None, int | None] | None:
        text = text_config(config)
        return (text.get("top_k_experts"), text.get("num_experts")) if self.is_moe(config) else None

    def draft_backbone_width(self, config: Mapping) -> int | None:
        # an assistant names the width of the target it reads (its own may be smaller: the 26B's)
        return config.get("backbone_hidden_size")

    def stack_problem(self, stack: Mapping) -> tuple[str, object, str] | None:
        layers, shared = stack.get("num_hidden_layers"), stack.get("num_kv_shared_layers")
        if layers is not None and shared is not None and shared > layers:
            return "num_kv_shared_layers", shared, f"more than num_hidden_layers ({layers})"
        return None

    def is_assistant(self, config: Mapping) -> bool:
        return "assistant" in (config.get("model_type") or "")

    def kind(self, config: Mapping) -> Kind:
        text = text_config(config)
        if self.is_assistant(config):
            return "assistant"
        if (text.get("hidden_size_per_layer_input") or 0) > 0:
            return "e-series"
        return "moe" if self.is_moe(config) else "large"

    def template_variant(self, config: Mapping) -> TemplateVariant:
        # The E-series template differs in its thinking-off generation prompt (no empty thought block).
        return "e" if (text_config(config).get("hidden_size_per_layer_input") or 0) > 0 else "large"

    def kv_layers(self, config: Mapping) -> list[LayerKV]:
        # Full-attention layers use `global_head_dim` and, only with `attention_k_eq_v`,
        # `num_global_key_value_heads`; an assistant's layers all read the target's cache. A k_eq_v layer
        # still caches V beside K: vLLM loads k_proj into both slots of qkv_proj and builds a plain
        # Attention of num_kv_heads (vllm 0.26.0 gemma4.py:408-410, 492-501, 522; the 12B's text stack
        # is that Gemma4ForCausalLM, gemma4_unified.py:297-301), whose pages hold 2 x heads x head_size
        # per token (v1/kv_cache_interface.py:204-218).
        text = text_config(config)
        count = int(text.get("num_hidden_layers") or 0)
        types = text.get("layer_types") or ["full_attention"] * count
        shared_from = count - (count if self.is_assistant(config) else int(text.get("num_kv_shared_layers") or 0))
        head_dim = int(text.get("head_dim") or 0)
        kv_heads = int(text.get("num_key_value_heads") or 0)
        global_heads = text.get("num_global_key_value_heads") if text.get("attention_k_eq_v") else None
        return [
            LayerKV(
                kind="full" if layer_type == "full_attention" else "sliding",
                kv_heads=int(global_heads or kv_heads) if layer_type == "full_attention" else kv_heads,
                head_dim=int(text.get("global_head_dim") or head_dim) if layer_type == "full_attention" else head_dim,
                shared=index >= shared_from,
            )
            for index, layer_type in enumerate(types)
        ]

    def has_layer_formula(self, config: Mapping) -> bool:
        """True when ``count_parameters`` knows this text stack (Gemma 4's and the 12B's unified one)."""
        text = text_config(config)
        return text.get("model_type") in _LAYER_FORMULA_MODEL_TYPES and "layer_types" in text

    def required_shape_keys(self, config: Mapping) -> tuple[str, ...]:
        # An assistant reads the target's KV cache and may leave its width to backbone_hidden_size (the 26B's).
        keys = ("num_hidden_layers", "num_key_value_heads", "head_dim", "vocab_size")
        if self.is_assistant(config):
            return keys
        keys += ("hidden_size",)
        if self.has_layer_formula(config):
            keys += ("num_attention_heads", "intermediate_size")
            if self.is_moe(config):
                keys += ("num_experts", "moe_intermediate_size", "top_k_experts")
        return keys

    def count_parameters(self, config: Mapping) -> ParameterCount:
        text = text_config(config)
        hidden, vocab, layers = text["hidden_size"], text["vocab_size"], text["num_hidden_layers"]
        tied = text.get("tie_word_embeddings", True)
        embedding = hidden * vocab
        total = embedding + hidden + (0 if tied else embedding)  # embedding, final norm, untied LM head
        lookup_only = 0 if tied else embedding
        table = per_layer_embedding_params(text)
        if table:
            per_layer_input = text["hidden_size_per_layer_input"]
            total += table + hidden * layers * per_layer_input + per_layer_input
            lookup_only += table  # one row per token is read, not the table
        total += _assistant_head_params(config, hidden) if self.is_assistant(config) else 0
        unpicked = 0
        for index in range(layers):
            params, idle = _layer_params(text, index)
            total += params
            unpicked += idle
        return ParameterCount(total=total, lookup_only=lookup_only, unpicked=unpicked, embedding=embedding)

    def embedding_params(self, config: Mapping) -> int:
        text = text_config(config)
        token_embedding = int(text.get("vocab_size") or 0) * int(text.get("hidden_size") or 0)
        return token_embedding + per_layer_embedding_params(text)

    def quantization_exclusions(self, config: Mapping) -> tuple[str, ...]:
        # transformers builds no k_proj/v_proj for KV-shared layers, but vLLM still builds a fused
        # qkv_proj whose NVFP4/FP8 global scale is the max over its shards: the missing k/v shards
        # would feed uninitialised memory into the q projection's scale. Their attention stays BF16.
        return ALWAYS_EXCLUDED + tuple(f"*layers.{i}.self_attn*" for i in self.kv_shared_layers(config))

    def base_repo_for(self, repo_id: str) -> str | None:
        match = _SIZE_IN_NAME.search(repo_id.lower())
        if match is None:
            return None
        base = self.base_repos[match.group(1)]
        return self.assistant_repo_for(base) if "assistant" in repo_id.lower() else base

    def assistant_repo_for(self, base_repo: str) -> str:
        return base_repo + ASSISTANT_SUFFIX


def per_layer_embedding_params(config: Mapping) -> int:
    """The E-series per-layer input embedding table (a lookup, never read whole); 0 for other kinds."""
    text = text_config(config)
    per_layer_input = text.get("hidden_size_per_layer_input") or 0
    if not per_layer_input:
        return 0
    vocab = text.get("vocab_size_per_layer_input") or text.get("vocab_size") or 0
    return int(vocab) * int(text.get("num_hidden_layers") or 0) * int(per_layer_input)


def _assistant_head_params(config: Mapping, hidden: int) -> int:
    """An MTP assistant's projections to and from its target's width (pre: the target's embedding and hidden
    state, concatenated), and its centroid head where it orders its vocabulary (``use_ordered_embeddings``)."""
    backbone = config.get("backbone_hidden_size") or hidden
    centroids = int(config.get("num_centroids") or 0) if config.get("use_ordered_embeddings") else 0
    return 3 * backbone * hidden + centroids * hidden


def _layer_params(text: Mapping, index: int) -> tuple[int, int]:
    """(all params, params of unpicked experts) of decoder layer ``index``."""
    hidden = text["hidden_size"]
    heads = text["num_attention_heads"]
    is_full = text["layer_types"][index] == "full_attention"
    k_eq_v = bool(text.get("attention_k_eq_v")) and is_full
    head_dim = text["global_head_dim"] if is_full and text.get("global_head_dim") else text["head_dim"]
    kv_heads = (text["num_global_key_value_heads"] if k_eq_v and text.get("num_global_key_value_heads")
                else text["num_key_value_heads"])
    shared = index >= text["num_hidden_layers"] - (text.get("num_kv_shared_layers") or 0)

    params = 2 * heads * head_dim * hidden + head_dim  # q_proj, o_proj, q_norm
    if not shared:  # KV-shared layers read another layer's cache: no k/v projections
        params += kv_heads * head_dim * hidden + head_dim  # k_proj, k_norm
        if not k_eq_v:
            params += kv_heads * head_dim * hidden  # v_proj
    intermediate = text["intermediate_size"] * (2 if shared and text.get("use_double_wide_mlp") else 1)
    params += 3 * hidden * intermediate + 4 * hidden  # gate/up/down, four norms
    per_layer_input = text.get("hidden_size_per_layer_input") or 0
    if per_layer_input:
        params += 2 * hidden * per_layer_input + hidden  # gate, projection, norm
    unpicked = 0
    if text.get("enable_moe_block"):
        experts, moe_inter = text["num_experts"], text["moe_intermediate_size"]
        per_expert = 3 * hidden * moe_inter
        params += hidden + experts + experts * hidden  # router scale, per-expert scale, projection
        params += experts * per_expert + 3 * hidden  # experts, three extra norms
        unpicked = (experts - text["top_k_experts"]) * per_expert
    return params, unpicked


GEMMA4 = Gemma4()
