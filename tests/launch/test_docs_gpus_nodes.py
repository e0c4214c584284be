"""Every command of docs/gpus-and-nodes.md runs: launch against a real release tree, cluster status with its
ssh nodes reached through this interpreter instead."""

from __future__ import annotations

import re
import shlex
import sys

from tools.release_trees import copy_tree, release_tree
from tests.documented import commands, read

PAGE = "docs/gpus-and-nodes.md"


def _commands() -> list[list[str]]:
    return [shlex.split(line, comments=True)[3:] for line in commands(read(PAGE))]


def test_the_page_shows_hosts_nodes_ray_docker_and_the_cluster_check():
    words = [" ".join(argv) for argv in _commands()]
    assert sum(w.startswith("launch") for w in words) == 5 and words[-1].startswith("cluster status")
    for wanted in ("--gpus-per-node 8", "--nodes 2", "--multi-node ray", "--docker", "--data-parallel-size 4"):
        assert any(wanted in w for w in words), wanted


def test_every_launch_command_plans_without_errors(specdraft_cli):
    root = release_tree("0.26.0", progress=lambda _: None)
    for argv in _commands():
        if argv[0] == "launch":
            done = specdraft_cli(*argv, "--vllm-root", str(root))
            assert done.returncode == 0, (argv, done.stderr, done.stdout[-2000:])


def test_the_cluster_check_names_the_unpatched_node(specdraft_cli, tmp_path):
    (argv,) = [a for a in _commands() if a[0] == "cluster"]
    pristine = release_tree("0.31.0", progress=lambda _: None)
    trees = {name: copy_tree(pristine, tmp_path / name) for name in ("spark1", "spark2")}
    assert specdraft_cli("patch", "apply", "--vllm-root", str(trees["spark1"])).returncode == 0
    here = f"{sys.executable} -m specdraft"
    nodes = [re.sub(r"ssh \S+ specdraft", here, node) for node in argv[2:]]
    roots = [word for name, tree in trees.items() for word in ("--vllm-root", f"{name}={tree}")]
    done = specdraft_cli("cluster", "status", *nodes, *roots)
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines()[1].startswith("spark2 NOT PATCHED not patched: ")
