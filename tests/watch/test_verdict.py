"""The verdict and each alarm rule, with the counters it flags (and the ones it lets pass)."""

import json

import pytest

from specdraft.bench import SpecDecodeCounters
from specdraft.speed import predict_speedup, recommend
from specdraft.checkpoints import inspect_checkpoint
from specdraft.cli import main
from specdraft.errors import UserError
from specdraft.watch import break_even_length, costs_for, costs_from_plan, judge
from specdraft.watch._verdict import check_min_acceptance

COSTS = costs_for("draft_model", inspect_checkpoint("google/gemma-4-31B-it"), profile="h100")
FLOOR = break_even_length(COSTS, 3)


def counters(per_position, drafts=1000):
    return SpecDecodeCounters(drafts, 3 * drafts, sum(per_position), tuple(per_position))


def test_the_31b_pair_takes_its_measured_costs_and_its_break_even_is_a_step_cost():
    assert COSTS.basis.startswith("draft_model on h100: measured: host-cost entry vllm0.26-draft_model-e2b-async")
    assert "stand in" not in COSTS.basis
    assert 1.0 < FLOOR < 4.0
    accepted = (FLOOR - 1) * 1000  # at break-even, filled from the first position on (a position holds 1000)
    at_floor = judge(counters((min(accepted, 1000), min(max(accepted - 1000, 0), 1000), max(accepted - 2000, 0))),
                     COSTS)
    assert at_floor.speedup == pytest.approx(1.0) and not at_floor.attention


def test_rule_no_speculation_is_flagged():
    verdict = judge(None, COSTS)
    assert verdict.verdict == "no-speculation" and verdict.attention
    assert "--speculative-config" in verdict.reason


def test_a_window_without_drafts_is_idle_and_not_flagged():
    verdict = judge(counters((0, 0, 0), drafts=0), COSTS)
    assert verdict.verdict == "idle" and not verdict.attention and verdict.speedup is None


def test_rule_acceptance_below_break_even_is_flagged_and_loses():
    low = counters((50, 10, 0))  # mean acceptance length 1.06, what a quantized draft that misses gives
    verdict = judge(low, COSTS)
    assert verdict.mean_acceptance_length == pytest.approx(1.06)
    assert verdict.attention and verdict.verdict == "loses" and verdict.floor == pytest.approx(FLOOR)
    assert verdict.tuned_k == 0 and verdict.launch_flag.startswith("serve the target alone")


def test_good_acceptance_pays_and_names_tunes_k_with_its_launch_flag():
    good = counters((900, 750, 600))
    verdict = judge(good, COSTS)
    assert verdict.verdict == "pays" and not verdict.attention
    assert verdict.speedup == pytest.approx(predict_speedup((0.9, 0.75, 0.6), 3, COSTS.cost_ratio, COSTS.overhead,
                                                            COSTS.host))
    tuned = recommend((0.9, 0.75, 0.6), COSTS.cost_ratio, overhead=COSTS.overhead, host=COSTS.host, max_k=8)
    assert verdict.tuned_k == tuned.recommended_k > 0
    assert verdict.launch_flag == f"--num-speculative-tokens {tuned.recommended_k}"
    assert verdict.planned_speedup is not None and "assumed acceptance" in verdict.planned_source


def test_a_speedup_within_the_margin_is_marginal_and_not_flagged_above_the_floor():
    accepted = (FLOOR * 1.02 - 1) * 1000  # 2% above break-even
    near = SpecDecodeCounters(1000, 3000, accepted, (accepted * 0.6, accepted * 0.3, accepted * 0.1))
    verdict = judge(near, COSTS)
    assert verdict.verdict == "marginal" and not verdict.attention


def test_rule_a_given_floor_flags_a_window_that_pays():
    verdict = judge(counters((900, 750, 600)), COSTS, min_acceptance=3.5)
    assert verdict.verdict == "pays" and verdict.attention
    assert verdict.floor == 3.5 and verdict.floor_source == "--min-acceptance" and "below the floor" in verdict.reason


@pytest.mark.parametrize("value", [0.5, float("nan"), float("inf")])
def test_a_floor_that_is_not_a_mean_acceptance_length_is_refused(value):
    with pytest.raises(UserError, match="--min-acceptance"):
        check_min_acceptance(value)


def test_an_unmeasured_target_shape_says_whose_costs_stand_in():
    assert "not a measured shape" in costs_for("mtp", None, profile="h200").basis


def test_a_plan_gives_method_target_profile_and_k(tmp_path, capsys):
    main(["launch", "--target", "google/gemma-4-31B-it", "--draft", "google/gemma-4-E2B-it", "--profile", "h200",
          "--num-speculative-tokens", "4", "--dry-run", "--json"])
    plan = tmp_path / "plan.json"
    plan.write_text(capsys.readouterr().out)
    costs = costs_from_plan(plan)
    assert costs.method == "draft_model" and costs.planned_k == 4
    assert costs.basis.startswith("draft_model on h200 (from --plan") and "stand in" not in costs.basis
    assert costs == costs_for("draft_model", inspect_checkpoint("google/gemma-4-31B-it"), profile="h200",
                              how=f" (from --plan {plan})").model_copy(update={"planned_k": 4})


def test_a_file_that_is_not_a_plan_is_refused_with_the_command_that_makes_one(tmp_path):
    not_plan = tmp_path / "bench.json"
    not_plan.write_text(json.dumps({"levels": []}))
    with pytest.raises(UserError, match="is not a plan") as err:
        costs_from_plan(not_plan)
    assert "--dry-run --json" in err.value.hint
    with pytest.raises(UserError, match="does not exist"):
        costs_from_plan(tmp_path / "missing.json")
