"""A K per batch size in the launch plan: from a load test (a bench result at several concurrency levels with a
baseline), checked by the release's own schedule validator; one K where the release takes one; the load tests
it turns away."""

import json

import pytest

from specdraft.bench import BenchResult, LevelResult, SpecDecodeCounters, Summary
from specdraft.planning import LaunchRequest, build_launch_plan
from specdraft.planning.decisions.k_schedule import decide_k_schedule, read_load_test
from specdraft.planning.knowledge.speculative_config import SpeculativeConfig
from specdraft.errors import UserError
from tests.planning.conftest import dynamic_sd_utils

TARGET, DRAFT = "LilaRest/gemma-4-31B-it-NVFP4-turbo", "mikeytag/gemma-4-E2B-it-NVFP4"
MAX_TOKENS = 256


def level(concurrency: int, decode: float, acceptance: tuple[float, ...] | None) -> LevelResult:
    """A level as bench saves it; ``acceptance`` None for the baseline (no speculation)."""
    spec = None
    if acceptance is not None:
        drafts = 1000.0
        accepted = tuple(round(a * drafts) for a in acceptance)
        spec = SpecDecodeCounters(drafts, drafts * len(acceptance), sum(accepted), accepted)
    e2e = Summary(*[MAX_TOKENS / decode] * 5)
    requests = 4 * concurrency
    return LevelResult(concurrency, requests, requests * MAX_TOKENS, 10.0, decode * concurrency, decode, None, e2e,
                       e2e, spec, warmup_requests=concurrency, duration_s=10.0, mean_in_flight=concurrency * 0.99)


# acceptance falls a little as the batch grows; the speedup at the server's K = 4 falls a lot (the target's
# verification of 5 tokens per sequence stops being free), and from 8 speculation loses: steep enough that a
# schedule's predicted gain over one K (+59%) covers the PIECEWISE graphs it brings (PIECEWISE_SPEED)
ACCEPTANCE = (0.80, 0.62, 0.48, 0.37)
SPEEDUP = {1: 3.0, 2: 2.4, 4: 1.2, 8: 0.5, 16: 0.2}
MILD = {1: 2.2, 2: 1.9, 4: 1.5, 8: 1.1, 16: 0.55}
"""K = 5, 4, 3, 2, 0 by the model, but one K = 2 comes within 12% (geometric mean): less than PIECEWISE costs."""
TARGET_ALONE = {1: 40.0, 2: 39.0, 4: 38.0, 8: 35.0, 16: 30.0}


def load_test(tmp_path, *, speedups=SPEEDUP, baseline=True, speculative=True, name="load.json") -> str:
    levels = tuple(level(n, TARGET_ALONE[n] * s, ACCEPTANCE if speculative else None) for n, s in speedups.items())
    result = BenchResult("http://spec", "m", MAX_TOKENS, 0.0, "built-in", 8, levels, speculative)
    if baseline:
        base = tuple(level(n, TARGET_ALONE[n], None) for n in speedups)
        result = result.with_baseline(BenchResult("http://target", "m", MAX_TOKENS, 0.0, "built-in", 8, base, False))
    path = tmp_path / name
    result.save(path)
    return str(path)


def vllm_lookup(tree, schedule, max_num_seqs, k):
    """The release's own expansion of a schedule into K per batch size (its validator runs first)."""
    return dynamic_sd_utils(tree)["build_dynamic_sd_schedule_lookup"](schedule, max_num_seqs, k)


def test_a_hand_worked_level_reproduces_its_measured_speedup_and_picks_its_k(tmp_path):
    # one position at 0.5 measured at K = 1 with a 1.2x speedup: E = 1.5, so a step costs 1.25 target steps,
    # c = 0.25; K = 2 (a_2 = 0.25 by the geometric fit) predicts 1.75 / 1.5 = 1.17x: K = 1 stays best
    path = tmp_path / "one.json"
    spec = BenchResult("http://spec", "m", 64, 0.0, "built-in", 8, (level(1, 48.0, (0.5,)),), True)
    spec.with_baseline(BenchResult("http://t", "m", 64, 0.0, "built-in", 8, (level(1, 40.0, None),), False)).save(path)
    decision = decide_k_schedule(read_load_test(path, 1), max_num_seqs=1, version="0.26.0", method="draft_model",
                                 plan_k=4, k_given=False)
    (choice,) = decision.levels
    assert choice.cost_ratio == pytest.approx(0.25)
    assert choice.predicted[:2] == pytest.approx((1.2, 1.75 / 1.5))
    assert (decision.outcome, decision.k, decision.schedule) == ("same-k", 1, None)


@pytest.mark.parametrize("version", ["0.24.0", "0.26.0", "0.33.0"])
def test_a_release_with_a_schedule_gets_one_that_its_own_validator_expands_to_each_levels_best_k(
        tmp_path, release, version):
    tree = release(version)
    plan = build_launch_plan(LaunchRequest(target=TARGET, draft=DRAFT, vllm_root=tree, max_num_seqs=32,
                                           from_bench=load_test(tmp_path)))
    decision = plan.k_schedule
    assert decision.outcome == "schedule"
    config = json.loads(plan.serve.flag("--speculative-config").value)
    schedule = config["num_speculative_tokens_per_batch_size"]
    assert config["num_speculative_tokens"] == max(k for _, _, k in schedule) == decision.k
    lookup = vllm_lookup(tree, schedule, 32, config["num_speculative_tokens"])
    best = {choice.batch_size: choice.best_k for choice in decision.levels}
    assert [lookup[n] for n in best] == list(best.values())
    assert lookup[17:] == [best[16]] * 16  # past the last measured level, its K
    assert best[8] == best[16] == 0 and best[1] >= best[2] >= best[4] > 0  # K shrinks with the batch, then none
    for choice in decision.levels:  # the model reproduces each level's measured speedup at the server's K
        assert choice.speedup_at(choice.measured_k) == pytest.approx(choice.measured_speedup)
    assert "K = 0: no K beats the target alone there; the drafter still runs" in decision.reason
    assert "batch sizes 17-32 were not measured and keep the K of 16" in decision.reason
    assert plan.to_json_dict()["k_schedule"]["schedule"] == [list(r) for r in decision.schedule]


@pytest.mark.parametrize("version", ["0.19.0", "0.23.0"])
def test_a_release_without_a_schedule_gets_the_best_single_k_and_is_told_what_it_loses(tmp_path, release, version):
    plan = build_launch_plan(LaunchRequest(target=TARGET, draft=DRAFT, vllm_root=release(version), max_num_seqs=16,
                                           from_bench=load_test(tmp_path)))
    decision = plan.k_schedule
    config = json.loads(plan.serve.flag("--speculative-config").value)
    assert decision.outcome == "single-k" and "num_speculative_tokens_per_batch_size" not in config
    assert config["num_speculative_tokens"] == decision.k
    # the chosen K has the best geometric mean over the measured levels among every K
    def mean_log(k):
        import math
        return sum(math.log(choice.speedup_at(k)) for choice in decision.levels)
    assert all(mean_log(decision.k) >= mean_log(k) - 1e-9 for k in range(1, 9))
    lost = dict(decision.lost)
    assert lost[16] > 0.1 and min(lost.values()) >= 0
    assert decision.reason.startswith(f"vLLM {version} takes one K for every batch size")
    assert f"{lost[16]:.0%} at batch size 16" in decision.reason
    finding = {f.check: f for f in plan.findings}["k-per-batch-size"]
    assert finding.level == "info" and finding.message == decision.reason


@pytest.mark.parametrize("version", ["0.24.0", "0.26.0"])
def test_a_schedule_whose_gain_does_not_cover_its_piecewise_graphs_is_turned_away_for_one_k(
        tmp_path, release, version):
    """On the GPU a schedule on vLLM 0.26.0's V1 runner lost to a plain fixed-K engine (FULL graphs) at every
    batch size: a schedule worth +12% over one K by the model is not emitted; the reason says what that gives up."""
    from specdraft.planning.decisions.k_schedule import PIECEWISE_SPEED

    plan = build_launch_plan(LaunchRequest(target=TARGET, draft=DRAFT, vllm_root=release(version), max_num_seqs=16,
                                           from_bench=load_test(tmp_path, speedups=MILD)))
    decision = plan.k_schedule
    config = json.loads(plan.serve.flag("--speculative-config").value)
    assert [level.best_k for level in decision.levels] == [5, 4, 3, 2, 0]  # what a schedule would have been
    assert decision.outcome == "single-k" and "num_speculative_tokens_per_batch_size" not in config
    assert config["num_speculative_tokens"] == decision.k == 2
    assert decision.reason.startswith(f"a schedule makes vLLM {version}'s V1 model runner capture PIECEWISE CUDA "
                                      f"graphs only, which left {PIECEWISE_SPEED:.0%} of a FULL-graph engine's speed")
    assert "predicted gain over one K (+12%" in decision.reason and "at batch size 16" in decision.reason


def test_a_given_k_caps_the_schedule(tmp_path, release):
    plan = build_launch_plan(LaunchRequest(target=TARGET, draft=DRAFT, vllm_root=release("0.26.0"), max_num_seqs=16,
                                           num_speculative_tokens=2, from_bench=load_test(tmp_path)))
    assert all(level.best_k <= 2 for level in plan.k_schedule.levels)
    assert plan.speculative.num_speculative_tokens == 2


def test_where_no_k_pays_at_any_batch_size_the_plan_keeps_its_k_and_warns(tmp_path, release):
    losing = {1: 0.45, 4: 0.4}
    plan = build_launch_plan(LaunchRequest(target=TARGET, draft=DRAFT, vllm_root=release("0.26.0"), max_num_seqs=4,
                                           from_bench=load_test(tmp_path, speedups=losing)))
    assert plan.k_schedule.outcome == "loses" and plan.speculative.num_speculative_tokens_per_batch_size is None
    finding = {f.check: f for f in plan.findings}["k-per-batch-size"]
    assert finding.level == "warning" and "serving the target without a draft is faster" in finding.message


def test_without_a_load_test_several_sequences_get_one_k_and_the_way_to_measure_more(release):
    plan = build_launch_plan(LaunchRequest(target=TARGET, draft=DRAFT, vllm_root=release("0.26.0"), max_num_seqs=8))
    assert plan.k_schedule.outcome == "unmeasured"
    assert "--concurrency 1,2,4,...,8 with --compare against the same launch with --method none" in plan.k_schedule.reason
    one = build_launch_plan(LaunchRequest(target=TARGET, draft=DRAFT, vllm_root=release("0.26.0")))
    assert one.k_schedule.outcome == "one-sequence" and "k-per-batch-size" not in {f.check for f in one.findings}


@pytest.mark.parametrize("change, message", [
    (dict(baseline=False), "has no baseline: a K per batch size needs the speedup at each level"),
    (dict(speculative=False), "is a run without speculative decoding: it has no acceptance"),
    (dict(speedups={32: 1.5}), "measured concurrency 32, none at or below --max-num-seqs 16"),
    (dict(speedups={1: 9.0}), "the measured speedup 9.00x exceeds the mean acceptance length 3.27"),
])
def test_load_tests_that_cannot_give_a_schedule_are_turned_away(tmp_path, change, message):
    TARGET_ALONE.setdefault(32, 20.0)
    path = load_test(tmp_path, **change)
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        read_load_test(path, 16)


def test_a_level_without_acceptance_counters_is_turned_away(tmp_path):
    path = tmp_path / "old.json"
    data = json.loads(open(load_test(tmp_path)).read())
    data["levels"][1]["spec_decode"] = None
    path.write_text(json.dumps(data))
    with pytest.raises(UserError, match="at concurrency 2 has no acceptance counters"):
        read_load_test(path, 16)


@pytest.mark.parametrize("schedule, message", [
    ([], "must not be empty"),
    ([(2, 8, 1)], "the first range must start at batch size 1"),
    ([(1, 4, 2), (4, 8, 1)], "ranges must be sorted and must not overlap"),
    ([(1, 8, 5)], r"K = 5 must be in \[0, num_speculative_tokens = 4\]"),
    ([(1, 0, 1)], r"\(1, 0, 1\) is not a range of batch sizes >= 1"),
])
def test_a_schedule_vllm_would_refuse_or_silently_change_is_refused(schedule, message):
    with pytest.raises(ValueError, match=message):
        SpeculativeConfig(model=DRAFT, num_speculative_tokens=4, num_speculative_tokens_per_batch_size=schedule)


@pytest.mark.parametrize("how", [dict(extra_args=["--data-parallel-size", "2"]),
                                 dict(data_parallel_size=2, gpus_per_node=2, profile="h200")])
@pytest.mark.parametrize("version, outcome", [("0.25.0", "schedule"), ("0.26.0", "single-k"), ("0.33.0", "single-k")])
def test_data_parallelism_gets_one_k_where_the_release_drops_the_schedule(tmp_path, release, version, outcome, how):
    plan = build_launch_plan(LaunchRequest(target=TARGET, draft=DRAFT, vllm_root=release(version), max_num_seqs=16,
                                           from_bench=load_test(tmp_path), **how))
    assert plan.k_schedule.outcome == outcome
    if outcome == "single-k":
        assert plan.k_schedule.reason.startswith(f"vLLM {version} drops the schedule with data parallelism")


def test_the_schedule_says_what_it_does_to_cuda_graphs(tmp_path, release):
    plan = build_launch_plan(LaunchRequest(target=TARGET, draft=DRAFT, vllm_root=release("0.26.0"), max_num_seqs=16,
                                           from_bench=load_test(tmp_path)))
    assert plan.k_schedule.reason.endswith("; with a schedule, the V1 model runner turns full CUDA graphs into "
                                           "PIECEWISE; Model Runner V2 keeps them")
    assert plan.serve.flag("--speculative-config").reason.endswith(plan.k_schedule.reason)


def test_the_documented_command_runs_on_a_load_test(tmp_path, monkeypatch, capsys):
    import shlex

    from specdraft.cli import main
    from tests.documented import commands, read

    (line,) = [line for line in commands(read("docs/launching.md")) if "--from-bench" in line]
    argv = shlex.split(line, comments=True)[3:]
    monkeypatch.chdir(tmp_path)
    load_test(tmp_path, name=argv[argv.index("--from-bench") + 1])
    monkeypatch.setenv("PATH", "/nonexistent")  # no vLLM here: the release is unknown, so one K
    assert main(argv) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["k_schedule"]["outcome"] == "single-k"
    assert plan["k_schedule"]["reason"].startswith("the vLLM version is unknown to specdraft's K-per-batch-size table")


# Without --from-bench: the step costs measured per batch size (bench's data/batch_step_costs.json) and the
# method's default acceptance give the schedule; each rule below turns a launch away from them, and says why.
TARGET_31B, ASSISTANT_31B, E2B = "google/gemma-4-31B-it", "google/gemma-4-31B-it-assistant", "google/gemma-4-E2B-it"


def modelled_plan(release, version="0.26.0", **request):
    fields = dict(target=TARGET_31B, draft=ASSISTANT_31B, profile="h200", max_num_seqs=32)
    return build_launch_plan(LaunchRequest(vllm_root=release(version), **{**fields, **request})).k_schedule


@pytest.mark.parametrize("draft, costs, turned_away", [
    (ASSISTANT_31B, "vllm0.26-mtp-31b-assistant-h200-full", "on Model Runner V2 a schedule's K below its largest"),
    (E2B, "vllm0.26-draft_model-e2b-async-h200", "PIECEWISE CUDA graphs only")])
def test_the_shipped_step_costs_plan_each_batch_size_but_launch_keeps_one_k(release, monkeypatch, draft, costs,
                                                                             turned_away):
    """Each batch size's K is tune's pick from the shipped step costs; vLLM 0.26.0 serves the MTP assistant on
    Model Runner V2 and the E2B draft on V1, and on neither does the schedule's predicted gain over one K cover
    what a schedule costs there, so one K is served."""
    from specdraft.speed import best_k_per_batch_size, known_batch_step_cost
    from specdraft.planning.knowledge.method_costs import acceptance_for

    monkeypatch.delenv("VLLM_USE_V2_MODEL_RUNNER", raising=False)
    decision = modelled_plan(release, draft=draft)
    assert decision.levels_from.startswith("tune's model with the step costs")
    assert costs in decision.reason and "docs/gpu/README.md section 7" in decision.reason
    assert all(level.measured_k is None for level in decision.levels)
    rates, _ = acceptance_for(known_batch_step_cost(costs).method, False, 8)
    expected = best_k_per_batch_size(known_batch_step_cost(costs), rates, max_k=8)
    assert [(level.batch_size, level.best_k) for level in decision.levels] == [(c.batch_size, c.best_k)
                                                                                for c in expected]
    assert len({c.best_k for c in expected}) > 1  # a schedule would have varied K
    assert decision.outcome == "single-k" and decision.schedule is None
    assert turned_away in decision.reason


def test_a_plain_engines_full_graph_costs_are_preferred_and_choose_the_single_k(release, monkeypatch):
    """The MTP assistant has step costs from both engines: a plain one-K engine's (FULL graphs: what a one-K
    server runs) win over the schedule engine's (PIECEWISE), and choose the single K over 1-32 sequences."""
    from specdraft.planning.decisions.k_schedule import single_k

    monkeypatch.delenv("VLLM_USE_V2_MODEL_RUNNER", raising=False)
    decision = modelled_plan(release)
    assert "vllm0.26-mtp-31b-assistant-h200-full" in decision.reason
    assert "vllm0.26-mtp-31b-assistant-h200:" not in decision.reason
    assert decision.k == single_k(decision.levels, 8)[0] and 3 < decision.k < 8
    assert f"K = {decision.k} is the best single K over tune's model" in decision.reason


def test_thinking_lowers_the_assumed_acceptance_and_with_it_the_ks(release):
    plain, thinking = modelled_plan(release), modelled_plan(release, enable_thinking=True)
    assert all(t.best_k <= p.best_k for p, t in zip(plain.levels, thinking.levels))
    assert any(t.best_k < p.best_k for p, t in zip(plain.levels, thinking.levels))
    assert "thinking on: x0.85 (assumed)" in thinking.reason


def test_a_release_without_per_batch_k_keeps_the_plans_k_where_the_costs_came_from_a_piecewise_engine(release):
    decision = modelled_plan(release, "0.23.0", draft=E2B)
    assert decision.outcome == "single-k" and decision.schedule is None and decision.k is None
    assert decision.reason.startswith("K = 3, the plan's own, at every batch size: the step costs per batch size "
                                      "were measured on an engine with a K schedule (PIECEWISE CUDA graphs only)")
    assert "vLLM 0.23.0 takes one K for every batch size" in decision.reason and decision.lost == []
    full = modelled_plan(release, "0.23.0")  # the MTP assistant: a plain engine's costs choose the one K
    assert full.outcome == "single-k" and full.k is not None and full.lost
    assert full.reason.startswith("vLLM 0.23.0 takes one K for every batch size")


@pytest.mark.parametrize("version, runner", [("0.26.0", "v1"), ("0.33.0", "v2")])
def test_what_a_piecewise_engines_costs_pick_is_turned_away_for_the_plans_own_k(release, monkeypatch, version, runner):
    """The E2B draft's PIECEWISE costs pick K = 1 at <= 1.16x, where a FULL-graph engine ran K = 3 at 1.7x: the plan
    keeps its K, on V1 (0.26.0) and on V2 (0.33.0), where the reason also says how to measure the server itself."""
    monkeypatch.delenv("VLLM_USE_V2_MODEL_RUNNER", raising=False)
    plan = build_launch_plan(LaunchRequest(vllm_root=release(version), target=TARGET_31B, draft=E2B,
                                           profile="h200", max_num_seqs=16))
    assert plan.speculative.num_speculative_tokens == 3 and plan.k_schedule.schedule is None
    assert plan.k_schedule.model_runner.runner == runner
    # what the PIECEWISE costs say: one K = 1 on 0.26.0's V1; on 0.33.0's V2, which drafts only the scheduled K, a
    # schedule of K = 1 and 2; either way the plan keeps its K = 3
    said = "K = 1 is the best single K" if runner == "v1" else "what they say: K per batch size from"
    assert said in plan.k_schedule.reason
    assert plan.k_schedule.reason.startswith("K = 3, the plan's own, at every batch size")
    assert ("pass --from-bench" in plan.k_schedule.reason) == (runner == "v2")


def test_tensor_parallelism_says_the_costs_are_one_gpus(release):
    decision = modelled_plan(release, gpus_per_node=2, tensor_parallel_size=2)
    assert "measured on one GPU, not on an engine of 2 GPUs (TP 2 x PP 1)" in decision.reason


def test_data_parallelism_planned_by_launch_gets_one_k_where_the_release_drops_the_schedule(release):
    decision = modelled_plan(release, gpus_per_node=2, data_parallel_size=2)
    assert decision.outcome == "single-k"
    assert "vLLM 0.26.0 drops the schedule with data parallelism (2 ranks" in decision.reason


@pytest.mark.parametrize("request_fields, why", [
    (dict(profile="dgx-spark"), "no step costs per batch size were measured on a dgx-spark (only on an H200)"),
    (dict(target="google/gemma-4-26B-A4B-it", draft="google/gemma-4-26B-A4B-it-assistant"),
     "no step costs per batch size were measured beside a mixture-of-experts target"),
    (dict(target="google/gemma-4-E4B-it", draft="google/gemma-4-E4B-it-assistant"),
     "no step costs per batch size were measured for mtp beside a target of this shape"),
])
def test_launches_the_shipped_step_costs_do_not_fit_keep_one_k_and_say_why(release, request_fields, why):
    decision = modelled_plan(release, **request_fields)
    assert decision.outcome == "unmeasured" and decision.schedule is None
    assert why in decision.reason and "pass the result as --from-bench" in decision.reason


def test_on_model_runner_v2_a_measured_schedule_whose_gain_covers_its_smaller_ks_is_kept(tmp_path, release,
                                                                                          monkeypatch):
    """vLLM 0.31.0 serves the E2B draft on Model Runner V2, which keeps FULL graphs with a schedule but drafts the
    largest K every step: the steep load test's +59% over one K is weighed against that, not against V1's
    PIECEWISE graphs, and covers it."""
    monkeypatch.delenv("VLLM_USE_V2_MODEL_RUNNER", raising=False)
    request = LaunchRequest(target=TARGET, draft=DRAFT, vllm_root=release("0.31.0"), max_num_seqs=16,
                            from_bench=load_test(tmp_path))
    decision = build_launch_plan(request).k_schedule
    assert decision.model_runner.runner == "v2" and decision.outcome == "schedule"
    assert "keeps FULL CUDA graphs" in decision.reason and "which the gain covers" in decision.reason


@pytest.mark.parametrize("version, turned_away", [
    ("0.31.0", "on Model Runner V2 a schedule's K below its largest ran at"),
    ("0.33.0", None)])
def test_on_model_runner_v2_a_mild_schedule_is_turned_away_only_where_v2_drafts_the_largest_k(
        tmp_path, release, monkeypatch, version, turned_away):
    """The mild load test's +12% over one K comes from batch sizes whose K is below the schedule's largest. vLLM
    0.25.0-0.31.x draft the largest K at every step on V2, where such K ran at 86% of a plain engine's speed
    (docs/gpu 7.3): one K. 0.32.0 on draft only the scheduled K: the schedule is planned, and says it was not
    measured. VLLM_USE_V2_MODEL_RUNNER=0 in launch's environment sends the server to V1, where PIECEWISE graphs
    turn it away on both."""
    from specdraft.planning.decisions.k_schedule import V2_BELOW_LARGEST_K_SPEED

    monkeypatch.delenv("VLLM_USE_V2_MODEL_RUNNER", raising=False)
    request = LaunchRequest(target=TARGET, draft=DRAFT, vllm_root=release(version), max_num_seqs=16,
                            from_bench=load_test(tmp_path, speedups=MILD))
    decision = build_launch_plan(request).k_schedule
    assert decision.model_runner.runner == "v2"
    if turned_away:
        assert decision.outcome == "single-k" and decision.schedule is None
        assert decision.reason.startswith(f"{turned_away} {V2_BELOW_LARGEST_K_SPEED:.0%} of a plain engine of that K")
    else:
        assert decision.outcome == "schedule" and decision.schedule[0][2] == 5
        assert f"vLLM {version} drafts only the scheduled K, with FULL graphs for each K it names" in decision.reason
    monkeypatch.setenv("VLLM_USE_V2_MODEL_RUNNER", "0")
    forced = build_launch_plan(request).k_schedule
    assert forced.model_runner.runner == "v1" and "VLLM_USE_V2_MODEL_RUNNER=0" in forced.model_runner.reason
    assert forced.outcome == "single-k" and forced.reason.startswith(f"a schedule makes vLLM {version}'s V1 model runner")


@pytest.mark.parametrize("version, planned", [("0.31.0", False), ("0.33.0", True)])
def test_the_modelled_schedule_is_planned_where_v2_drafts_the_scheduled_k(release, monkeypatch, version, planned):
    """The shipped MTP costs want K = 8 at 1, 7 at 2-15, 5 at 16-31 and 3 at 32 sequences (+3% over one K). On
    vLLM 0.33.0 that schedule ran at 1.007 / 1.015 of the best plain fixed K per batch size and 1.07 / 1.035 of the
    single K = 6 (H200, docs/gpu 7.4): planned. 0.31.0's V2 drafts the largest K every step, which turns it away."""
    from specdraft.planning.decisions.k_schedule import V2_BELOW_LARGEST_K_SPEED, V2_SCHEDULED_K_SPEED

    monkeypatch.delenv("VLLM_USE_V2_MODEL_RUNNER", raising=False)
    decision = modelled_plan(release, version)
    assert decision.model_runner.runner == "v2"
    if planned:
        assert decision.outcome == "schedule" and decision.k == 8
        assert decision.schedule == [(1, 1, 8), (2, 15, 7), (16, 31, 5), (32, 32, 3)]
        assert f"a scheduled K ran at {V2_SCHEDULED_K_SPEED:.0%} of a plain engine of that K" in decision.reason
        assert "vLLM 0.33.0, H200" in decision.reason
    else:
        assert decision.outcome == "single-k" and decision.k == 6 and decision.schedule is None
        assert decision.reason.startswith(f"on Model Runner V2 a schedule's K below its largest ran at "
                                          f"{V2_BELOW_LARGEST_K_SPEED:.0%}")


@pytest.mark.parametrize("version, needs_hotfix", [("0.26.0", True), ("0.33.0", False)])
def test_a_schedule_on_model_runner_v2_needs_the_drafter_graphs_hotfix_where_vllm_lacks_the_guard(
        tmp_path, release, monkeypatch, version, needs_hotfix):
    """vLLM 0.25.0-0.31.x divide by zero building the MTP assistant's one-token CUDA graphs for a schedule on V2
    (seen on an H200 with 0.26.0): the plan names the hotfix, refuses to serve with it pending under --hotfixes
    check, and its node commands check or apply it. 0.32.0 on carry upstream's guard. A server forced onto V1 needs
    none of it."""
    monkeypatch.delenv("VLLM_USE_V2_MODEL_RUNNER", raising=False)
    request = LaunchRequest(target=TARGET_31B, draft=ASSISTANT_31B, vllm_root=release(version), max_num_seqs=16,
                            from_bench=load_test(tmp_path), hotfixes="check")
    plan = build_launch_plan(request)
    assert plan.k_schedule.outcome == "schedule" and plan.k_schedule.schedule_on_v2
    (hotfixes,) = [f for f in plan.findings if f.check == "hotfixes"]
    assert ("v2-schedule-drafter-graphs pending" in hotfixes.message) == needs_hotfix
    assert (hotfixes.level == "error") == needs_hotfix  # the MTP hotfix is fixed upstream in 0.33.0 too
    assert "v2-schedule-drafter-graphs" in plan.nodes[0].script  # each node checks it on its own vLLM
    monkeypatch.setenv("VLLM_USE_V2_MODEL_RUNNER", "0")
    on_v1 = build_launch_plan(request)
    assert not on_v1.k_schedule.schedule_on_v2
    (hotfixes,) = [f for f in on_v1.findings if f.check == "hotfixes"]
    assert "v2-schedule-drafter-graphs pending" not in hotfixes.message
    assert "v2-schedule-drafter-graphs" not in on_v1.nodes[0].script