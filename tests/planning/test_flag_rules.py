"""Serve flag rules that depend on what a checkpoint ships."""

import pytest

from specdraft.planning import LaunchRequest, build_launch_plan
from tests.planning.conftest import shipped_config, write_checkpoint

DRAFT = "mikeytag/gemma-4-E2B-it-NVFP4"


@pytest.fixture(autouse=True)
def offline_empty_hub(tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")


def test_a_gemma4_pair_runs_without_trust_remote_code():
    plan = build_launch_plan(LaunchRequest(target="google/gemma-4-31B-it", draft=DRAFT))
    assert plan.serve.flag("--trust-remote-code") is None and "--trust-remote-code" not in plan.argv


def test_a_checkpoint_that_ships_model_code_gets_trust_remote_code_naming_it(tmp_path):
    config = shipped_config("google/gemma-4-31B-it")
    config["auto_map"] = {"AutoModelForCausalLM": "modeling_custom.CustomForCausalLM"}
    target = write_checkpoint(tmp_path / "custom", config)
    flag = build_launch_plan(LaunchRequest(target=str(target), draft=DRAFT)).serve.flag("--trust-remote-code")
    assert flag is not None and flag.reason == f"{target} ships model code (auto_map in config.json)"
