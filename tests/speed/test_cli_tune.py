"""`specdraft tune` as a user runs it: JSON for machines, a table for people, one-line errors."""

import json
import pytest

from specdraft.cli import main

def tune(capsys, *args):
    code = main(["tune", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_gives_recommended_k_predicted_speedup_and_the_per_k_table(capsys):
    code, out, _ = tune(capsys, "--per-position-acceptance", "0.85,0.7225,0.614125,0.522006",
                        "--cost-ratio", "0.18", "--max-k", "4", "--json")
    data = json.loads(out)
    assert code == 0
    assert data["recommended_k"] == 4
    assert data["predicted_speedup"] == pytest.approx(3.7086 / 1.72, abs=1e-3)
    assert len(data["table"]) == 4 and data["extrapolation"]["method"] == "none"
    assert data["sources"] == {"acceptance": "given", "cost_ratio": "given", "overhead": "none modelled",
                               "host_cost": None}
    assert data["host_cost"] is None and not any(row["host_bound"] for row in data["table"])


def test_text_output_marks_the_recommended_and_the_extrapolated_rows(capsys):
    code, out, _ = tune(capsys, "--per-position-acceptance", "0.8,0.64", "--cost-ratio", "0.05", "--max-k", "4")
    assert code == 0
    assert out.startswith("recommended num_speculative_tokens: 4")
    assert "<- recommended" in out and "* extrapolated, not measured" in out
    assert "positions past 2 are extrapolated" in out


def test_overhead_in_ms_is_taken_relative_to_the_target_step(capsys):
    _, out, _ = tune(capsys, "--per-position-acceptance", "0.8", "--cost-ratio", "0.1",
                     "--overhead-ms", "5", "--target-step-ms", "20", "--json")
    data = json.loads(out)
    assert data["overhead"] == pytest.approx(0.25)
    assert data["table"][0]["step_cost"] == pytest.approx(1.35)


def test_cost_ratio_can_be_estimated_from_the_shapes_of_both_models(capsys):
    _, out, _ = tune(capsys, "--per-position-acceptance", "0.7,0.5", "--shapes",
                     "google/gemma-4-31B-it", "google/gemma-4-E2B-it", "--json")
    data = json.loads(out)
    assert data["cost_ratio"] == pytest.approx(0.0734, abs=0.001)
    assert data["sources"]["cost_ratio"].startswith("estimated from bytes read per token")


def test_no_speculation_is_a_recommendation_not_an_error(capsys):
    code, out, _ = tune(capsys, "--per-position-acceptance", "0.2,0.05", "--cost-ratio", "0.4", "--json")
    data = json.loads(out)
    assert code == 0 and data["recommended_k"] == 0 and data["speculate"] is False


def test_missing_cost_ratio_is_one_line_with_the_next_step(capsys):
    code, out, err = tune(capsys, "--per-position-acceptance", "0.8")
    assert code == 2 and out == ""
    assert err.splitlines() == [
        "specdraft: error: tune needs the cost ratio c of a draft step to a target step",
        "specdraft: next: add --cost-ratio C, --step-times DRAFT_ONLY.json TARGET_ONLY.json, "
        "--shapes TARGET DRAFT, or --host-costs NAME --target-step-ms MS",
    ]


def test_a_bench_result_that_does_not_exist_is_a_user_error(capsys, tmp_path):
    code, _, err = tune(capsys, "--from-bench", str(tmp_path / "missing.json"), "--cost-ratio", "0.1")
    assert code == 2 and "does not exist" in err and "Traceback" not in err


def test_a_file_that_is_not_a_bench_result_is_refused(capsys, tmp_path):
    path = tmp_path / "other.json"
    path.write_text('{"hello": 1}')
    code, _, err = tune(capsys, "--from-bench", str(path), "--cost-ratio", "0.1")
    assert code == 2 and "is not a specdraft bench result" in err


def test_an_empty_field_in_the_acceptance_list_is_refused_not_dropped(capsys):
    """0.8,,0.5 read as 0.8,0.5 would move 0.5 to position 2."""
    with pytest.raises(SystemExit) as exit_info:
        main(["tune", "--per-position-acceptance", "0.8,,0.5", "--cost-ratio", "0.1"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "field 2 of '0.8,,0.5' is empty" in err and "Traceback" not in err


@pytest.mark.parametrize("value", ["-0.99", "-0.1", "nan", "inf"])
def test_a_given_overhead_fraction_must_be_a_finite_number_at_least_zero(capsys, value):
    """o = -0.99 would make a step cost 0.01 target steps plus drafting: a 10x prediction."""
    code, out, err = tune(capsys, "--per-position-acceptance", "0.8", "--cost-ratio", "0.1",
                          "--overhead-fraction", value)
    assert code == 2 and out == ""
    assert err.splitlines()[0] == (f"specdraft: error: --overhead-fraction must be a finite number >= 0 "
                                   f"(target steps per speculative step), got {float(value)}")


@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf"])
def test_a_target_step_time_that_is_not_a_positive_number_is_refused(capsys, value):
    """With --host-costs it divided by zero (an internal error)."""
    code, _, err = tune(capsys, "--per-position-acceptance", "0.8", "--host-costs", "vllm0.26-mtp-31b-assistant",
                        "--target-step-ms", value)
    assert code == 2 and err.splitlines()[0] == (
        f"specdraft: error: --target-step-ms must be a finite number of ms > 0, got {float(value)}")


def test_max_k_is_bounded_so_tune_answers_at_once(capsys):
    """--max-k 100000000 built a hundred-million-row table (minutes, gigabytes)."""
    code, _, err = tune(capsys, "--per-position-acceptance", "0.8", "--cost-ratio", "0.1", "--max-k", "100000000")
    assert code == 2 and err.splitlines()[0] == "specdraft: error: --max-k must be between 1 and 64, got 100000000"


@pytest.mark.parametrize("option, value", [("--context", "-5"), ("--context", "0"), ("--concurrency", "0"),
                                           ("--max-k", "0")])
def test_a_size_below_one_is_refused_with_its_option(capsys, option, value):
    code, out, err = tune(capsys, "--per-position-acceptance", "0.8,0.6", "--shapes", "google/gemma-4-31B-it",
                          "google/gemma-4-E2B-it", option, value)
    assert code == 2 and not out
    assert f"error: tune: {option}: Input should be greater than or equal to 1 (got {value})" in err
