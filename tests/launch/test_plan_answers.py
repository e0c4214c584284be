"""Answers that must not mislead: a refused plan prints no command, --docker is never dropped, a missing path is
called missing (quantize's --model: tests/quantization/test_model_dir.py)."""

import shlex

import pytest

from tests.planning.conftest import shipped_config, write_checkpoint

DRAFT = "mikeytag/gemma-4-E2B-it-NVFP4"
IMAGE = "vllm/vllm-openai:v0.26.0"


@pytest.mark.parametrize("printing", [["--print"], ["--docker", "--image", IMAGE], ["--print", "--docker"]])
def test_a_refused_plan_prints_no_command_and_says_why_on_stderr(specdraft_cli, printing):
    done = specdraft_cli("launch", "--target", "./missing-checkpoint", "--draft", DRAFT, *printing)
    assert done.returncode == 1 and done.stdout == ""
    assert "ERROR  target-checkpoint" in done.stderr
    assert "specdraft: error: preflight found 1 error(s) (target-checkpoint); no command printed" in done.stderr


def test_a_refused_multi_node_plan_prints_no_node_commands(specdraft_cli):
    done = specdraft_cli("launch", "--target", "./missing-checkpoint", "--draft", DRAFT, "--nodes", "2", "--print")
    assert done.returncode == 1 and done.stdout == "" and "no command printed" in done.stderr


def test_docker_with_print_prints_the_docker_command(specdraft_cli, tmp_path):
    target = write_checkpoint(tmp_path / "target", shipped_config("google/gemma-4-31B-it"))
    done = specdraft_cli("launch", "--target", str(target), "--draft", DRAFT, "--docker", "--print", "--image", IMAGE)
    assert done.returncode == 0, done.stderr
    assert shlex.split(done.stdout)[:2] == ["docker", "run"]


@pytest.mark.parametrize("role", ["target", "draft"])
def test_a_missing_local_checkpoint_is_called_missing_without_a_download_hint(specdraft_cli, tmp_path, role):
    pair = {"target": "google/gemma-4-31B-it", "draft": DRAFT, role: "./not-here"}
    done = specdraft_cli("launch", "--target", pair["target"], "--draft", pair["draft"], "--dry-run")
    line = next(i for i, text in enumerate(done.stdout.splitlines()) if f"{role}-checkpoint" in text)
    lines = done.stdout.splitlines()
    assert f"{role} ./not-here: ./not-here: no such directory" in lines[line]
    assert "hf download" not in lines[line + 1] and "check the path" in lines[line + 1]


def test_a_local_checkpoint_path_that_is_a_file_says_so(specdraft_cli, tmp_path):
    (tmp_path / "a-file").write_text("not a checkpoint")
    done = specdraft_cli("launch", "--target", str(tmp_path / "a-file"), "--draft", DRAFT, "--dry-run")
    assert f"{tmp_path / 'a-file'}: is not a directory" in done.stdout
