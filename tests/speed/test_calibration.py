"""tune's inputs from saved bench results: acceptance, c from step times, the per-step overhead."""

import json

import pytest

from specdraft.bench import BenchResult, LevelResult, SpecDecodeCounters, Summary
from specdraft.speed import (
    acceptance_from_result,
    cost_ratio_from_results,
    fit_step_costs,
    overhead_from_results,
    predict_speedup,
    speculative_step_ms,
    step_ms,
)
from specdraft.cli import main
from specdraft.errors import UserError


def result(name: str, decode_by_concurrency: dict[int, float], spec: dict[int, SpecDecodeCounters] | None = None):
    levels = tuple(
        LevelResult(n, 4, 1024, 1.0, rate * n, rate, Summary(*(1000 / rate,) * 5), None, None,
                    None if spec is None else spec[n])
        for n, rate in decode_by_concurrency.items()
    )
    return BenchResult(f"http://{name}", name, 256, 0.0, "built-in", 8, levels, spec is not None)


# H200 figures from shared/device/README.md: 31B-shaped target 56.2 tok/s, E2B-shaped draft 313 tok/s,
# K = 4 at alpha 0.85: 71.3 tok/s, mean acceptance length 3.43 (243 tokens accepted per 100 drafts).
H200_SPEC = SpecDecodeCounters(100, 400, 243, (85, 68, 54, 36))
TARGET = result("target", {1: 56.2, 4: 50.0})
DRAFT = result("draft", {1: 313.0, 4: 250.0})
SPEC = result("spec", {1: 71.3, 4: 60.0}, {1: H200_SPEC, 4: H200_SPEC})


def test_step_time_of_a_plain_server_is_its_time_per_decoded_token():
    assert step_ms(TARGET) == pytest.approx(1000 / 56.2)
    assert step_ms(TARGET, 4) == pytest.approx(20.0)


def test_a_speculative_run_is_refused_as_a_step_time():
    with pytest.raises(UserError, match="comes from a speculative server"):
        step_ms(SPEC)


def test_cost_ratio_of_the_h200_pair_is_0_18():
    assert cost_ratio_from_results(DRAFT, TARGET) == pytest.approx(56.2 / 313, abs=1e-9)
    assert cost_ratio_from_results(DRAFT, TARGET) == pytest.approx(0.18, abs=0.001)


def test_acceptance_is_pooled_over_levels_or_taken_at_one():
    assert acceptance_from_result(SPEC) == pytest.approx((0.85, 0.68, 0.54, 0.36))
    assert acceptance_from_result(SPEC, 4) == pytest.approx((0.85, 0.68, 0.54, 0.36))
    with pytest.raises(UserError, match="has no run at concurrency 2"):
        acceptance_from_result(SPEC, 2)


def test_a_result_without_speculation_has_no_acceptance_to_tune_on():
    with pytest.raises(UserError, match="ran without speculative decoding"):
        acceptance_from_result(TARGET)


def test_the_h200_run_spends_about_17_ms_a_step_on_overhead():
    overhead = overhead_from_results(SPEC, DRAFT, TARGET)
    assert overhead * 1000 / 56.2 == pytest.approx(3.43 * 1000 / 71.3 - 1000 / 56.2 - 4 * 1000 / 313, abs=1e-6)
    assert overhead == pytest.approx(0.98, abs=0.02)


def test_tune_with_measured_overhead_reproduces_the_measured_speedup_at_the_measured_k(tmp_path, capsys):
    paths = {}
    for name, res in (("spec", SPEC), ("draft", DRAFT), ("target", TARGET)):
        paths[name] = tmp_path / f"{name}.json"
        res.save(paths[name])
    code = main(["tune", "--from-bench", str(paths["spec"]), "--step-times", str(paths["draft"]), str(paths["target"]),
                 "--measure-overhead", "--concurrency", "1", "--max-k", "4", "--schedule", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert data["table"][3]["predicted_speedup"] == pytest.approx(71.3 / 56.2, rel=1e-3)
    assert data["measured"]["k"] == 4
    assert data["measured"]["measured_speedup"] == pytest.approx(71.3 / 56.2, rel=1e-3)
    assert data["measured"]["prediction_error"] == pytest.approx(0.0, abs=1e-3)
    assert data["num_speculative_tokens_per_batch_size"][0][0] == 1
    assert data["sources"]["overhead"].startswith("measured")


def test_without_overhead_the_textbook_model_overpredicts_the_h200_run(tmp_path, capsys):
    paths = {}
    for name, res in (("spec", SPEC), ("draft", DRAFT), ("target", TARGET)):
        paths[name] = tmp_path / f"{name}.json"
        res.save(paths[name])
    main(["tune", "--from-bench", str(paths["spec"]), "--step-times", str(paths["draft"]), str(paths["target"]),
          "--concurrency", "1"])
    out = capsys.readouterr().out
    # E = 3.43 over 1 + 4 * 0.1796 = 1.718 target steps: 2.00x predicted against 1.27x measured
    assert "measured at K = 4 (the benched server): 1.27x decode speedup; predicted 2.00x (+57.4%)" in out


def test_a_schedule_prices_an_overhead_in_ms_against_each_batch_sizes_target_step(tmp_path, capsys):
    paths = {}
    for name, res in (("spec", SPEC), ("draft", DRAFT), ("target", TARGET)):
        paths[name] = tmp_path / f"{name}.json"
        res.save(paths[name])
    # 31 ms is 1.74 target steps at concurrency 1 (17.8 ms): K = 4 gives 0.99x there; at concurrency 4 it is
    # 1.55 target steps (20 ms) and K = 4 gives 1.02x
    code = main(["tune", "--from-bench", str(paths["spec"]), "--step-times", str(paths["draft"]), str(paths["target"]),
                 "--overhead-ms", "31", "--schedule", "--max-k", "4", "--no-extrapolation", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert data["overhead"] == pytest.approx(31 / (1000 / 56.2))
    assert data["num_speculative_tokens_per_batch_size"] == [[1, 3, 0], [4, 4, 4]]


# shared/device/README.md, alpha 0.85 on the H200: K = 2 gave 54.2 tok/s at mean acceptance length 2.53,
# K = 4 gave 71.3 tok/s at 3.43; the target alone 56.2 tok/s.
SPEC_K2 = result("spec-k2", {1: 54.2}, {1: SpecDecodeCounters(100, 200, 153, (85, 68))})
SPEC_K4 = result("spec-k4", {1: 71.3}, {1: H200_SPEC})


def test_a_speculative_step_lasts_mean_acceptance_length_tokens():
    assert speculative_step_ms(SPEC_K4) == (4, pytest.approx(3.43 * 1000 / 71.3))


def test_fitting_two_runs_gives_the_fixed_and_per_token_cost_and_reproduces_both():
    fit = fit_step_costs([speculative_step_ms(SPEC_K2), speculative_step_ms(SPEC_K4)], 1000 / 56.2)
    assert fit.per_draft_token_ms == pytest.approx((48.107 - 46.679) / 2, abs=0.01)  # K barely matters...
    assert fit.fixed_ms == pytest.approx(45.25, abs=0.05)  # ...a fixed ~45 ms step does
    assert fit.max_residual_ms == pytest.approx(0.0, abs=1e-9)
    for spec, base, k in ((SPEC_K2, 54.2, 2), (SPEC_K4, 71.3, 4)):
        rates = acceptance_from_result(spec)
        assert predict_speedup(rates, k, fit.cost_ratio, fit.overhead) == pytest.approx(base / 56.2, rel=1e-3)


def test_a_fit_needs_two_different_k():
    with pytest.raises(UserError, match="two or more different K"):
        fit_step_costs([(4, 48.0), (4, 47.0)], 17.8)


def test_a_fit_whose_line_has_no_fixed_cost_is_refused_as_noise():
    # K = 2 at 40 ms and K = 4 at 90 ms: the line reaches K = 0 at -10 ms, a step cheaper than nothing
    with pytest.raises(UserError, match=r"no fixed cost \(-10.00 ms at K = 0.*noise dominates the runs \[\(2, 40.0\), \(4, 90.0\)\]"):
        fit_step_costs([(2, 40.0), (4, 90.0)], 17.8)


def test_tune_fits_steps_from_saved_runs(tmp_path, capsys):
    paths = {}
    for name, res in (("k2", SPEC_K2), ("k4", SPEC_K4), ("target", TARGET)):
        paths[name] = tmp_path / f"{name}.json"
        res.save(paths[name])
    code = main(["tune", "--from-bench", str(paths["k4"]), "--fit-steps", str(paths["k2"]), str(paths["k4"]),
                 "--target-bench", str(paths["target"]), "--max-k", "4", "--no-extrapolation", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert data["sources"]["cost_ratio"].startswith("fitted: a speculative step takes 45.2")
    assert data["measured"]["prediction_error"] == pytest.approx(0.0, abs=1e-3)
    assert data["recommended_k"] == 4


def test_fit_steps_refuses_a_second_overhead(tmp_path, capsys):
    path = tmp_path / "k4.json"
    SPEC_K4.save(path)
    code = main(["tune", "--from-bench", str(path), "--fit-steps", str(path), str(path), "--target-step-ms", "17.8",
                 "--overhead-fraction", "0.5"])
    assert code == 2 and "fits the per-step overhead itself" in capsys.readouterr().err
