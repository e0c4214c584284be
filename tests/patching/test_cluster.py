"""``specdraft cluster status``: every node asked through its own command, the unpatched one named with why.

The nodes are real vLLM release trees on this machine, each reached through this interpreter
(``python -m specdraft``), the way ``ssh host specdraft`` reaches a remote one.
"""

from __future__ import annotations

import json
import sys

import pytest

from specdraft.cli import main
from specdraft.patching import locate, status
from specdraft.patching.cluster import judge_nodes, node_report
from tools.release_trees import copy_tree
from tests.patching.conftest import REPO

SPECDRAFT_HERE = f"{sys.executable} -m specdraft"


@pytest.fixture(autouse=True)
def _nodes_import_this_checkout(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(REPO))


@pytest.fixture
def tree_of(release_trees, tmp_path):
    """``tree_of(version)`` -> a fresh writable copy of that release, one directory per call."""
    made = []

    def copy(version: str):
        made.append(version)
        return copy_tree(release_trees[version], tmp_path / f"node{len(made)}-{version}")

    return copy


def _cluster(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["cluster", *map(str, argv)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _patched(tree_of, version: str):
    root = tree_of(version)
    assert main(["patch", "apply", "--vllm-root", str(root)]) == 0
    return root


def _two_nodes(capsys, first, second, *extra: str):
    return _cluster(capsys, "status", f"a={SPECDRAFT_HERE}", f"b={SPECDRAFT_HERE}",
                    "--vllm-root", f"a={first}", "--vllm-root", f"b={second}", *extra)


def test_the_unpatched_node_is_named_and_the_cluster_refused(tree_of, capsys):
    patched, unpatched = _patched(tree_of, "0.31.0"), tree_of("0.31.0")
    capsys.readouterr()
    code, out, _ = _two_nodes(capsys, patched, unpatched)
    lines = out.splitlines()
    assert code == 1
    assert lines[0].startswith("a patched")
    assert lines[1].startswith("b NOT PATCHED") and "kv-sharing-uniform-specs" in lines[1]
    assert "run specdraft patch apply on b" in lines[1]
    assert lines[-1] == "1 of 2 nodes patched; do not start the cluster until b is fixed"


def test_every_node_patched_is_exit_0(tree_of, capsys):
    first, second = _patched(tree_of, "0.31.0"), _patched(tree_of, "0.31.0")
    capsys.readouterr()
    code, out, _ = _two_nodes(capsys, first, second, "--json")
    assert code == 0
    verdicts = [(v["node"], v["ok"], v["version"]) for v in json.loads(out)]
    assert verdicts == [("a", True, "0.31.0"), ("b", True, "0.31.0")]


def test_a_node_on_another_release_is_named_with_both_versions(tree_of, capsys):
    first, second = _patched(tree_of, "0.31.0"), _patched(tree_of, "0.33.0")
    capsys.readouterr()
    code, out, _ = _two_nodes(capsys, first, second, "--json")
    verdicts = json.loads(out)
    assert code == 1 and verdicts[0]["ok"] and not verdicts[1]["ok"]
    assert verdicts[1]["reason"].startswith("different vLLM version: 0.33.0 here, 0.31.0 on a")


def test_a_node_whose_source_drifted_is_named(tree_of, capsys):
    first, drifted = _patched(tree_of, "0.31.0"), tree_of("0.31.0")
    utils = drifted / "vllm/v1/worker/utils.py"
    utils.write_text(utils.read_text().replace(
        "tgt_kv_cache_group.layer_names.append(layer_name)", "tgt_kv_cache_group.layer_names.insert(0, layer_name)"))
    capsys.readouterr()
    code, out, _ = _two_nodes(capsys, first, drifted, "--json")
    assert code == 1 and json.loads(out)[1]["reason"].startswith("drifted source: vLLM's code around "
                                                                  "kv-sharing-uniform-specs")


def test_a_read_only_node_with_pending_hotfixes_is_told_to_patch_its_image(tree_of):
    root = tree_of("0.31.0")
    install = locate(vllm_root=root)
    report = node_report(install, status(install))
    # running as root, os.access calls every file writable: the image's read-only file system is this flag
    (verdict,) = judge_nodes([("gpu1", {**report, "writable": False})])
    assert not verdict.ok and verdict.reason.startswith(f"read-only vLLM at {root}: ")
    assert {"kv-sharing-uniform-specs", "kv-uniform-catches-valueerror"} <= set(verdict.pending)
    assert "patch the image" in verdict.reason


def test_a_node_that_does_not_answer_is_not_patched(tree_of, capsys):
    patched = _patched(tree_of, "0.31.0")
    capsys.readouterr()
    code, out, _ = _cluster(capsys, "status", f"a={SPECDRAFT_HERE}", "b=/nonexistent/python -m specdraft",
                            "c=false", "--vllm-root", f"a={patched}")
    lines = out.splitlines()
    assert code == 1
    assert lines[1] == "b NOT PATCHED cannot run '/nonexistent/python' here"
    assert lines[2].startswith("c NOT PATCHED no report from false cluster report --json (exit 1)")


@pytest.mark.parametrize("argv", [
    ["status", "no-equals-sign"],
    ["status", "a="],
    ["status", "a=x", "a=y"],
    ["status", "a='unclosed"],
    ["status", "a=x", "--vllm-root", "z=/tmp"],
    ["status", "a=x", "--vllm-root", "a=/tmp", "--python", "a=/usr/bin/python3"],
])
def test_bad_node_specs_are_one_line_and_exit_2(argv, capsys):
    code, out, err = _cluster(capsys, *argv)
    assert code == 2 and out == "" and err.startswith("specdraft: error: ") and "Traceback" not in err


def test_a_node_command_that_floods_its_output_is_cut_off_not_read_to_the_end():
    from specdraft.patching.cluster import NodeSpec, ask_node
    import time as clock

    started = clock.monotonic()
    answer = ask_node(NodeSpec(name="n1", command=("sh", "-c", "cat /dev/zero", "sh")), timeout_s=60, max_bytes=1 << 20)
    assert answer == ("no report from sh -c 'cat /dev/zero' sh cluster report --json: "
                      "it wrote more than 1 MiB")
    assert clock.monotonic() - started < 30


def test_a_node_that_never_answers_is_given_up_at_the_timeout_with_its_children():
    from specdraft.patching.cluster import NodeSpec, ask_node

    answer = ask_node(NodeSpec(name="n1", command=("sh", "-c", "sleep 300 & sleep 300", "sh")), timeout_s=1)
    assert answer == "no answer within 1 s from sh -c 'sleep 300 & sleep 300' sh cluster report --json"
