"""Safe by default: the plan says who can reach the API, --docker publishes on this machine alone and passes the
API key by name, and no plan runs a checkpoint's own code."""

import json
import shlex

import pytest

from specdraft.errors import UserError
from specdraft.launch import docker_argv
from specdraft.planning import LaunchRequest, build_launch_plan
from tests.planning.conftest import shipped_config, write_checkpoint

TARGET, DRAFT = "LilaRest/gemma-4-31B-it-NVFP4-turbo", "mikeytag/gemma-4-E2B-it-NVFP4"
IMAGE = "vllm/vllm-openai:v0.26.0"


pytestmark = pytest.mark.usefixtures("offline_empty_hub")


def _plan(extra=(), **fields):
    return build_launch_plan(LaunchRequest(target=TARGET, draft=DRAFT, python="/nonexistent/python",
                                           extra_args=list(extra), **fields))


def _finding(plan, check):
    (finding,) = [f for f in plan.findings if f.check == check]
    return finding


def test_a_plan_without_a_key_on_every_interface_warns_with_both_fixes():
    finding = _finding(_plan(), "api-exposure")
    assert finding.level == "warning"
    assert "on every network interface (vLLM's default --host) with no API key" in finding.message
    assert "export VLLM_API_KEY=" in finding.hint and "--api-key" in finding.hint
    assert "-- --host 127.0.0.1" in finding.hint


@pytest.mark.parametrize("extra, said", [
    (["--host", "127.0.0.1"], "served on 127.0.0.1 only"),
    (["--host=localhost"], "served on localhost only"),
    (["--api-key", "k"], "requests need the API key given after --"),
])
def test_a_loopback_host_or_a_key_after_the_separator_needs_no_warning(extra, said):
    finding = _finding(_plan(extra), "api-exposure")
    assert finding.level == "ok" and said in finding.message


def test_a_key_in_the_environment_needs_no_warning_and_is_never_printed(monkeypatch, tmp_path):
    monkeypatch.setenv("VLLM_API_KEY", "sk-do-not-print")
    plan = _plan()
    assert _finding(plan, "api-exposure").level == "ok"
    argv = docker_argv(plan, image=IMAGE, environ={"HOME": str(tmp_path), "VLLM_API_KEY": "sk-do-not-print"})
    assert ("-e", "VLLM_API_KEY") in list(zip(argv, argv[1:]))
    assert not any("sk-do-not-print" in arg for arg in argv)
    assert "sk-do-not-print" not in json.dumps(plan.to_json_dict())


def test_a_wider_host_after_the_separator_still_warns():
    finding = _finding(_plan(["--host", "0.0.0.0"]), "api-exposure")
    assert finding.level == "warning" and "on 0.0.0.0 with no API key" in finding.message


def test_docker_publishes_on_this_machine_alone_unless_asked(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    argv = docker_argv(_plan(), image=IMAGE, environ={})
    assert argv[argv.index("-p") + 1] == "127.0.0.1:8000:8000"
    for asked, published in (("0.0.0.0", "0.0.0.0:8000:8000"), ("192.168.1.5", "192.168.1.5:8000:8000"),
                             ("::", "[::]:8000:8000")):
        argv = docker_argv(_plan(), image=IMAGE, environ={}, publish=asked)
        assert argv[argv.index("-p") + 1] == published


@pytest.mark.parametrize("address", ["everywhere", "1.2.3", "127.0.0.1:80", ""])
def test_a_publish_address_that_is_not_an_address_is_refused(address, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(UserError, match="is not an IP address"):
        docker_argv(_plan(), image=IMAGE, environ={}, publish=address)


def test_docker_refuses_a_loopback_host_inside_the_container(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(UserError, match="listen inside the container only"):
        docker_argv(_plan(["--host", "127.0.0.1"]), image=IMAGE, environ={})


def test_no_plan_passes_trust_remote_code_even_for_a_checkpoint_that_ships_code(tmp_path):
    config = shipped_config("google/gemma-4-31B-it")
    config["auto_map"] = {"AutoModelForCausalLM": "modeling_custom.CustomForCausalLM"}
    target = write_checkpoint(tmp_path / "custom", config)
    plan = build_launch_plan(LaunchRequest(target=str(target), draft=DRAFT))
    assert "--trust-remote-code" not in plan.argv
    finding = _finding(plan, "remote-code")
    assert finding.level == "warning" and f"{target} ships model code (auto_map in config.json)" in finding.message
    assert "does not pass --trust-remote-code" in finding.message and "-- --trust-remote-code" in finding.hint


def test_trust_remote_code_given_after_the_separator_is_passed_with_a_warning():
    plan = _plan(["--trust-remote-code"])
    assert plan.argv.count("--trust-remote-code") == 1
    assert "vLLM will run any model code" in _finding(plan, "remote-code").message


def test_the_cli_docker_command_publishes_on_loopback_and_refuses_publish_without_docker(specdraft_cli, tmp_path):
    target = write_checkpoint(tmp_path / "target", shipped_config("google/gemma-4-31B-it"))
    done = specdraft_cli("launch", "--target", str(target), "--draft", DRAFT, "--docker", "--image", IMAGE)
    argv = shlex.split(done.stdout)
    assert done.returncode == 0, done.stderr
    assert argv[argv.index("-p") + 1] == "127.0.0.1:8000:8000"
    done = specdraft_cli("launch", "--target", str(target), "--draft", DRAFT, "--docker", "--image", IMAGE,
                         "--publish-address", "0.0.0.0")
    assert shlex.split(done.stdout)[argv.index("-p") + 1] == "0.0.0.0:8000:8000"
    done = specdraft_cli("launch", "--target", str(target), "--draft", DRAFT, "--print", "--publish-address", "0.0.0.0")
    assert done.returncode == 2 and "--publish-address is where --docker publishes the port" in done.stderr
    assert not done.stdout
