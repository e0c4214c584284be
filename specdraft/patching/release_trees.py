"""Real vLLM sources to patch without touching anyone's install: released wheels and private copies.

- ``release_tree(version)`` downloads the published ``vllm==VERSION`` wheel (once, into
  ``$SPECDRAFT_CACHE/wheels``) and unpacks only ``vllm/**/*.py`` and the dist-info ``METADATA`` into
  ``$SPECDRAFT_CACHE/vllm-trees/VERSION``, a directory shaped like site-packages. That cache is
  pristine: copy it (``copy_tree``) before patching.
- ``private_vllm_env(python, dest)`` builds a venv at ``dest`` whose ``vllm`` package and dist-info
  are private copies of the ones installed beside ``python``, while everything else (torch, ...)
  is read through a ``.pth`` file from the original site-packages. Patching the copy leaves the
  shared install untouched, and a real ``import vllm`` still works there (probes, engines).

Used by the tests and the benchmark; the engine itself never calls this module.
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

from specdraft.errors import UserError

Progress = Callable[[str], None]


def cache_dir() -> Path:
    """specdraft's cache root: ``$SPECDRAFT_CACHE`` or ``~/.cache/specdraft``."""
    return Path(os.environ.get("SPECDRAFT_CACHE", Path.home() / ".cache" / "specdraft"))


def release_wheel(version: str, progress: Progress = print) -> Path:
    """The ``vllm==version`` wheel from PyPI, downloaded into the cache when missing."""
    wheels = cache_dir() / "wheels"
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
    trees = cache_dir() / "vllm-trees"
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


def site_packages_of(python: str | Path) -> Path:
    """The directory holding ``vllm`` for interpreter ``python`` (asked in a subprocess)."""
    done = subprocess.run(
        [str(python), "-c",
         "import importlib.util, os; s = importlib.util.find_spec('vllm');"
         "print(os.path.dirname(s.submodule_search_locations[0]))"],
        capture_output=True, text=True, check=True,
    )
    return Path(done.stdout.strip())


def private_vllm_env(python: str | Path, dest: Path, progress: Progress = print) -> Path:
    """A venv at ``dest`` with private copies of ``python``'s vLLM; returns the new venv's python.

    The copy of the ``vllm`` package is made of hard links where the file system allows (instant,
    no extra disk): the patch engine only ever replaces files by rename, so a patched copy never
    writes through to the shared install. Our own copies of the two packages win over the ``.pth``
    path because site-packages comes first on ``sys.path``.
    """
    source = site_packages_of(python)
    dist_infos = [d for d in source.glob("vllm*.dist-info") if (d / "METADATA").exists()]
    subprocess.run([str(python), "-m", "venv", "--without-pip", str(dest)], check=True)
    new_python = dest / "bin" / "python"
    target = site_packages_of_venv(new_python)
    progress(f"copying vllm from {source} into {target} (hard links where possible) ...")
    shutil.copytree(source / "vllm", target / "vllm", copy_function=_link_or_copy,
                    ignore=shutil.ignore_patterns(".specdraft"))
    for dist_info in dist_infos:
        shutil.copytree(dist_info, target / dist_info.name)
    (target / "_specdraft_shared_site_packages.pth").write_text(f"{source}\n")
    return new_python


def site_packages_of_venv(python: Path) -> Path:
    done = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    )
    return Path(done.stdout.strip())


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
