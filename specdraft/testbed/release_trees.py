"""Real vLLM sources to patch without touching anyone's install: the published release wheels (test tooling:
the patch engine, the planner and the CLI never call this module).

- ``release_tree(version)`` downloads the published ``vllm==VERSION`` wheel (once), unpacks only
  ``vllm/**/*.py`` and the dist-info ``METADATA`` into ``$SPECDRAFT_CACHE/vllm-trees/VERSION``, a
  directory shaped like site-packages, and deletes the wheel. That cache is pristine: copy it
  (``copy_tree``) before patching.

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


def release_tree(version: str, progress: Progress = print) -> Path:
    """A pristine site-packages-shaped directory holding vLLM ``version``'s Python sources.

    The wheel (300 to 450 MB, nearly all compiled kernels) is downloaded into a staging directory and
    deleted once its ``.py`` files (about 40 MB) are out: the tests never read anything else.
    """
    trees = cache_root() / "vllm-trees"
    tree = trees / version
    # a whole wheel beside its tree is dead weight (caches made before this kept them under wheels/)
    for kept in (cache_root() / "wheels").glob(f"vllm-{version}-*.whl"):
        kept.unlink(missing_ok=True)
    if (tree / ".complete").exists():
        return tree
    trees.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=trees, prefix=f".{version}-download-") as download:
        wheel = _download_wheel(version, Path(download), progress)
        progress(f"unpacking the .py files of {wheel.name} into {tree} (the wheel is not kept) ...")
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


def _download_wheel(version: str, into: Path, progress: Progress) -> Path:
    progress(f"downloading the vllm=={version} wheel ...")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-cache-dir",
         "--no-deps", "--only-binary=:all:", "-d", str(into), f"vllm=={version}"],
        capture_output=True, text=True,
    )
    if done.returncode != 0:
        raise UserError(
            f"could not download vllm=={version} from PyPI: {done.stderr.strip().splitlines()[-1:]}",
            hint=f"pip download --no-deps --only-binary=:all: vllm=={version}",
        )
    (wheel,) = into.glob("*.whl")
    return wheel


def copy_tree(tree: Path, dest: Path) -> Path:
    """A writable copy of an unpacked release tree (the cache itself must stay pristine)."""
    shutil.copytree(tree, dest, ignore=shutil.ignore_patterns(".complete"))
    return dest
