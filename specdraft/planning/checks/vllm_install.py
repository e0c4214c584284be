"""The pair checks of the serving vLLM: there to serve, recent enough for the target's family, patched with the
hotfixes the pairing needs, and what its install does at tensor parallelism (a served start-up crash)."""

from __future__ import annotations

import shlex

from packaging.version import InvalidVersion, Version

from specdraft.families import DEFAULT_FAMILY, ModelFamily
from specdraft.findings import Finding
from specdraft.patching import Status, Trait
from specdraft.planning.decisions.hybrid_kv import HYBRID_FLAG
from specdraft.planning.decisions.pairing_traits import hotfixes_needed
from specdraft.planning.facts.vllm_install import VllmFacts
from specdraft.planning.knowledge.gpu_memory import PROFILES
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


TP_CRASHED_RELEASES = ("0.26.0",)
"""Releases in which launch's TP 2 plans died at start-up on 2 x H200 with FlashInfer installed: the 31B alone and
with its MTP assistant (benchmarks/gpu/raw/real-stack-h200-m3/, t31_a31_plan_*_1_tp2) and the MTP pair again
(benchmarks/gpu/raw/real-stack-h200-m4/, t31_a31_plan_0.85_1_tp2): CUBLAS_STATUS_EXECUTION_FAILED and an illegal
memory access on both ranks; the same plans served at TP 2 on a staging without FlashInfer."""


def fuses_allreduce_rms(capability: tuple[int, int]) -> bool:
    """Whether vLLM 0.26.0 turns its FlashInfer all-reduce + RMSNorm fusion on by itself at TP > 1 with FlashInfer
    installed on a GPU of ``capability``: 9.0 and the 10.x family (vllm/config/vllm.py,
    enable_allreduce_rms_fusion, which the -O2 and -O3 levels use)."""
    return capability == (9, 0) or capability[0] == 10


FUSION_OFF = """--compilation-config '{"pass_config": {"fuse_allreduce_rms": false}}'"""
"""vLLM 0.26.0's switch for that fusion (vllm/config/compilation.py, PassConfig.fuse_allreduce_rms)."""


def check_tp_start_up(vllm: VllmFacts, tensor_parallel_size: int, profile: str) -> Finding | None:
    """A TP plan on a release whose TP servers crashed at start-up on H200s with FlashInfer installed (None: no
    such plan). ``has_flashinfer`` None counts as installed: a published wheel requires it."""
    if (tensor_parallel_size < 2 or vllm.version not in TP_CRASHED_RELEASES or vllm.has_flashinfer is False
            or not fuses_allreduce_rms(PROFILES[profile].compute_capability)):
        return None
    return Finding(level="warning", check="tp-start-up",
                   message=f"vLLM {vllm.version} with FlashInfer at tensor-parallel size {tensor_parallel_size}: "
                           "launch's TP 2 plans of the 31B (alone and with its MTP assistant) died at start-up on "
                           "2 x H200, twice (CUBLAS_STATUS_EXECUTION_FAILED, illegal memory access on both ranks; "
                           "benchmarks/gpu/raw/real-stack-h200-m3/ and real-stack-h200-m4/); not isolated: the "
                           "engine logs show vLLM's FlashInfer all-reduce + RMSNorm fusion on ('Enabled custom "
                           "fusions: allreduce_rms', 'Auto-selected flashinfer allreduce backend: mnnvl'), the "
                           "suspect, not the proven cause",
                   hint=f"if the engine log says 'allreduce backend: mnnvl' and start-up fails, try (untested) "
                        f"{FUSION_OFF} after --, or --tensor-parallel-size 1 where the model fits one GPU")
