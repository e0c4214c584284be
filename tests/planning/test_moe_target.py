"""A Gemma 4 MoE target (26B-A4B) whose checkpoint stores each expert apart brings in the MoE hotfixes."""

from __future__ import annotations

import shutil

import pytest

from specdraft.planning import LaunchRequest, build_launch_plan
from specdraft.checkpoints import inspect_checkpoint
from specdraft.planning.facts.moe_layout import stores_experts_apart
from tools.release_trees import release_tree
from tools.testbed.tiny_moe import build_tiny_moe

PREFIX = "gemma4-moe-expert-prefix"
ASSISTANT = "google/gemma-4-26B-A4B-it-assistant"


@pytest.fixture(autouse=True)
def offline_empty_hub(tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module")
def tiny_moe(tmp_path_factory):
    return build_tiny_moe(tmp_path_factory.mktemp("tiny-moe"))


@pytest.mark.parametrize("ref, apart", [
    ("google/gemma-4-26B-A4B-it", False),  # Google's checkpoint: fused experts
    ("bg-digitalservices/Gemma-4-26B-A4B-it-NVFP4", True),  # per expert, under .moe.experts.{id}.
    ("nvidia/Gemma-4-26B-A4B-NVFP4", True),  # layout not published: cannot be ruled out
    ("google/gemma-4-31B-it", False),  # dense
])
def test_published_checkpoints_without_their_files(ref, apart):
    assert stores_experts_apart(inspect_checkpoint(ref, revision=None)) is apart


def test_a_checkpoint_on_disk_is_judged_by_its_tensor_names(tiny_moe):
    assert stores_experts_apart(inspect_checkpoint(str(tiny_moe.per_expert), revision=None))
    assert not stores_experts_apart(inspect_checkpoint(str(tiny_moe.fused), revision=None))


@pytest.mark.parametrize("target, needed", [("bg-digitalservices/Gemma-4-26B-A4B-it-NVFP4", True),
                                            ("google/gemma-4-26B-A4B-it", False)])
def test_a_per_expert_target_needs_the_prefix_hotfix_on_a_pending_release(tmp_path, target, needed):
    root = tmp_path / "site"
    shutil.copytree(release_tree("0.33.0", progress=lambda line: None), root)
    plan = build_launch_plan(LaunchRequest(target=target, draft=ASSISTANT, vllm_root=root, hotfixes="check"))
    (finding,) = [f for f in plan.findings if f.check == "hotfixes"]
    if needed:
        assert finding.level == "error" and f"{PREFIX} pending" in finding.message
    else:  # the MTP hotfix is fixed upstream in 0.33.0, and nothing else is needed
        assert finding.level == "ok", finding.message
    # each node checks the same hotfixes on its own vLLM before it starts
    assert (PREFIX in plan.nodes[0].script) == needed


@pytest.mark.parametrize("draft, k", [(ASSISTANT, 4), ("google/gemma-4-E2B-it", 1)])
def test_hopper_default_k_beside_a_moe_target_is_the_measured_one(draft, k):
    plan = build_launch_plan(LaunchRequest(target="google/gemma-4-26B-A4B-it", draft=draft, profile="h200"))
    assert plan.speculative.num_speculative_tokens == k
    flag = plan.serve.flag("--speculative-config")
    assert f"{k} draft tokens per step (" in flag.reason and "26B-A4B" in flag.reason and "section 6" in flag.reason


@pytest.mark.parametrize("target, draft", [("google/gemma-4-26B-A4B-it", "google/gemma-4-E2B-it"),
                                           ("bg-digitalservices/Gemma-4-26B-A4B-it-NVFP4", "mikeytag/gemma-4-E2B-it-NVFP4")])
def test_spark_default_k_for_a_draft_beside_a_moe_target_is_tunes_pick_from_active_parameters(target, draft):
    """Not measured on a DGX Spark: the default is what tune picks from the bytes each model reads per token
    (the target's active parameters) at alpha 0.85, the dense K = 4 being too long there."""
    from specdraft.speed import TuneRequest, tune

    report = tune(TuneRequest(shapes=(target, draft), per_position_acceptance=(0.85,)))
    plan = build_launch_plan(LaunchRequest(target=target, draft=draft, profile="dgx-spark"))
    assert plan.speculative.num_speculative_tokens == report.recommendation.recommended_k == 2
    assert "active parameters" in plan.serve.flag("--speculative-config").reason


@pytest.mark.parametrize("method, assistant", [("draft_model", False), ("mtp", True)])
def test_hopper_default_k_beside_a_moe_target_is_the_fastest_k_in_the_measured_rows(method, assistant):
    """The measured rows (docs/gpu/moe26.json, H200): the K fastest at both forced acceptances. For the E2B draft
    that is K = 1; K = 2 beats K = 4 at alpha 0.70 only (0.245x vs 0.228x) and every K loses to the target alone."""
    import json
    from pathlib import Path

    from specdraft.planning.decisions.k_choice import default_num_speculative_tokens

    rows = json.loads((Path(__file__).resolve().parents[2] / "docs/gpu/moe26.json").read_text())["rows"]
    for alpha in (0.85, 0.70):
        measured = {r["k"]: r["speedup"] for r in rows if r["method"] == method and r["alpha"] == alpha}
        assert max(measured, key=measured.get) == default_num_speculative_tokens("h200", assistant, "moe").k


def test_a_dense_target_keeps_its_own_default_k():
    plan = build_launch_plan(LaunchRequest(target="google/gemma-4-31B-it", draft=ASSISTANT.replace("26B-A4B", "31B"),
                                           profile="h200"))
    assert plan.speculative.num_speculative_tokens == 8


@pytest.mark.parametrize("target, draft, profile, warned", [
    ("google/gemma-4-26B-A4B-it", "google/gemma-4-E2B-it", "h100", True),  # measured: every K lost on Hopper
    ("google/gemma-4-26B-A4B-it", "google/gemma-4-E2B-it", "h200", True),
    ("google/gemma-4-26B-A4B-it", ASSISTANT, "h100", False),  # the MTP assistant won there
    ("google/gemma-4-26B-A4B-it", "google/gemma-4-E2B-it", "dgx-spark", False),  # not measured there
    ("google/gemma-4-31B-it", "google/gemma-4-E2B-it", "h100", False),  # dense target: 1.96x measured
])
def test_a_draft_model_beside_a_moe_target_on_hopper_is_warned_as_measured_slower(target, draft, profile, warned):
    plan = build_launch_plan(LaunchRequest(target=target, draft=draft, profile=profile))
    losses = [f for f in plan.findings if f.check == "measured-loss"]
    assert bool(losses) is warned
    if warned:
        (loss,) = losses
        assert loss.level == "warning" and "0.15-0.62x" in loss.message and ASSISTANT in loss.hint


@pytest.mark.parametrize("draft, gpus, profile, warned", [
    ("google/gemma-4-E2B-it", 2, "h100", True),  # measured at TP 2 on two H100s: 0.94x / 0.96x
    ("google/gemma-4-E2B-it", 4, "h200", True),
    ("google/gemma-4-E2B-it", 1, "h100", False),  # one GPU: 1.96x measured
    ("google/gemma-4-31B-it-assistant", 2, "h100", False),  # the MTP assistant won at TP 2 (3.45x)
    ("google/gemma-4-E2B-it", 2, "dgx-spark", False),  # not measured there
])
def test_a_draft_model_beside_a_tensor_parallel_target_on_hopper_is_warned_as_measured_slower(draft, gpus, profile,
                                                                                             warned):
    plan = build_launch_plan(LaunchRequest(target="google/gemma-4-31B-it", draft=draft, profile=profile,
                                           gpus_per_node=gpus))
    losses = [f for f in plan.findings if f.check == "measured-loss"]
    assert bool(losses) is warned
    if warned:
        (loss,) = losses
        assert "0.94x" in loss.message and "section 8" in loss.message
        assert loss.hint == "launch --draft google/gemma-4-31B-it-assistant"
