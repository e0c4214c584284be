"""Requests that would mislead if planned as asked: a swapped pair, prompt lookup longer at its shortest than at its
longest, data parallelism that would ask for more GPUs than the host has."""

import pydantic
import pytest

from specdraft.planning import LaunchRequest, build_launch_plan
from specdraft.planning.decisions.parallelism import TOPOLOGIES, check_parallel, plan_parallelism
from specdraft.planning.checks.release import check_draft_size
from tests.planning.conftest import shipped_config

TARGET, E2B = "google/gemma-4-31B-it", "google/gemma-4-E2B-it"


@pytest.fixture(autouse=True)
def offline_empty_hub(tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")


def test_a_draft_larger_than_its_target_is_refused_as_swapped_with_the_command_the_right_way_round():
    finding = check_draft_size("small", 4_630_000_000, "big", 30_700_000_000)
    assert finding.level == "error" and "target and draft swapped?" in finding.message
    assert finding.hint == "specdraft launch --target big --draft small ..."
    plan = build_launch_plan(LaunchRequest(target=E2B, draft=TARGET, python="/nonexistent/python"))
    assert plan.has_errors
    (size,) = [f for f in plan.findings if f.check == "draft-size"]
    assert size.level == "error" and f"--target {TARGET} --draft {E2B}" in size.hint


@pytest.mark.parametrize("low, high", [(5, 3), (2, 1)])
def test_prompt_lookup_min_above_max_is_refused(low, high):
    with pytest.raises(pydantic.ValidationError, match=f"prompt_lookup_min: {low} is above prompt_lookup_max {high}"):
        LaunchRequest(target=TARGET, method="ngram", prompt_lookup_min=low, prompt_lookup_max=high)
    assert LaunchRequest(target=TARGET, method="ngram", prompt_lookup_min=3, prompt_lookup_max=3)


@pytest.mark.parametrize("field", ["max_model_len", "max_num_seqs", "tensor_parallel_size", "data_parallel_size"])
@pytest.mark.parametrize("value", [0, -1])
def test_a_size_below_one_is_refused(field, value):
    with pytest.raises(pydantic.ValidationError, match=field):
        LaunchRequest(target=TARGET, draft=E2B, **{field: value})


@pytest.mark.parametrize("topology, dp, tp", [("h100-x8", 4, 2), ("h100-x8", 2, 4), ("h100-x8", 8, 1),
                                              ("h200-x4", 2, 2)])
def test_data_parallel_without_tp_takes_tp_from_the_gpus_each_copy_gets(topology, dp, tp):
    plan = plan_parallelism(TOPOLOGIES[topology], shipped_config(TARGET), shipped_config(E2B), data_parallel_size=dp)
    assert (plan.tensor_parallel_size, plan.data_parallel_size) == (tp, dp)
    assert not [f for f in check_parallel(plan, shipped_config(TARGET), None) if f.level == "error"]


def test_a_launch_with_data_parallel_on_a_host_plans_within_its_gpus():
    plan = build_launch_plan(LaunchRequest(target=TARGET, draft=E2B, profile="h100", gpus_per_node=8,
                                           data_parallel_size=4, python="/nonexistent/python"))
    argv = plan.argv
    assert argv[argv.index("--tensor-parallel-size") + 1] == "2" and argv[argv.index("--data-parallel-size") + 1] == "4"
    assert not [f for f in plan.findings if f.check == "parallel-sizes" and f.level == "error"]
