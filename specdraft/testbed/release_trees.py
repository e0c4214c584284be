"""Real vLLM sources to patch without touching anyone's install: the published release wheels (test tooling:
the patch engine, the planner and the CLI never call this module).

- ``release_tree(version)`` downloads the published ``vllm==VERSION`` wheel (once, into
  ``$SPECDRAFT_CACHE/wheels``) and unpacks only ``vllm/**/*.py`` and the dist-info ``METADATA`` into
  ``$SPECDRAFT_CACHE/vllm-trees/VERSION``, a directory shaped like site-packages. That cache is
  pristine: copy it (``copy_tree``) before patching.

A private, patchable copy of an installed vLLM that still imports (for probes and engines) is
``specdraft.testbed.vllm_env.private_vllm_env``. Used by the tests and ``benchmarks/patch_status.py``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Callable

from specdraft.cache import cache_root
from specdraft.errors import UserError

Progress = Callable[[str], None]


def release_wheel(version: str, progress: Progress = print) -> Path:
    """The ``vllm==version`` wheel from PyPI, downloaded into the cache when missing."""
    wheels = cache_root() / "wheels"
    found = sorted(wheels.glob(f"vllm-{version}-*.whl"))
    if found:
        return found[0]
    wheels.mkdir(parents=True, exist_ok=True)
    progress(f"downloading vllm=={version} wheel into {wheels} ...")
    with tempfile.TemporaryDirectory(dir=wheels, prefix=".download-") as staging:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
             "--no-deps", "--only-binary=:all:", "-d", staging, f"vllm=={version}"],
            capture_output=True, text=True,
        )
        if done.returncode != 0:
            raise UserError(
                f"could not download vllm=={version} from PyPI: {done.stderr.strip().splitlines()[-1:]}",
                hint=f"pip download --no-deps --only-binary=:all: -d {wheels} vllm=={version}",
            )
        (wheel,) = Path(staging).glob("*.whl")
        final = wheels / wheel.name
        os.replace(wheel, final)
    return final


def release_tree(version: str, progress: Progress = print) -> Path:
    """A pristine site-packages-shaped directory holding vLLM ``version``'s Python sources."""
    trees = cache_root() / "vllm-trees"
    tree = trees / version
    if (tree / ".complete").exists():
        return tree
    wheel = release_wheel(version, progress)
    progress(f"unpacking the .py files of {wheel.name} into {tree} ...")
    trees.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=trees, prefix=f".{version}-"))
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            top = name.split("/", 1)[0]
            if (top == "vllm" and name.endswith(".py")) or (
                top.endswith(".dist-info") and name.endswith("/METADATA")
            ):
                archive.extract(name, staging)
    (staging / ".complete").write_text(wheel.name + "\n")
    try:
        os.rename(staging, tree)
    except OSError:  # another process finished first; its tree is as good as ours
        shutil.rmtree(staging)
    return tree


def copy_tree(tree: Path, dest: Path) -> Path:
    """A writable copy of an unpacked release tree (the cache itself must stay pristine)."""
    shutil.copytree(tree, dest, ignore=shutil.ignore_patterns(".complete"))
    return dest
