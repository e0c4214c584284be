"""Safetensors headers: a truncated or inconsistent file is refused with its name, never counted."""

import json
import struct

import numpy as np
import pytest
from safetensors.numpy import save_file

from specdraft.errors import UserError
from specdraft.safetensors_index import read_tensor_index


def _write(path, header: dict, data_bytes: int) -> None:
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * data_bytes)


def _refusal(tmp_path, header, data_bytes) -> str:
    _write(tmp_path / "model-00001-of-00002.safetensors", header, data_bytes)
    with pytest.raises(UserError) as caught:
        read_tensor_index(tmp_path)
    assert "model-00001-of-00002.safetensors" in caught.value.message
    return caught.value.message


def test_a_real_file_reads_back(tmp_path):
    save_file({"a": np.zeros((4, 8), dtype=np.float32), "b": np.zeros(16, dtype=np.uint8)},
              str(tmp_path / "model.safetensors"))
    index = read_tensor_index(tmp_path)
    assert {name: (e.dtype, e.shape, e.nbytes) for name, e in index.items()} == {
        "a": ("F32", (4, 8), 128), "b": ("U8", (16,), 16)}


def test_a_truncated_download_is_refused(tmp_path):
    save_file({"a": np.zeros((64, 64), dtype=np.float32)}, str(tmp_path / "whole.safetensors"))
    raw = (tmp_path / "whole.safetensors").read_bytes()
    (tmp_path / "whole.safetensors").unlink()
    (tmp_path / "model-00001-of-00002.safetensors").write_bytes(raw[:-100])
    with pytest.raises(UserError, match=r"model-00001-of-00002.safetensors: the header claims 16384 bytes of tensor "
                                        r"data but the file holds 16284 \(a truncated download\)"):
        read_tensor_index(tmp_path)


def test_header_only_file_is_refused(tmp_path):
    message = _refusal(tmp_path, {"w": {"dtype": "BF16", "shape": [1024, 1024], "data_offsets": [0, 2 * 2**20]}}, 0)
    assert "claims 2097152 bytes of tensor data but the file holds 0" in message


def test_negative_offsets_are_refused(tmp_path):
    message = _refusal(tmp_path, {"w": {"dtype": "U8", "shape": [0], "data_offsets": [-8, -8]}}, 0)
    assert "negative or reversed" in message


def test_overlapping_tensors_are_refused(tmp_path):
    header = {"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
              "b": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}}
    assert "tensors 'a' and 'b' overlap" in _refusal(tmp_path, header, 24)


def test_a_range_that_disagrees_with_dtype_and_shape_is_refused(tmp_path):
    header = {"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 8]}}
    assert "tensor 'a' spans 8 bytes but F32 [4] needs 16" in _refusal(tmp_path, header, 8)


@pytest.mark.parametrize("meta, missing", [({"shape": [4], "data_offsets": [0, 16]}, "dtype"),
                                           ({"dtype": "F32", "data_offsets": [0, 16]}, "shape"),
                                           ({"dtype": "F32", "shape": [4]}, "data_offsets")])
def test_an_entry_missing_keys_is_refused(tmp_path, meta, missing):
    assert f"tensor 'a' has no {missing}" in _refusal(tmp_path, {"a": meta}, 16)


def test_an_entry_that_is_not_an_object_is_refused(tmp_path):
    assert "tensor 'a' is a JSON str in the safetensors header" in _refusal(tmp_path, {"a": "F32"}, 16)


@pytest.mark.parametrize("header", [[1, 2], "text", 7])
def test_a_header_that_is_not_an_object_is_refused(tmp_path, header):
    assert "the safetensors header is a JSON" in _refusal(tmp_path, header, 0)
