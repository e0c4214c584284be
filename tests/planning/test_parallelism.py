"""The parallel plan: sizes per topology, the draft's TP by vLLM's rules, KV heads per rank, and the
rules themselves read back from real release sources."""

from __future__ import annotations

import pytest

from specdraft.planning.decisions.parallelism import (
    TOPOLOGIES, check_kv_head_split, check_parallel, kv_heads_per_rank, plan_parallelism, topology_for,
)
from specdraft.planning.checks.pair import check_draft_tensor_parallel
from specdraft.planning.knowledge.speculative_config import SpeculativeConfig
from tools.release_trees import release_tree
from tests.planning.conftest import shipped_config

TARGET = "google/gemma-4-31B-it"
E2B = "google/gemma-4-E2B-it"
ASSISTANT = "google/gemma-4-31B-it-assistant"


def _findings(plan, level=None):
    found = check_parallel(plan, shipped_config(TARGET), None)
    return [f for f in found if level is None or f.level == level]


def _errors(plan):
    return _findings(plan, "error")


@pytest.mark.parametrize("topology, tp, dp", [("h100-x2", 2, 1), ("h100-x4", 4, 1), ("h100-x8", 8, 1),
                                              ("h200-x2", 2, 1), ("dgx-spark-x2", 2, 1)])
def test_unset_tp_spreads_the_31b_over_every_gpu(topology, tp, dp):
    plan = plan_parallelism(TOPOLOGIES[topology], shipped_config(TARGET), shipped_config(E2B))
    assert (plan.tensor_parallel_size, plan.data_parallel_size, plan.draft_tensor_parallel_size) == (tp, dp, tp)
    assert not _errors(plan)


def test_at_tp_8_the_31b_full_layers_keep_one_replicated_kv_head_and_e2b_keeps_its_one():
    plan = plan_parallelism(TOPOLOGIES["h100-x8"], shipped_config(TARGET), shipped_config(E2B))
    # 31B: 16 sliding KV heads split 2 per rank; 4 full-layer KV heads below 8 ranks are replicated, not split
    assert plan.target_kv_heads_per_rank == {"sliding": 2, "full": 1}
    assert plan.draft_kv_heads_per_rank == {"sliding": 1, "full": 1}


def test_data_parallel_fills_the_gpus_tp_leaves():
    plan = plan_parallelism(TOPOLOGIES["h100-x8"], shipped_config(TARGET), shipped_config(E2B),
                            tensor_parallel_size=2, data_parallel_size=4)
    assert plan.serve_flags() == [("--tensor-parallel-size", "2"), ("--data-parallel-size", "4")]
    assert not _findings(plan)


def test_idle_gpus_are_a_warning_naming_the_data_parallel_size_that_uses_them():
    plan = plan_parallelism(TOPOLOGIES["h100-x8"], shipped_config(TARGET), None, tensor_parallel_size=2)
    (warning,) = _findings(plan, "warning")
    assert "uses 2 of h100-x8's 8 GPUs" in warning.message
    assert warning.hint.endswith("--data-parallel-size 4 to use them all")


def test_more_ranks_than_gpus_is_an_error():
    plan = plan_parallelism(TOPOLOGIES["h100-x2"], shipped_config(TARGET), None,
                            tensor_parallel_size=2, data_parallel_size=2)
    assert [f.check for f in _errors(plan)] == ["parallel-sizes"]


def test_an_engine_that_does_not_fill_whole_nodes_is_refused():
    two_by_four = topology_for("h100", nodes=2, gpus_per_node=4)
    plan = plan_parallelism(two_by_four, shipped_config(TARGET), None, tensor_parallel_size=2,
                            pipeline_parallel_size=3)
    assert any("does not fill whole nodes of 4" in f.message for f in _errors(plan))


def test_kv_heads_that_do_not_split_evenly_are_refused_with_the_sizes_that_do():
    config = shipped_config(TARGET)
    config["text_config"]["num_key_value_heads"] = 6
    finding = check_kv_head_split("target", config, 4)
    assert finding.level == "error" and "6 sliding KV heads" in finding.message
    assert finding.hint.endswith("among 1, 2")
    assert check_kv_head_split("target", shipped_config(TARGET), 8) is None


def test_replicated_heads_count_as_one_per_rank():
    assert [kv_heads_per_rank(4, tp) for tp in (1, 2, 4, 8)] == [4, 2, 1, 1]


@pytest.mark.parametrize("version", ["0.19.0", "0.26.0", "0.33.0"])
def test_the_draft_tp_rules_are_the_release_sources(version):
    root = release_tree(version, progress=lambda _: None) / "vllm"
    speculative = (root / "config/speculative.py").read_text()
    draft_model = (root / "v1/spec_decode/draft_model.py").read_text()
    assert "other value than 1 or target model tensor_parallel_size" in speculative
    assert "'draft_tensor_parallel_size' and 'tensor_parallel_size' " in draft_model
    assert "must be the same" in draft_model


@pytest.mark.parametrize("method, draft_tp, level", [("draft_model", 1, "error"), ("draft_model", 2, "ok"),
                                                     ("mtp", 1, "ok"), ("mtp", 2, "ok")])
def test_the_draft_tp_check_follows_those_rules_at_target_tp_2(method, draft_tp, level):
    config = SpeculativeConfig(method=method, model="d", draft_tensor_parallel_size=draft_tp)
    assert check_draft_tensor_parallel(config, 2).level == level


def test_multi_node_data_parallel_is_refused():
    plan = plan_parallelism(TOPOLOGIES["dgx-spark-x2"], shipped_config(TARGET), None, tensor_parallel_size=1,
                            data_parallel_size=2)
    assert [f.check for f in _errors(plan)] == ["parallel-sizes"] and "across 2 nodes" in _errors(plan)[0].message


def test_pipeline_parallel_leaves_tp_for_the_gpus_of_one_stage():
    plan = plan_parallelism(TOPOLOGIES["h100-x8"], shipped_config(TARGET), None, pipeline_parallel_size=2)
    assert (plan.tensor_parallel_size, plan.engine_gpus) == (4, 8)
    assert any("pipeline parallel 2" in f.message for f in _findings(plan, "warning"))
