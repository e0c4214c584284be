"""Parameter counts of speculators-format drafters (EAGLE-3, DFlash, DSpark;
https://github.com/vllm-project/speculators) from their ``config.json``, for the memory plan of a drafter whose
weights are not on this machine.

The layout is the one vLLM builds from such a config (vllm/model_executor/models/llama_eagle3.py and
qwen3_dflash.py): ``num_hidden_layers`` Llama decoder layers of ``transformer_layer_config`` (EAGLE-3's first
layer projects the embedding and the hidden state side by side, so its q/k/v read twice the width), ``fc``
folding the target's aux hidden states (one per aux layer, 3 for EAGLE-3) into one, the final norm, an
``lm_head`` over the draft vocabulary (``draft_vocab_size``) and the embedding over the target's vocabulary,
which the published checkpoints ship: RedHatAI/gemma-4-31B-it-speculator.eagle3 counts 2,235,061,248
parameters this way, 4.47 GB in BF16, the "4.5 GB in BF16" its NVFP4 copy's card gives
(https://huggingface.co/AEON-7/gemma-4-31B-it-speculator.eagle3-NVFP4). A DSpark drafter is DFlash's layout plus
the Markov head vLLM builds from ``markov_rank`` (``DSparkMarkovHead`` in vllm/model_executor/models/qwen3_dspark.py:
``markov_w1`` over the target's vocabulary, ``markov_w2`` over the draft's, both ``markov_rank`` wide); its confidence
head is not loaded (vLLM skips ``confidence_head`` weights).
"""

from __future__ import annotations

from collections.abc import Mapping

_AUX_KEYS = ("eagle_aux_hidden_state_layer_ids", "aux_hidden_state_layer_ids")


def _positive(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def speculator_parameters(config: Mapping) -> int | None:
    """The drafter's parameter count, or None when ``config`` is no speculators config or lacks a shape."""
    kind = config.get("speculators_model_type")
    layer = config.get("transformer_layer_config")
    if not isinstance(kind, str) or not isinstance(layer, Mapping):
        return None
    width, mlp, layers, heads, kv_heads = (_positive(layer.get(k)) for k in (
        "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads"))
    head_dim = _positive(layer.get("head_dim")) or (width // heads if width and heads else None)
    vocab = _positive(layer.get("vocab_size"))
    if None in (width, mlp, layers, heads, kv_heads, head_dim, vocab):
        return None
    aux = next((config[k] for k in _AUX_KEYS if isinstance(config.get(k), list)), None)
    fused = len(aux) if aux else 3
    target_width = _positive(config.get("target_hidden_size")) or width
    draft_vocab = _positive(config.get("draft_vocab_size")) or vocab
    q, kv = heads * head_dim, kv_heads * head_dim

    def decoder(input_width: int) -> int:
        return input_width * (q + 2 * kv) + q * width + 3 * width * mlp + 2 * width

    eagle = kind in ("eagle3", "peagle")
    total = sum(decoder(2 * width if eagle and i == 0 else width) for i in range(layers))
    total += fused * target_width * width          # fc
    total += width * (2 if eagle else 1)           # final norm (+ EAGLE-3's hidden-state norm)
    total += draft_vocab * width + vocab * width   # lm_head, embed_tokens
    if kind == "dspark":
        total += (_positive(config.get("markov_rank")) or 0) * (vocab + draft_vocab)   # markov_w1, markov_w2
    return total
