"""One JSON Lines reader for the files users hand in (bench prompts, calibration samples): the same errors."""

import pytest

from specdraft.bench import load_prompts
from specdraft.errors import UserError
from specdraft.jsonl import read_jsonl
from specdraft.quantization.calibration import _read_calibration_file


def test_blank_lines_are_skipped_and_line_numbers_kept(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"a": 1}\n\n  \n[2]\n')
    assert read_jsonl(path, what="file", hint="") == [(1, {"a": 1}), (4, [2])]


@pytest.mark.parametrize("read", [load_prompts, _read_calibration_file], ids=["prompts", "calibration"])
def test_each_reader_names_the_bad_line_a_binary_file_and_a_missing_one(tmp_path, read):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "x", "prompt": "x"}\n{oops\n')
    with pytest.raises(UserError, match=rf"^{bad}:2: not JSON"):
        read(bad)
    binary = tmp_path / "blob.jsonl"
    binary.write_bytes(bytes(range(256)))
    with pytest.raises(UserError, match="is not UTF-8 text"):
        read(binary)
    with pytest.raises(UserError, match="does not exist"):
        read(tmp_path / "missing.jsonl")
