"""The tensor index of a safetensors checkpoint, read from the file headers only.

A safetensors file starts with an 8-byte little-endian header length and a JSON header naming
every tensor's dtype, shape and byte range, so dtypes, parameter counts and the memory a model
needs are known without torch and without reading a single weight.
"""

from __future__ import annotations

import json
import struct
from collections import Counter
from dataclasses import dataclass
from math import prod
from pathlib import Path

from specdraft.errors import UserError

_MAX_HEADER_BYTES = 100 * 1024 * 1024


@dataclass(frozen=True)
class TensorEntry:
    name: str
    dtype: str
    shape: tuple[int, ...]
    file: str
    nbytes: int


def safetensors_files(checkpoint_dir: Path) -> list[Path]:
    """The checkpoint's ``*.safetensors`` files, sorted; empty when there are none."""
    return sorted(Path(checkpoint_dir).glob("*.safetensors"))


def read_tensor_index(checkpoint_dir: Path) -> dict[str, TensorEntry]:
    """Every tensor of every ``*.safetensors`` file in ``checkpoint_dir``, by name."""
    index: dict[str, TensorEntry] = {}
    for path in safetensors_files(checkpoint_dir):
        for name, meta in _read_header(path).items():
            if name == "__metadata__":
                continue
            start, end = meta["data_offsets"]
            index[name] = TensorEntry(name, meta["dtype"], tuple(meta["shape"]), path.name, end - start)
    return index


def dtype_counts(index: dict[str, TensorEntry]) -> dict[str, int]:
    """How many tensors of each dtype, e.g. ``{"BF16": 120, "U8": 210, "F8_E4M3": 210, "F32": 420}``."""
    return dict(sorted(Counter(entry.dtype for entry in index.values()).items()))


def element_count(entry: TensorEntry) -> int:
    return prod(entry.shape)


def _read_header(path: Path) -> dict:
    with open(path, "rb") as handle:
        raw_length = handle.read(8)
        if len(raw_length) != 8:
            raise UserError(f"{path} is not a safetensors file (shorter than its 8-byte header length)")
        (length,) = struct.unpack("<Q", raw_length)
        if length > _MAX_HEADER_BYTES:
            raise UserError(f"{path} is not a safetensors file (header length {length} bytes)")
        try:
            return json.loads(handle.read(length))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise UserError(f"{path}: unreadable safetensors header ({err})") from None
