"""A small byte-level tokenizer that carries Gemma 4's special tokens at Gemma 4's own ids.

Every text round-trips (byte-level BPE), the chat markers (`<|turn>`, `<|channel>`, the tool
markers, `<|"|>`, ...) are single special tokens with the ids the real models use, and `"\\n"` is
token 107 as in Gemma 4. So a chat template renders and tokenizes here as it does for the real
models, and vLLM's Gemma 4 reasoning and tool parsers find their tokens by name.
"""

from __future__ import annotations

import json
from pathlib import Path

from specdraft.families.gemma4 import BOS, NAMED_SPECIAL_TOKENS, NEWLINE_ID, SPECIAL_TOKENS, UNK

# Words merged into single tokens (in this order) while vocabulary slots remain: the role names and
# the channel label first, so `<|turn>model\n` and `<|channel>thought\n` are three tokens each.
_WORDS = (
    "user", "model", "system", "thought", "call", "response", "declaration", "value",
    " the", " a", " is", " and", " to", " of", " you", " in", " it", " what", " Hello", " hello",
    " world", " please", " answer", " think", " weather", " city", " Paris", " sunny", "Hello",
    "What", " name", " tell", " me", " about", " two", " plus", " three",
)


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character map, the alphabet of byte-level BPE."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    printable += list(range(ord("®"), ord("ÿ") + 1))
    chars = printable[:]
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            chars.append(256 + extra)
            extra += 1
    return {byte: chr(char) for byte, char in zip(printable, chars)}


def _vocabulary(vocab_size: int) -> tuple[dict[str, int], list[tuple[str, str]]]:
    byte_chars = _bytes_to_unicode()
    reserved = max(SPECIAL_TOKENS.values()) + 1
    if vocab_size < reserved + 1 + 256:
        raise ValueError(f"vocab_size {vocab_size} is too small: Gemma 4's ids and 256 bytes need {reserved + 257}")
    vocab: dict[str, int] = {}
    by_id = {token_id: token for token, token_id in SPECIAL_TOKENS.items()}
    for token_id in range(reserved):
        vocab[by_id.get(token_id, f"<unused{token_id}>")] = token_id
    newline = byte_chars[ord("\n")]
    vocab[newline] = NEWLINE_ID
    for byte in range(256):
        if byte_chars[byte] != newline:
            vocab[byte_chars[byte]] = len(vocab)
    merges: list[tuple[str, str]] = []
    for word in _WORDS:
        encoded = "".join(byte_chars[b] for b in word.encode())
        needed = [encoded[: end] for end in range(2, len(encoded) + 1) if encoded[:end] not in vocab]
        if len(vocab) + len(needed) > vocab_size:
            break
        for end in range(2, len(encoded) + 1):
            prefix = encoded[:end]
            if prefix not in vocab:
                vocab[prefix] = len(vocab)
                merges.append((encoded[: end - 1], encoded[end - 1]))
    # Slots left over are plain, unreachable tokens (the real models have `<unusedN>` tokens too).
    while len(vocab) < vocab_size:
        vocab[f"<unused{len(vocab)}>"] = len(vocab)
    return vocab, merges


def write_tokenizer(out_dir: Path, vocab_size: int, model_max_length: int) -> None:
    """Write `tokenizer.json`, `tokenizer_config.json` and `special_tokens_map.json` into `out_dir`."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

    vocab, merges = _vocabulary(vocab_size)
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token=UNK))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens([AddedToken(token, special=True, normalized=False) for token in SPECIAL_TOKENS])
    # Like Gemma's tokenizer, a plain encode starts with <bos>; chat templates write <bos> themselves
    # and servers encode their output without special tokens.
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A $B", special_tokens=[(BOS, SPECIAL_TOKENS[BOS])]
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(out_dir / "tokenizer.json"))
    named = dict(NAMED_SPECIAL_TOKENS)
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": model_max_length,
        "add_bos_token": True,
        "add_eos_token": False,
        "padding_side": "left",
        "clean_up_tokenization_spaces": False,
        **named,
    }
    (out_dir / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")
    (out_dir / "special_tokens_map.json").write_text(json.dumps(named, indent=2) + "\n")
