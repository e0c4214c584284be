"""Real vLLM sources to patch without touching anyone's install: the Python files of the published release wheels.

- ``release_tree(version)`` reads ``vllm/**/*.py`` and the dist-info ``METADATA`` of the published
  ``vllm==VERSION`` wheel (once) into ``$SPECDRAFT_CACHE/vllm-trees/VERSION``, a directory shaped like
  site-packages; the wheel's kernels are never downloaded (``tools.remote_wheel``). That cache is pristine:
  copy it (``copy_tree``) before patching.

A private, patchable copy of an installed vLLM that still imports (for probes and engines) is
``specdraft.testbed.vllm_env.private_vllm_env``. Used by the tests and ``benchmarks/patch_status.py``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable

from specdraft.cache import cache_root
from tools.remote_wheel import Transfer, extract_members, find_wheel

Progress = Callable[[str], None]


def is_tree_member(name: str) -> bool:
    """What a release tree keeps of a vLLM wheel: every test reads its Python sources or its METADATA
    (the version, and the requirements a docker image is judged against)."""
    top = name.split("/", 1)[0]
    return (top == "vllm" and name.endswith(".py")) or (top.endswith(".dist-info") and name.endswith("/METADATA"))


def release_tree(version: str, progress: Progress = print) -> Path:
    """A pristine site-packages-shaped directory holding vLLM ``version``'s Python sources."""
    trees = cache_root() / "vllm-trees"
    tree = trees / version
    # a whole wheel beside its tree is dead weight (caches made before this kept them under wheels/)
    for kept in (cache_root() / "wheels").glob(f"vllm-{version}-*.whl"):
        kept.unlink(missing_ok=True)
    if (tree / ".complete").exists():
        return tree
    trees.mkdir(parents=True, exist_ok=True)
    fetch_tree(version, trees, progress)
    return tree


def fetch_tree(version: str, trees: Path, progress: Progress = print) -> Transfer:
    """Read vLLM ``version``'s tree from PyPI into ``trees/version``; what it cost.

    The tree is written under a temporary name and renamed into place whole, so a reader never sees
    half a tree, and two runs that race both end with one complete tree.
    """
    wheel = find_wheel("vllm", version)
    progress(f"reading the .py files of {wheel.filename} ({wheel.size / 1e6:.0f} MB) from PyPI ...")
    staging = Path(tempfile.mkdtemp(dir=trees, prefix=f".{version}-"))
    try:
        with tempfile.TemporaryDirectory(dir=trees, prefix=f".{version}-download-") as spool:
            transfer = extract_members(wheel, staging, is_tree_member, spool=Path(spool))
        (staging / ".complete").write_text(wheel.filename + "\n")
        try:
            os.rename(staging, trees / version)
        except OSError:  # another process finished first; its tree is as good as ours
            if not (trees / version / ".complete").exists():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    progress(f"read {transfer.members} files: {transfer.bytes / 1e6:.1f} MB in {transfer.requests} requests")
    return transfer


def copy_tree(tree: Path, dest: Path) -> Path:
    """A writable copy of an unpacked release tree (the cache itself must stay pristine)."""
    shutil.copytree(tree, dest, ignore=shutil.ignore_patterns(".complete"))
    return dest
