"""The num_speculative_tokens tuner: S(K) = E(K) / (1 + K*c + o) over vLLM's unconditional acceptance."""

import math

import pytest

from specdraft.speed import (
    SchedulePoint,
    conditional_acceptance,
    extend_acceptance,
    fit_geometric_alpha,
    measured_overhead,
    overhead_fraction,
    predict_speedup,
    recommend,
    recommend_schedule,
)
from specdraft.errors import UserError


def geometric(alpha: float, k: int) -> list[float]:
    return [alpha ** (i + 1) for i in range(k)]


def closed_form_expected_tokens(alpha: float, gamma: int) -> float:
    return (1 - alpha ** (gamma + 1)) / (1 - alpha)


@pytest.mark.parametrize("alpha", [0.3, 0.7, 0.85, 0.95])
@pytest.mark.parametrize("k", [1, 4, 8])
def test_expected_tokens_match_leviathans_closed_form_for_constant_acceptance(alpha, k):
    rec = recommend(geometric(alpha, k), 0.1, max_k=k)
    assert rec.table[k - 1].expected_tokens_per_step == pytest.approx(closed_form_expected_tokens(alpha, k))


def test_users_2x_at_k4_means_alpha_071_when_a_draft_step_costs_a_tenth():
    assert predict_speedup(geometric(0.71, 4), 4, 0.10) == pytest.approx(2.0, abs=0.03)


@pytest.mark.parametrize("alpha,c", [(0.2, 0.25), (0.25, 0.25), (0.5, 0.6)])
def test_no_speculation_when_acceptance_does_not_exceed_the_cost_ratio(alpha, c):
    rec = recommend(geometric(alpha, 8), c, max_k=8)
    assert rec.recommended_k == 0 and not rec.speculate
    assert rec.predicted_speedup == 1.0
    assert any("do not speculate" in note for note in rec.notes)


@pytest.mark.parametrize("alpha,c", [(0.3, 0.25), (0.61, 0.6), (0.9, 0.05)])
def test_speculation_pays_when_acceptance_exceeds_the_cost_ratio(alpha, c):
    rec = recommend(geometric(alpha, 8), c, max_k=8)
    assert rec.recommended_k >= 1
    assert rec.predicted_speedup >= (1 + alpha) / (1 + c) > 1.0


def test_recommended_k_has_the_largest_predicted_speedup_of_the_table():
    rates = [0.9, 0.7, 0.45, 0.2, 0.1, 0.05]
    rec = recommend(rates, 0.15, max_k=6)
    best = max(rec.table, key=lambda row: row.predicted_speedup)
    assert rec.recommended_k == best.k == 3
    assert rec.predicted_speedup == pytest.approx(best.predicted_speedup)


def test_a_tie_goes_to_the_smaller_k():
    # S(1) = 2 / 1.25 = 1.6 and S(2) = 2.4 / 1.5 = 1.6: the second draft token pays exactly for itself
    rec = recommend([1.0, 0.4], 0.25, max_k=2)
    assert rec.table[0].predicted_speedup == pytest.approx(rec.table[1].predicted_speedup)
    assert rec.recommended_k == 1


def test_rising_acceptance_is_refused_as_probably_conditional():
    with pytest.raises(UserError, match="cannot rise") as err:
        recommend([0.6, 0.8], 0.1)
    assert "alpha_1 * ... * alpha_i" in err.value.hint


@pytest.mark.parametrize("bad", [[], [1.2], [-0.1], [float("nan")]])
def test_acceptance_outside_zero_one_or_empty_is_refused(bad):
    with pytest.raises(UserError):
        recommend(bad, 0.1)


@pytest.mark.parametrize("c,o", [(-0.1, 0.0), (0.1, -1.0), (float("inf"), 0.0), (float("nan"), 0.0)])
def test_negative_or_infinite_costs_are_refused(c, o):
    with pytest.raises(UserError):
        recommend([0.5], c, overhead=o)


def test_positions_past_the_measured_ones_are_flagged_extrapolated_and_explained():
    rec = recommend(geometric(0.8, 3), 0.05, max_k=6)
    assert [row.extrapolated for row in rec.table] == [False, False, False, True, True, True]
    assert rec.extrapolation.method == "geometric"
    assert rec.extrapolation.alpha == pytest.approx(0.8)
    assert "past 3 are extrapolated" in rec.extrapolation.explain()
    assert rec.table[3].acceptance == pytest.approx(0.8**4)
    assert any("measure it" in note for note in rec.notes)  # K = 6 is recommended but only extrapolated


def test_no_extrapolation_stops_at_the_measured_positions():
    rec = recommend(geometric(0.8, 3), 0.05, max_k=8, extrapolation="none")
    assert len(rec.table) == 3 and not any(row.extrapolated for row in rec.table)
    assert rec.extrapolation.method == "none"
    assert any("only 3 positions were measured" in note for note in rec.notes)


def test_geometric_fit_is_the_least_squares_line_through_the_origin_in_log_space():
    rates = [0.8, 0.6, 0.3]
    expected = math.exp((1 * math.log(0.8) + 2 * math.log(0.6) + 3 * math.log(0.3)) / (1 + 4 + 9))
    assert fit_geometric_alpha(rates) == pytest.approx(expected)
    extended, extrapolation = extend_acceptance(rates, 5)
    assert extended[3:] == pytest.approx([0.3 * expected, 0.3 * expected**2])  # anchored at the last measured rate
    assert extrapolation.alpha == pytest.approx(expected)


def test_a_position_never_accepted_extrapolates_to_zero():
    extended, extrapolation = extend_acceptance([0.5, 0.0], 4)
    assert extended == [0.5, 0.0, 0.0, 0.0]
    assert extrapolation.alpha == 0.0


def test_conditional_acceptance_divides_each_position_by_the_previous():
    assert conditional_acceptance([0.8, 0.4, 0.0, 0.0]) == pytest.approx([0.8, 0.5, 0.0, None])


def test_a_fixed_overhead_lowers_the_speedup_and_favours_longer_drafts():
    rates = geometric(0.85, 8)
    plain = recommend(rates, 0.18, max_k=8)
    burdened = recommend(rates, 0.18, max_k=8, overhead=1.0)
    assert burdened.predicted_speedup < plain.predicted_speedup
    assert burdened.recommended_k > plain.recommended_k
    assert burdened.table[3].step_cost == pytest.approx(1 + 4 * 0.18 + 1.0)


def test_overhead_in_ms_is_a_fraction_of_the_target_step():
    assert overhead_fraction(8.9, 17.8) == pytest.approx(0.5)
    with pytest.raises(UserError):
        overhead_fraction(1.0, 0.0)


def test_measured_overhead_reproduces_the_h200_draft_model_run_exactly():
    # device/README.md: 31B-shaped target 17.8 ms/token, E2B-shaped draft 3.2 ms, K = 4 at alpha 0.85 gave
    # 71.3 tok/s with mean acceptance length 3.43, against 56.2 tok/s for the target alone.
    overhead = measured_overhead(3.43, 4, 1000 / 71.3, 17.8, 3.2)
    assert overhead * 17.8 == pytest.approx(17.5, abs=0.1)  # ~17.5 ms of each step is fixed overhead
    a = [0.85, 0.85**2, 0.85**3, 3.43 - 1 - 0.85 - 0.85**2 - 0.85**3]  # any rates summing to the measured E
    assert predict_speedup(a, 4, 3.2 / 17.8, overhead) == pytest.approx(71.3 / 56.2, rel=0.01)


def test_a_run_faster_than_the_model_measures_zero_overhead():
    assert measured_overhead(3.0, 2, 4.0, 12.0, 1.0) == 0.0  # 12 ms per step < 12 + 2 * 1


def test_schedule_ranges_start_at_one_cover_each_measured_batch_size_and_merge_equal_ks():
    rates = tuple(geometric(0.85, 4))
    points = [
        SchedulePoint(1, rates, 0.1),
        SchedulePoint(4, rates, 0.1),  # same K as batch 1: merged
        SchedulePoint(16, rates, 0.5),
        SchedulePoint(64, rates, 0.95),  # drafting costs as much as the target: no speculation
    ]
    k_small = recommend(rates, 0.1).recommended_k
    k_mid = recommend(rates, 0.5).recommended_k
    assert k_small > k_mid > 0
    assert recommend_schedule(points) == [(1, 15, k_small), (16, 63, k_mid), (64, 64, 0)]


def test_schedule_refuses_duplicate_batch_sizes():
    with pytest.raises(UserError, match="distinct"):
        recommend_schedule([SchedulePoint(2, (0.5,), 0.1), SchedulePoint(2, (0.5,), 0.1)])


def test_json_holds_recommended_k_predicted_speedup_and_a_row_per_k():
    data = recommend(geometric(0.8, 4), 0.1, max_k=6).to_json()
    assert data["recommended_k"] == max(data["table"], key=lambda r: r["predicted_speedup"])["k"]
    assert [r["k"] for r in data["table"]] == [1, 2, 3, 4, 5, 6]
    assert data["extrapolation"]["method"] == "geometric"
    assert set(data["table"][0]) == {"k", "acceptance", "expected_tokens_per_step", "step_cost",
                                     "predicted_speedup", "extrapolated", "host_bound"}
