"""What a checkpoint directory holds beside config.json, read without loading anything: the weights' size (the
safetensors headers, else the index file) and the special token ids (config.json, generation_config.json, the
tokenizer files)."""

from __future__ import annotations

import json
from pathlib import Path

from specdraft.errors import UserError
from specdraft.families import rules_for
from specdraft.safetensors_index import read_tensor_index, safetensors_files

TOKENIZER_HEAD_BYTES = 8 * 2**20


def read_json_beside(path: Path) -> dict | None:
    """A JSON object file beside config.json; None when missing, not a regular file (a FIFO would wait for a
    writer) or unparsable; a file that holds another JSON value is refused."""
    if not path.is_file():
        return None
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(value, dict):
        raise UserError(f"{path}: a JSON {type(value).__name__}, not an object; not a checkpoint file",
                        hint=f"check {path.name}, or download the checkpoint again")
    return value


def safetensors_bytes(directory: Path) -> int | None:
    """Sum of tensor bytes from the safetensors headers, else the index file's ``total_size``."""
    if not safetensors_files(directory):
        index = read_json_beside(directory / "model.safetensors.index.json") or {}
        total = (index.get("metadata") or {}).get("total_size")
        return int(total) if total else None
    return sum(entry.nbytes for entry in read_tensor_index(directory).values())


def special_token_ids(directory: Path, config: dict) -> tuple[dict[str, int], tuple[int, ...]]:
    text = config.get("text_config") or config
    ids = {name: text[key] for name, key in (("bos", "bos_token_id"), ("pad", "pad_token_id"))
           if type(text.get(key)) is int}
    eos = config.get("eos_token_id", text.get("eos_token_id"))
    generation = read_json_beside(directory / "generation_config.json") if directory else None
    if generation and generation.get("eos_token_id") is not None:
        eos = generation["eos_token_id"]
    eos_ids = tuple(i for i in (eos if isinstance(eos, list) else [eos]) if type(i) is int)
    tokenizer = read_json_beside(directory / "tokenizer_config.json") if directory else None
    decoder = (tokenizer or {}).get("added_tokens_decoder")
    added = [{"id": int(i), **t} for i, t in (decoder.items() if isinstance(decoder, dict) else ())
             if isinstance(t, dict) and i.isdecimal()]
    if not added and directory:
        added = _tokenizer_json_added_tokens(directory / "tokenizer.json")
    # The draft reuses the target's tokenizer, so a draft trained with other ids for these proposes
    # the wrong tokens.
    pairing = rules_for(config).pairing_tokens
    for token in added:
        # an id that is not a whole number (true, 1.5, NaN) names no token
        if token.get("content") in pairing and type(token.get("id")) is int:
            ids[token["content"]] = int(token["id"])
    return ids, eos_ids


def _tokenizer_json_added_tokens(path: Path) -> list[dict]:
    """``added_tokens`` of a tokenizer.json, read from the file's head (it precedes the large vocab)."""
    if not path.is_file():
        return []
    try:
        with path.open("rb") as handle:
            head = handle.read(TOKENIZER_HEAD_BYTES).decode("utf-8", errors="ignore")
    except OSError:
        return []
    start = head.find('"added_tokens"')
    if start < 0:
        return []
    try:
        tokens, _ = json.JSONDecoder().raw_decode(head, head.index("[", start))
    except ValueError:
        return []
    return [t for t in tokens if isinstance(t, dict) and "id" in t]
