"""The pair checks of the serving vLLM: there to serve, recent enough for the target's family, and patched with the
hotfixes the pairing needs."""

from __future__ import annotations

import shlex

from packaging.version import InvalidVersion, Version

from specdraft.families import DEFAULT_FAMILY, ModelFamily
from specdraft.findings import Finding
from specdraft.patching import Status, Trait
from specdraft.planning.decisions.hybrid_kv import HYBRID_FLAG
from specdraft.planning.decisions.pairing_traits import hotfixes_needed
from specdraft.planning.facts.vllm_install import VllmFacts
from specdraft.planning.request import HotfixMode


def check_vllm(vllm: VllmFacts, family: ModelFamily = DEFAULT_FAMILY) -> Finding:
    """Whether a vLLM is there to serve, and whether it is recent enough for the target's ``family``."""
    if vllm.version is None and vllm.python:
        return Finding(level="error", check="vllm", message=f"no vLLM to serve with: {vllm.note}",
                       hint=f"{shlex.quote(vllm.python)} -m pip install vllm, or pass --python with another "
                            "interpreter")
    if vllm.version is None:
        return Finding(level="warning", check="vllm", message=f"no vLLM found: {vllm.note}; the plan assumes "
                       "every flag exists (true for 0.19-0.33)", hint="pass --python /path/to/venv/bin/python")
    try:
        too_old = Version(vllm.version) < Version(family.first_vllm)
    except InvalidVersion:
        too_old = False
    if too_old:
        return Finding(level="error", check="vllm",
                       message=f"vLLM {vllm.version} has no {family.display_name} model (it arrived in "
                               f"{family.first_vllm})",
                       hint=f"pip install 'vllm>={family.first_vllm}'")
    return Finding.ok("vllm", f"vLLM {vllm.version} at {vllm.root}")


def check_hotfixes(traits: frozenset[Trait], vllm: VllmFacts, mode: HotfixMode) -> Finding:
    """The hotfixes a pairing with ``traits`` needs (their own declarations say which) against ``vllm``."""
    python = shlex.quote(vllm.python) if vllm.python else "PYTHON"
    needed = hotfixes_needed(traits)
    if not needed:
        return Finding.ok("hotfixes", f"not needed: the pair runs without {HYBRID_FLAG} and is not an MTP pairing"
                   if not traits else f"no hotfix is needed for {', '.join(sorted(traits))}")
    if vllm.hotfixes is None:
        # --hotfixes check promises a verified install: an unknown status is not one
        return Finding(level="error" if mode == "check" else "warning", check="hotfixes",
                       message=f"hotfix status unknown: {vllm.hotfix_note}",
                       hint=f"python -m specdraft patch status --python {python}")
    drifted = [h for h in vllm.hotfixes_with(Status.DRIFTED) if h.id in needed]
    pending = [h for h in vllm.hotfixes_with(Status.PENDING) if h.id in needed]
    if drifted:
        return Finding(level="error", check="hotfixes",
                       message=f"vLLM {vllm.version}: {', '.join(h.id for h in drifted)} drifted (the code around the "
                               f"anchor changed; specdraft will not patch it): {drifted[0].detail}",
                       hint=f"python -m specdraft patch diff --python {python}")
    if pending and mode == "check":
        return Finding(level="error", check="hotfixes",
                       message=f"vLLM {vllm.version}: {', '.join(h.id for h in pending)} pending; without them "
                               + "; ".join(needed[h.id].failure for h in pending),
                       hint=f"python -m specdraft patch apply --python {python}  (or launch --hotfixes apply)")
    if pending and mode == "skip":
        return Finding(level="warning", check="hotfixes",
                       message=f"vLLM {vllm.version}: {', '.join(h.id for h in pending)} pending and --hotfixes skip "
                               "given; vLLM is expected to fail at start-up",
                       hint="launch --hotfixes apply")
    summary = ", ".join(f"{h.id} {h.status}" for h in vllm.hotfixes)
    if pending:
        return Finding(level="info", check="hotfixes", message=f"{summary}; pending ones are applied before serving")
    return Finding.ok("hotfixes", summary)
