"""launch on input it cannot use: one line naming what and where, exit 2, never a traceback."""

import json
import struct

import pytest

from specdraft.errors import ExitCode

DRAFT = "google/gemma-4-E2B-it"


def _one_clear_line(done, *needles: str) -> None:
    assert done.returncode == ExitCode.BAD_INPUT, done.stderr + done.stdout
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    first = done.stderr.splitlines()[0]
    assert first.startswith("specdraft: error: ") and all(n in first for n in needles), done.stderr


@pytest.mark.parametrize("target", ["a;rm -rf /", "x --port 1", "a\nb", "'quoted'", '"q"'])
@pytest.mark.parametrize("role", ["--target", "--draft"])
def test_an_identifier_that_is_no_checkpoint_is_bad_input(specdraft_cli, role, target):
    pair = {"--target": "google/gemma-4-31B-it", "--draft": DRAFT, role: target}
    done = specdraft_cli("launch", *[x for item in pair.items() for x in item], "--dry-run")
    _one_clear_line(done, role[2:] + ": " + repr(target), "is not a local directory")


@pytest.mark.parametrize("content, kind", [("[1, 2]", "list"), ('"gemma"', "str"), ("7", "int")])
def test_a_config_json_that_is_not_an_object_is_bad_input(specdraft_cli, tmp_path, content, kind):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "config.json").write_text(content)
    done = specdraft_cli("launch", "--target", str(tmp_path / "t"), "--draft", DRAFT, "--dry-run")
    _one_clear_line(done, f"{tmp_path / 't' / 'config.json'}: a JSON {kind}, not an object")


def _checkpoint_with_header(tmp_path, header: dict, data_bytes: int):
    from tests.planning.conftest import shipped_config, write_checkpoint

    directory = write_checkpoint(tmp_path / "t", shipped_config("google/gemma-4-31B-it"))
    raw = json.dumps(header).encode()
    (directory / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * data_bytes)
    return directory


def test_a_safetensors_header_missing_keys_is_bad_input(specdraft_cli, tmp_path):
    directory = _checkpoint_with_header(tmp_path, {"w": {"dtype": "BF16", "data_offsets": [0, 8]}}, 8)
    done = specdraft_cli("launch", "--target", str(directory), "--draft", DRAFT, "--dry-run")
    _one_clear_line(done, str(directory / "model.safetensors"), "tensor 'w' has no shape")


def test_a_truncated_safetensors_download_is_refused_with_the_file_named(specdraft_cli, tmp_path):
    directory = _checkpoint_with_header(tmp_path, {"w": {"dtype": "BF16", "shape": [4096, 4096],
                                                         "data_offsets": [0, 2 * 4096 * 4096]}}, 1000)
    done = specdraft_cli("launch", "--target", str(directory), "--draft", DRAFT, "--dry-run")
    _one_clear_line(done, str(directory / "model.safetensors"), "claims 33554432 bytes", "holds 1000")


@pytest.mark.parametrize("role", ["--target", "--draft", "--chat-template"])
def test_a_home_of_a_user_that_does_not_exist_is_bad_input(specdraft_cli, role):
    values = {"--target": "google/gemma-4-31B-it", "--draft": DRAFT, role: "~no-such-user-here/x"}
    done = specdraft_cli("launch", *[x for item in values.items() for x in item], "--dry-run")
    _one_clear_line(done, "~no-such-user-here/x", "cannot expand '~'")


def test_a_chat_template_that_is_not_utf8_is_bad_input(specdraft_cli, tmp_path):
    template = tmp_path / "t.jinja"
    template.write_bytes(b"{{ messages }}\xff\xfe")
    done = specdraft_cli("launch", "--target", "google/gemma-4-31B-it", "--draft", DRAFT,
                         "--chat-template", str(template), "--dry-run")
    _one_clear_line(done, str(template), "not UTF-8 text")
