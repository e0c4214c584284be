"""launch serves with the install it planned, patched and checked, or refuses before touching anything."""

import os
import sys

import pytest

from specdraft.errors import ExitCode

TARGET, DRAFT = "google/gemma-4-31B-it", "google/gemma-4-E2B-it"


@pytest.fixture
def tree_copy(tmp_path):
    from tools.release_trees import copy_tree, release_tree

    return copy_tree(release_tree("0.26.0", progress=lambda line: None), tmp_path / "site-packages")


@pytest.fixture
def interpreter(tmp_path, tree_copy):
    """An interpreter whose vLLM is ``tree_copy`` (the tree on its path, nothing of it imported)."""
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f"#!/bin/sh\nPYTHONPATH={tree_copy} exec {sys.executable} \"$@\"\n")
    python.chmod(0o755)
    return python


def _snapshot(tree):
    return {p: p.stat().st_mtime_ns for p in sorted(tree.rglob("*.py"))}


def test_vllm_root_without_dry_run_is_refused_before_patching(specdraft_cli, tree_copy):
    before = _snapshot(tree_copy)
    done = specdraft_cli("launch", "--target", TARGET, "--draft", DRAFT, "--vllm-root", str(tree_copy))
    assert done.returncode == ExitCode.BAD_INPUT and "Traceback" not in done.stderr
    assert f"--vllm-root {tree_copy} is a source tree to plan against" in done.stderr
    assert _snapshot(tree_copy) == before


def test_a_vllm_on_path_that_is_not_python_is_never_executed(specdraft_cli, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    marker = tmp_path / "executed"
    (bin_dir / "vllm").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (bin_dir / "vllm").chmod(0o755)
    done = specdraft_cli("launch", "--target", TARGET, "--draft", DRAFT, "--hotfixes", "skip",
                         env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
    assert done.returncode in (ExitCode.ATTENTION, ExitCode.BAD_INPUT) and not marker.exists()
    assert f"the `vllm` on PATH ({bin_dir / 'vllm'}) is not a Python console script" in done.stderr


def test_hotfixes_check_refuses_when_their_status_is_unknown(specdraft_cli):
    done = specdraft_cli("launch", "--target", TARGET, "--draft", DRAFT, "--hotfixes", "check", "--dry-run")
    assert done.returncode == ExitCode.ATTENTION
    line = next(line for line in done.stdout.splitlines() if " hotfixes " in line)
    assert line.split()[0] == "ERROR" and "status unknown" in line


def test_the_serve_command_runs_the_planned_interpreter(interpreter):
    from specdraft.launch import serve_command
    from specdraft.planning import LaunchRequest, build_launch_plan

    plan = build_launch_plan(LaunchRequest(target=TARGET, draft=DRAFT, python=str(interpreter)))
    program, argv = serve_command(plan)
    assert program == str(interpreter)
    assert argv[:4] == [str(interpreter), "-m", "vllm.entrypoints.cli.main", "serve"] and argv[4:] == plan.argv[2:]


def test_launch_patches_and_then_runs_the_very_tree_it_checked(specdraft_cli, interpreter, tree_copy):
    done = specdraft_cli("launch", "--target", TARGET, "--draft", DRAFT, "--python", str(interpreter), timeout=300)
    assert "specdraft: exec " + str(interpreter) in done.stderr, done.stderr[-3000:]
    # the patched copy is what the served process imports: vLLM's own start-up fails here (no GPU build),
    # from inside that tree
    assert f'File "{tree_copy}{os.sep}vllm' in done.stderr, done.stderr[-3000:]
    from specdraft.patching import locate, status

    statuses = {report.id: str(getattr(report.status, "value", report.status))
                for report in status(locate(vllm_root=tree_copy))}
    assert statuses["kv-sharing-uniform-specs"] == "applied", statuses
