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
from specdraft.paths import refuse_special_file

_MAX_HEADER_BYTES = 100 * 1024 * 1024
# Bytes per element of the whole-byte dtypes (safetensors' Dtype enum); sub-byte ones (F4, F6_*) are not size-checked.
_DTYPE_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1, "I16": 2, "U16": 2, "F16": 2,
                "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8, "C64": 8}
_REDOWNLOAD = "download the checkpoint again (a truncated or corrupt download), e.g. hf download REPO"


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
        for entry in _checked_entries(path):
            index[entry.name] = entry
    return index


def dtype_counts(index: dict[str, TensorEntry]) -> dict[str, int]:
    """How many tensors of each dtype, e.g. ``{"BF16": 120, "U8": 210, "F8_E4M3": 210, "F32": 420}``."""
    return dict(sorted(Counter(entry.dtype for entry in index.values()).items()))


def element_count(entry: TensorEntry) -> int:
    return prod(entry.shape)


def _read_header(path: Path) -> tuple[dict, int]:
    """The JSON header and the number of data bytes after it."""
    refuse_special_file(path, what="weights file", hint=_REDOWNLOAD)
    try:
        with open(path, "rb") as handle:
            raw_length = handle.read(8)
            if len(raw_length) != 8:
                raise UserError(f"{path} is not a safetensors file (shorter than its 8-byte header length)",
                                hint=_REDOWNLOAD)
            (length,) = struct.unpack("<Q", raw_length)
            if length > _MAX_HEADER_BYTES:
                raise UserError(f"{path} is not a safetensors file (header length {length} bytes)", hint=_REDOWNLOAD)
            raw = handle.read(length)
            size = path.stat().st_size
    except OSError as err:
        raise UserError(f"{path}: cannot read ({err.strerror})") from None
    try:
        header = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise UserError(f"{path}: unreadable safetensors header ({err})", hint=_REDOWNLOAD) from None
    if not isinstance(header, dict):
        raise UserError(f"{path}: the safetensors header is a JSON {type(header).__name__}, not an object",
                        hint=_REDOWNLOAD)
    return header, size - 8 - length


def _entry(path: Path, name: str, meta: object) -> TensorEntry:
    """One tensor's header entry, refused unless it has a dtype, a shape and a consistent byte range."""
    if not isinstance(meta, dict):
        raise UserError(f"{path}: tensor {name!r} is a JSON {type(meta).__name__} in the safetensors header, not an "
                        "object", hint=_REDOWNLOAD)
    missing = sorted({"dtype", "shape", "data_offsets"} - meta.keys())
    if missing:
        raise UserError(f"{path}: tensor {name!r} has no {', '.join(missing)} in the safetensors header",
                        hint=_REDOWNLOAD)
    offsets, shape, dtype = meta["data_offsets"], meta["shape"], meta["dtype"]
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(type(o) is int for o in offsets)
            and isinstance(shape, list) and all(type(d) is int and d >= 0 for d in shape) and isinstance(dtype, str)):
        raise UserError(f"{path}: tensor {name!r} has a malformed dtype, shape or data_offsets "
                        f"({dtype!r}, {shape!r}, {offsets!r})", hint=_REDOWNLOAD)
    start, end = offsets
    if start < 0 or end < start:
        raise UserError(f"{path}: tensor {name!r} has data_offsets {offsets} (negative or reversed)", hint=_REDOWNLOAD)
    width = _DTYPE_BYTES.get(dtype)
    if width is not None and end - start != prod(shape) * width:
        raise UserError(f"{path}: tensor {name!r} spans {end - start} bytes but {dtype} {shape} needs "
                        f"{prod(shape) * width}", hint=_REDOWNLOAD)
    return TensorEntry(name, dtype, tuple(shape), path.name, end - start)


def _checked_entries(path: Path) -> list[TensorEntry]:
    """Every tensor of one file, after checking the byte ranges fit the file and do not overlap."""
    header, data_bytes = _read_header(path)
    entries = sorted(((_entry(path, name, meta), tuple(meta["data_offsets"])) for name, meta in header.items()
                      if name != "__metadata__"), key=lambda pair: pair[1])
    for (before, (_, before_end)), (after, (after_start, _)) in zip(entries, entries[1:]):
        if after_start < before_end:
            raise UserError(f"{path}: tensors {before.name!r} and {after.name!r} overlap in the safetensors header",
                            hint=_REDOWNLOAD)
    claimed = entries[-1][1][1] if entries else 0
    if claimed > data_bytes:
        raise UserError(f"{path}: the header claims {claimed} bytes of tensor data but the file holds {data_bytes} "
                        "(a truncated download)", hint=_REDOWNLOAD)
    return [entry for entry, _ in entries]
