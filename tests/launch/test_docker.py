"""launch --docker: the published port, the Hugging Face home and token, and the image tag."""

import shlex

import pytest

from specdraft.errors import UserError
from specdraft.launch import docker_argv
from specdraft.planning import LaunchRequest, build_launch_plan

TARGET, DRAFT = "LilaRest/gemma-4-31B-it-NVFP4-turbo", "mikeytag/gemma-4-E2B-it-NVFP4"
IMAGE = "vllm/vllm-openai:v0.26.0"


pytestmark = pytest.mark.usefixtures("offline_empty_hub")


@pytest.fixture(scope="module")
def tree():
    from tools.release_trees import release_tree

    return release_tree("0.26.0", progress=lambda line: None)


def _plan(extra=(), **fields):
    return build_launch_plan(LaunchRequest(target=TARGET, draft=DRAFT, python="/nonexistent/python",
                                           extra_args=list(extra), **fields))


def _script(argv: list[str]) -> list[str]:
    return argv[argv.index("-c") + 1].split(" && ")


def _served(argv: list[str]) -> list[str]:
    return shlex.split(_script(argv)[-1].removeprefix("exec "))


@pytest.mark.parametrize("extra", [["--port", "8001"], ["--port=8001"], ["--port", "9", "--port", "8001"]])
def test_the_port_given_after_the_separator_is_the_one_published(extra):
    argv = docker_argv(_plan(extra), image=IMAGE, environ={})
    assert argv[argv.index("-p") + 1] == "127.0.0.1:8001:8001"
    served = _served(argv)
    assert [a for a in served if a.startswith("--port")] == [a for a in extra if a.startswith("--port")]
    assert "8000" not in served


def test_without_a_port_8000_is_served_and_published():
    argv = docker_argv(_plan(), image=IMAGE, environ={})
    assert argv[argv.index("-p") + 1] == "127.0.0.1:8000:8000" and _served(argv)[-2:] == ["--port", "8000"]


def test_a_port_that_is_not_a_port_is_bad_input():
    with pytest.raises(UserError, match="--port 'http' after -- is not a TCP port"):
        docker_argv(_plan(["--port", "http"]), image=IMAGE, environ={})


def test_hf_home_and_hub_cache_are_mounted_and_the_token_is_passed_by_name(tmp_path):
    environ = {"HF_HOME": str(tmp_path / "hf"), "HF_HUB_CACHE": str(tmp_path / "hub"), "HF_TOKEN": "hf_secret"}
    argv = docker_argv(_plan(), image=IMAGE, environ=environ)
    assert f"{tmp_path / 'hf'}:/root/.cache/huggingface" in argv
    assert f"{tmp_path / 'hub'}:/root/.cache/huggingface/hub" in argv
    pairs = list(zip(argv, argv[1:]))
    assert ("-e", "HF_TOKEN") in pairs and ("-e", "HF_HOME=/root/.cache/huggingface") in pairs
    assert ("-e", "HF_HUB_CACHE=/root/.cache/huggingface/hub") in pairs
    assert not any("hf_secret" in arg for arg in argv)  # docker copies the value; the command line never shows it


def test_without_hf_home_the_default_home_is_mounted(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    argv = docker_argv(_plan(), image=IMAGE, environ={})
    assert f"{tmp_path}/.cache/huggingface:/root/.cache/huggingface" in argv
    assert not any(arg.endswith("/root/.cache/huggingface/hub") for arg in argv)


def test_the_image_follows_the_planned_release(tree):
    plan = build_launch_plan(LaunchRequest(target=TARGET, draft=DRAFT, vllm_root=tree))
    assert docker_argv(plan, environ={})[-3] == "vllm/vllm-openai:v0.26.0"


def test_an_unknown_vllm_gives_no_image_but_a_refusal():
    with pytest.raises(UserError, match="the vLLM version is unknown here") as caught:
        docker_argv(_plan(), environ={})
    assert caught.value.hint.startswith("pass --image vllm/vllm-openai:v")


def test_the_entrypoint_installs_specdraft_alone_and_libcst_pinned_to_the_image():
    steps = _script(docker_argv(_plan(), image=IMAGE, environ={}))
    assert steps[0] == "python3 -m pip list --format=freeze > /tmp/specdraft-image-packages.txt"
    assert "python3 -m pip install --no-deps " in steps[1] or "python3 -m pip install --no-deps " in steps[2]
    assert "python3 -m pip install -c /tmp/specdraft-image-packages.txt 'libcst>=1.0' 'packaging>=23'" in steps
    assert steps[-3:-1] == ["python3 -m specdraft patch apply", "python3 -m specdraft patch verify"]


def test_the_cli_refuses_docker_without_a_known_vllm_in_one_line(specdraft_cli):
    done = specdraft_cli("launch", "--target", TARGET, "--draft", DRAFT, "--docker")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("specdraft: error: --docker: the vLLM version is unknown here")
    assert "vllm/vllm-openai:latest" not in done.stdout
