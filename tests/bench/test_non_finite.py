"""NaN and infinity never reach bench's or tune's output: a ratio without a denominator is null with a reason,
and a non-finite number in a saved result or an option is refused in one line."""

import json

import pytest

from specdraft.bench import BenchResult, LevelResult, SpecDecodeCounters, Summary
from specdraft.cli import main


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def saved(tmp_path, name, *, output, decode=30.0, e2e=2.0, spec=None) -> str:
    summary = Summary(e2e, e2e, e2e, e2e, e2e)
    level = LevelResult(1, 4, 256, 1.0, output, decode, Summary(14.0, 14.0, 14.0, 14.0, 14.0), summary, summary, spec)
    result = BenchResult(f"http://{name}", name, 64, 0.0, "built-in", 8, (level,), spec is not None)
    path = tmp_path / f"{name}.json"
    result.save(path)
    return str(path)


def strict_json(text: str):
    def refuse(constant):
        raise AssertionError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_a_baseline_without_output_gives_a_null_aggregate_speedup_and_says_why(capsys, tmp_path):
    spec = saved(tmp_path, "spec", output=100.0, spec=SpecDecodeCounters(100, 400, 250, (90, 70, 55, 35)))
    empty = saved(tmp_path, "base", output=0.0)
    code, out, _ = run(capsys, "bench", "--compare-results", spec, empty, "--json")
    data = strict_json(out)
    assert code == 0 and data["speedups"][0]["output_tok_s"] is None
    assert any("concurrency 1" in note and "no output tokens" in note for note in data["notes"])
    assert data["speculation_pays"]["aggregate"] == {"pays_at": [], "loses_at": [], "stops_paying_at": None}
    code, out, _ = run(capsys, "bench", "--compare-results", spec, empty)
    header, row = out.splitlines()[-4:-2]
    assert "nan" not in out and row.split()[2] == "-x"
    assert row.index("-x") + 2 == header.index("aggregate tok/s") + len("aggregate tok/s")  # aligned


def test_a_compared_result_saved_and_compared_again_states_its_reason_once(tmp_path):
    from specdraft.bench import load_result

    spec = load_result(saved(tmp_path, "spec", output=100.0))
    twice = spec.with_baseline(load_result(saved(tmp_path, "base", output=0.0)))
    twice = twice.with_baseline(twice.baseline)
    assert sum("no output tokens" in note for note in twice.notes) == 1


def test_a_result_saved_with_nan_speedups_reads_them_as_null(tmp_path):
    from specdraft.bench import load_result

    path = saved(tmp_path, "spec", output=100.0)
    data = json.loads(open(path).read())
    data["speedups"] = [{"concurrency": 1, "decode_tok_s": 1.0, "output_tok_s": float("nan"), "e2e": 1.0}]
    open(path, "w").write(json.dumps(data))  # how a bench without the null wrote a missing ratio: NaN
    (speedup,) = load_result(path).speedups
    assert speedup.output_tok_s is None and strict_json(json.dumps(load_result(path).to_json()))


@pytest.mark.parametrize("field, value", [("output_tok_s", float("nan")), ("wall_s", float("inf")),
                                          ("decode_tok_s", "nan"), ("decode_tok_s", -1.0),
                                          ("mean_in_flight", float("-inf"))])
def test_a_saved_level_with_a_non_finite_figure_is_refused(capsys, tmp_path, field, value):
    path = saved(tmp_path, "spec", output=100.0)
    data = json.loads(open(path).read())
    data["levels"][0][field] = value
    open(path, "w").write(json.dumps(data))
    code, out, err = run(capsys, "bench", "--compare-results", path, path, "--json")
    assert code == 2 and out == ""
    assert err.splitlines()[0] == (f"specdraft: error: {path}: malformed bench result (ValueError: {field} must be "
                                   f"a finite number >= 0, got {float(value)})")


def test_a_saved_summary_with_infinity_is_refused(capsys, tmp_path):
    path = saved(tmp_path, "spec", output=100.0)
    data = json.loads(open(path).read())
    data["levels"][0]["e2e_s"]["max"] = float("inf")
    open(path, "w").write(json.dumps(data))
    code, _, err = run(capsys, "tune", "--from-bench", path, "--cost-ratio", "0.1", "--json")
    assert code == 2 and "e2e_s.max must be a finite number >= 0, got inf" in err


def test_a_saved_speedup_of_infinity_is_refused(capsys, tmp_path):
    path = saved(tmp_path, "spec", output=100.0)
    data = json.loads(open(path).read())
    data["speedups"] = [{"concurrency": 1, "decode_tok_s": float("inf"), "output_tok_s": 1.0, "e2e": 1.0}]
    open(path, "w").write(json.dumps(data))
    code, _, err = run(capsys, "bench", "--compare-results", path, path)
    assert code == 2 and "decode_tok_s must be a finite number >= 0 or null, got inf" in err


def test_a_level_whose_clock_did_not_advance_is_refused_not_nan():
    from specdraft.bench.client import _level_result
    from specdraft.errors import UserError

    with pytest.raises(UserError, match="concurrency 2: the level's wall time is 0.0 s"):
        _level_result(2, [], 0.0, None, warmup=0, duration_s=None)


@pytest.mark.parametrize("dtype", ["nan", "inf"])
def test_a_non_finite_bytes_per_weight_is_refused(dtype):
    from specdraft.speed import bytes_per_param
    from specdraft.errors import UserError

    with pytest.raises(UserError, match=f"bytes per weight must be a finite number > 0, got {dtype}"):
        bytes_per_param(dtype)


def with_level(path: str, **figures) -> str:
    """``path`` with figures of its first level set as given (bench rounds what it saves, so tiny ones go here)."""
    data = json.loads(open(path).read())
    data["levels"][0].update(figures)
    open(path, "w").write(json.dumps(data))
    return path


def test_a_ratio_past_the_largest_float_is_null_with_its_reason(capsys, tmp_path):
    spec = saved(tmp_path, "spec", output=100.0, decode=30.0)
    tiny = with_level(saved(tmp_path, "base", output=1.0), output_tok_s=1e-320, decode_tok_s=1e-320)
    code, out, _ = run(capsys, "bench", "--compare-results", spec, tiny, "--json")
    data = strict_json(out)
    assert code == 0 and data["speedups"][0]["output_tok_s"] is None and data["speedups"][0]["decode_tok_s"] is None
    assert any("made too few output tok/s to divide by" in note for note in data["notes"])


def test_tune_has_no_measured_speedup_past_the_largest_float(capsys, tmp_path):
    spec = saved(tmp_path, "spec", output=100.0, spec=SpecDecodeCounters(100, 400, 250, (90, 70, 55, 35)))
    tiny = with_level(saved(tmp_path, "base", output=70.0), decode_tok_s=1e-320)
    code, out, _ = run(capsys, "tune", "--from-bench", spec, "--cost-ratio", "0.1", "--target-bench", tiny,
                       "--json")
    assert code == 0 and strict_json(out)["measured"] is None
    code, out, err = run(capsys, "tune", "--from-bench", spec, "--step-times", tiny, tiny, "--json")
    assert code == 2 and out == "" and "decode speed too small to give a step time" in err


def test_saved_counters_must_be_whole_numbers(capsys, tmp_path):
    path = saved(tmp_path, "spec", output=100.0, spec=SpecDecodeCounters(100, 400, 250, (90, 70, 55, 35)))
    data = json.loads(open(path).read())
    data["levels"][0]["spec_decode"]["num_drafts"] = 1e-320  # every rate would be infinite
    open(path, "w").write(json.dumps(data))
    code, out, err = run(capsys, "tune", "--from-bench", path, "--cost-ratio", "0.1", "--json")
    assert code == 2 and out == "" and "spec_decode.num_drafts must be finite and whole, got 1e-320" in err


def test_tune_gives_no_relative_error_against_a_measured_speedup_near_zero(capsys, tmp_path):
    spec = with_level(saved(tmp_path, "spec", output=100.0, spec=SpecDecodeCounters(100, 400, 250, (90, 70, 55, 35))),
                      decode_tok_s=1e-320)
    base = saved(tmp_path, "base", output=70.0, decode=70.0)
    args = ["tune", "--from-bench", spec, "--cost-ratio", "0.1", "--target-bench", base]
    code, out, _ = run(capsys, *args, "--json")
    assert code == 0 and strict_json(out)["measured"]["prediction_error"] is None
    code, out, _ = run(capsys, *args)
    assert code == 0 and "(no relative error: the measured speedup is too close to 0)" in out
