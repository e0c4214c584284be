"""Serve flag rules that depend on what a checkpoint ships."""

import pytest

from specdraft.planning import LaunchRequest, build_launch_plan

DRAFT = "mikeytag/gemma-4-E2B-it-NVFP4"


@pytest.fixture(autouse=True)
def offline_empty_hub(tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")


def test_a_gemma4_pair_runs_without_trust_remote_code():
    plan = build_launch_plan(LaunchRequest(target="google/gemma-4-31B-it", draft=DRAFT))
    assert plan.serve.flag("--trust-remote-code") is None and "--trust-remote-code" not in plan.argv


def test_a_checkpoint_that_ships_model_code_gets_no_trust_remote_code():
    # (the warning that names it: tests/launch/test_safe_defaults.py)
    from specdraft.planning import SERVE_FLAG_RULES

    assert "trust_remote_code" not in {rule.__name__ for rule in SERVE_FLAG_RULES}
