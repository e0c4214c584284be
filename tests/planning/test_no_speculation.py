"""Plans without speculation: ``--method none`` (the target alone, the baseline ``bench --compare`` measures
against) and ``--method auto`` where no candidate's K is predicted to pay."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from specdraft.checkpoints import inspect_checkpoint
from specdraft.errors import UserError
from specdraft.planning import LaunchRequest, build_launch_plan
from specdraft.planning.facts.method_ranking import rank_methods
from specdraft.planning.decisions.speculative_method import no_speculation_reason

TARGET_31B, TARGET_26B = "google/gemma-4-31B-it", "google/gemma-4-26B-A4B-it"
E2B, ASSISTANT_26B = "google/gemma-4-E2B-it", "google/gemma-4-26B-A4B-it-assistant"


@pytest.fixture(scope="module")
def tree():
    from tools.release_trees import release_tree

    return lambda version: release_tree(version, progress=lambda line: None)


def _plan(tree, version="0.33.0", **fields):
    return build_launch_plan(LaunchRequest(profile="h100", vllm_root=tree(version), **fields))


def _without_speculative_config(argv: list[str]) -> list[str]:
    index = argv.index("--speculative-config")
    return argv[:index] + argv[index + 2:]


def test_method_none_is_the_draft_less_plan_without_its_speculative_config(tree):
    """Memory, KV dtype, attention backend, parallel sizes and template are decided as for a speculative plan
    that loads no drafter: only --speculative-config is missing."""
    alone = _plan(tree, target=TARGET_31B, method="none", gpus_per_node=2)
    speculative = _plan(tree, target=TARGET_31B, method="ngram_gpu", gpus_per_node=2)
    assert alone.speculative is None and alone.draft is None and "--speculative-config" not in alone.argv
    assert alone.argv == _without_speculative_config(speculative.argv)
    # the KV choice names the method it was made for (its findings' wording), and is otherwise the same
    assert alone.kv_cache.model_dump(exclude={"method"}) == speculative.kv_cache.model_dump(exclude={"method"})
    assert alone.parallel == speculative.parallel
    assert alone.memory == speculative.memory and alone.template.path == speculative.template.path
    assert alone.no_speculation.startswith("--method none") and not alone.has_errors
    assert alone.k_schedule.outcome == "no-speculation" and alone.k_schedule.k is None


def test_method_none_needs_no_hotfix_a_drafter_needs(tree):
    """Beside the 31B, vLLM 0.26.0 needs a hotfix for the MTP assistant; the target alone needs none."""
    assistant = _plan(tree, "0.26.0", target=TARGET_31B, draft="google/gemma-4-31B-it-assistant")
    alone = _plan(tree, "0.26.0", target=TARGET_31B, method="none")
    assert any("patch" in step for step in assistant.nodes[0].steps)
    assert not any("patch" in step for step in alone.nodes[0].steps)
    hotfixes = next(f for f in alone.findings if f.check == "hotfixes")
    assert hotfixes.level == "ok" and hotfixes.message.startswith("not needed")


def test_method_none_still_gets_the_safety_and_memory_checks(tree):
    alone = _plan(tree, target=TARGET_31B, method="none", max_model_len=10**7)
    checks = {f.check: f.level for f in alone.findings}
    assert checks["api-exposure"] == "warning" and checks["chat-template"] == "ok"
    assert checks["max-model-len"] == "error"  # past the target's own context: the same refusal as with a draft
    assert {"speculative-method", "num-speculative-tokens", "draft-tensor-parallel"}.isdisjoint(checks)


def test_method_none_in_json_has_a_null_config_and_says_why(tree):
    document = json.loads(json.dumps(_plan(tree, target=TARGET_31B, method="none").to_json_dict()))
    assert document["speculative_config"] is None and document["draft"] is None
    assert document["no_speculation"].startswith("--method none")
    assert document["k_schedule"]["outcome"] == "no-speculation"
    assert {f["check"]: f["level"] for f in document["findings"]}["speculation"] == "info"


@pytest.mark.parametrize("field, value", [
    ("draft", E2B), ("num_speculative_tokens", 3), ("prompt_lookup_min", 2), ("prompt_lookup_max", 4),
    ("suffix_decoding_max_tree_depth", 8), ("acceptance_from", "mtp=result.json"), ("draft_quantization", "modelopt"),
    ("draft_revision", "main"), ("draft_tensor_parallel_size", 1), ("from_bench", "load.json"),
])
def test_method_none_refuses_what_shapes_speculation(field, value):
    with pytest.raises(ValidationError, match=f"{field}: --method none serves the target alone"):
        LaunchRequest(target=TARGET_31B, method="none", **{field: value})


def test_auto_where_no_k_pays_serves_the_target_alone_and_names_the_best_candidate(tree):
    """An E2B draft costs ~0.55 of the 26B-A4B's step and the draft-less methods' acceptance is low: no K pays."""
    plan = build_launch_plan(LaunchRequest(target=TARGET_26B, draft=E2B, method="auto", profile="h200",
                                           vllm_root=tree("0.33.0")))
    ranking = plan.method_ranking
    assert ranking.ranked and all(row.k == 0 for row in ranking.ranked)
    best = ranking.ranked[0]
    assert best.losing_speedup == max(row.losing_speedup for row in ranking.ranked) and best.losing_speedup <= 1.0
    assert plan.speculative is None and plan.draft is None and "--speculative-config" not in plan.argv
    finding = next(f for f in plan.findings if f.check == "method-auto")
    assert finding.level == "warning" and finding.message == plan.no_speculation
    assert f"{best.method} at K = {best.losing_k}, is predicted {best.losing_speedup:.2f}x" in finding.message
    assert finding.hint.startswith(f"add --draft {ASSISTANT_26B}")  # the published assistant does pay
    assert plan.memory.draft_weight_bytes in (0, None)
    document = plan.to_json_dict()
    assert document["speculative_config"] is None and document["no_speculation"] == finding.message
    assert document["method_ranking"]["ranked"][0]["losing_k"] == best.losing_k


def test_auto_where_a_candidate_pays_still_speculates():
    target = inspect_checkpoint(TARGET_26B)
    paying = rank_methods(target, [inspect_checkpoint(ASSISTANT_26B)], version="0.33.0", profile="h200")
    losing = rank_methods(target, [inspect_checkpoint(E2B)], version="0.33.0", profile="h200")
    auto = LaunchRequest(target=TARGET_26B, method="auto")
    assert paying.chosen is not None and no_speculation_reason(auto, paying) is None
    assert losing.chosen is None and "no K of the" in no_speculation_reason(auto, losing)
    given = LaunchRequest(target=TARGET_26B, draft=E2B, method="draft_model")
    assert no_speculation_reason(given, losing) is None  # a method asked for is planned, and its checks warn


def test_watch_refuses_a_plan_without_speculation_with_its_reason(tree, tmp_path):
    from specdraft.watch import costs_from_plan

    path = tmp_path / "plan.json"
    path.write_text(json.dumps(_plan(tree, target=TARGET_31B, method="none").to_json_dict()))
    with pytest.raises(UserError, match="serves the target alone, without speculative decoding.*--method none"):
        costs_from_plan(path)


def test_docker_serves_the_target_alone_without_a_speculative_config(tree):
    from specdraft.launch import docker_command

    command = docker_command(_plan(tree, target=TARGET_31B, method="none"), image="vllm/vllm-openai:v0.33.0")
    assert "--speculative-config" not in command and TARGET_31B in command


def test_auto_whose_fastest_candidate_loses_at_every_measured_batch_size_serves_the_target_alone(tree, tmp_path):
    """The ranking places candidates for one sequence; a load test of this server at its batch sizes overrules it
    where no K beats the target alone at any of them (the same K-per-batch-size maths as a given method's)."""
    from tests.planning.test_k_schedule import load_test

    losing = load_test(tmp_path, speedups={1: 0.45, 4: 0.4})
    fields = dict(target=TARGET_31B, draft="google/gemma-4-31B-it-assistant", max_num_seqs=4, from_bench=losing)
    given = _plan(tree, "0.26.0", method="mtp", **fields)
    auto = _plan(tree, "0.26.0", method="auto", **fields)
    assert given.speculative is not None and given.k_schedule.outcome == "loses"  # asked for: planned, and warned
    assert auto.speculative is None and auto.draft is None and "--speculative-config" not in auto.argv
    assert auto.k_schedule.outcome == "loses" and auto.k_schedule.levels  # the evidence stays in the plan
    assert auto.no_speculation.startswith("--method auto: mtp with google/gemma-4-31B-it-assistant, the ranking's "
                                          "fastest for one sequence, loses at --max-num-seqs 4: no K beats")
    assert {f.check: f.level for f in auto.findings}["method-auto"] == "warning"
    assert "--disable-hybrid-kv-cache-manager" not in auto.argv and "model-runner" not in {f.check for f in auto.findings}


def test_method_none_over_two_nodes_gives_each_node_the_target_alone_and_no_hotfix_step(tree):
    plan = build_launch_plan(LaunchRequest(target=TARGET_31B, method="none", profile="dgx-spark", nodes=2,
                                           vllm_root=tree("0.26.0")))
    assert len(plan.nodes) == 2 and plan.speculative is None
    for node in plan.nodes + plan.container_nodes:
        assert "--speculative-config" not in node.script and " patch " not in node.script
