"""Every command that reads a checkpoint's config.json refuses a field no model has the same way: exit 2, one
line naming the file, the field and the value, no traceback, nothing planned."""

import pytest

from specdraft.errors import ExitCode
from tests.planning.conftest import shipped_config, write_checkpoint

DRAFT = "google/gemma-4-E2B-it"
BROKEN = [("hidden_size", True, "hidden_size is true"), ("num_key_value_heads", 0, "num_key_value_heads is 0"),
          ("num_hidden_layers", -35, "num_hidden_layers is -35"), ("vocab_size", float("nan"), "vocab_size is NaN")]


def _one_line(done, *needles: str) -> None:
    assert done.returncode == ExitCode.BAD_INPUT, done.stderr + done.stdout
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    first = done.stderr.splitlines()[0]
    assert first.startswith("specdraft: error: ") and all(n in first for n in needles), done.stderr
    assert "GiB" not in done.stdout  # nothing was planned


def _broken(tmp_path, repo: str, field: str, value) -> str:
    config = shipped_config(repo)
    config["text_config"][field] = value
    directory = write_checkpoint(tmp_path / "m", config)
    return str(directory)


@pytest.mark.parametrize("role, field, value, said", [("--target", *case) for case in BROKEN]
                         + [("--draft", *BROKEN[1])])
def test_launch_refuses_a_checkpoint_whose_config_has_a_field_no_model_has(specdraft_cli, tmp_path, role, field,
                                                                          value, said):
    directory = _broken(tmp_path, "google/gemma-4-31B-it" if role == "--target" else DRAFT, field, value)
    pair = {"--target": "google/gemma-4-31B-it", "--draft": DRAFT, role: directory}
    done = specdraft_cli("launch", "--dry-run", "--hotfixes", "skip",
                         *[x for item in pair.items() for x in item])
    _one_line(done, f"{directory}/config.json: text_config.{said}")


@pytest.mark.parametrize("field, value, said", BROKEN[::3])
def test_quantize_refuses_a_config_with_a_field_no_model_has(specdraft_cli, tmp_path, field, value, said):
    directory = _broken(tmp_path, DRAFT, field, value)
    done = specdraft_cli("quantize", "--dry-run", "--model", directory, "--out", str(tmp_path / "out"),
                         "--calib", "random-tokens")
    _one_line(done, f"{directory}/config.json: text_config.{said}")
    assert not (tmp_path / "out").exists()


def test_tune_refuses_a_config_json_with_a_field_no_model_has(specdraft_cli, tmp_path):
    directory = _broken(tmp_path, DRAFT, "num_key_value_heads", 0)
    done = specdraft_cli("tune", "--per-position-acceptance", "0.8", "--shapes", "google/gemma-4-31B-it",
                         f"{directory}/config.json")
    _one_line(done, f"{directory}/config.json: text_config.num_key_value_heads is 0")


def test_a_deeply_nested_config_is_bad_input_not_an_internal_error(specdraft_cli, tmp_path):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "config.json").write_text("[" * 200_000 + "]" * 200_000)
    done = specdraft_cli("launch", "--dry-run", "--target", str(tmp_path / "t"), "--draft", DRAFT)
    _one_line(done, f"{tmp_path / 't' / 'config.json'}: JSON nested deeper than a reader follows")
