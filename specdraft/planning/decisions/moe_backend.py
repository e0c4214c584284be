"""``--moe-backend`` for an NVFP4 mixture-of-experts target (26B-A4B), per GPU profile and vLLM release.

Per release, ``data/moe_backend.json`` holds what its source says (read by ``tools/release_tables/moe_backend.py``,
which does not ship): the ``--moe-backend`` choices (the ``MoEBackend`` literal of ``vllm/config/kernel.py``; empty
where the flag does not exist), the activation Gemma 4's experts pass, and the NVFP4 MoE kernel vLLM picks by itself
on each profile's GPU (``tools.release_tables.moe_kernels.nvfp4_pick``: SM 9.0 for H100/H200, SM 12.1 for the DGX
Spark's GB10).

On SM12x only Marlin (weights dequantized to BF16 in the kernel) is known to give correct NVFP4 MoE output:
the CUTLASS FP4 grouped GEMMs produced NaN / ``!!!!!`` with Gemma 4 26B-A4B on GB10 (vLLM 0.19, where the
source says VLLM_CUTLASS ran) and repeated garbage through FlashInfer's CUTLASS MoE (GB10, FlashInfer
0.6.18), both fixed by ``--moe-backend marlin``. So a release whose own pick there is anything else gets
the flag; a release without it is refused.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import BaseModel, ConfigDict

from specdraft.checkpoints import Checkpoint
from specdraft.findings import Finding
from specdraft.planning.facts.moe_layout import is_moe_target
from specdraft.planning.knowledge.release_tables import ReleaseRule, ReleaseTable, data_text

# The compute capability of each GPU profile's card (NVIDIA's CUDA GPU list: H100/H200 9.0, GB10 12.1).
PROFILE_CAPABILITY = {"dgx-spark": 121, "h100": 90, "h200": 90}
# NVFP4 MoE kernels known to give correct output on SM12x, and why we know.
CORRECT_ON_SM12X = {"MARLIN": "--moe-backend marlin made Gemma 4 26B-A4B NVFP4 correct on GB10 (DGX Spark)"}
WRONG_ON_SM12X = (
    "the CUTLASS FP4 MoE kernels gave NaN scales and '!!!!!' with Gemma 4 26B-A4B NVFP4 on GB10 (vLLM 0.19, "
    "VLLM_CUTLASS) and repeated garbage through FlashInfer's CUTLASS MoE (GB10, FlashInfer 0.6.18: "
    "https://github.com/MiaAI-Lab/GLM-5.3-Flash-NVFP4-Dual-DGX-Spark/issues/1); Marlin restored correct output")
MARLIN = "marlin"


class MoeBackendSupport(BaseModel):
    """One release's NVFP4 MoE kernel choice for Gemma 4 (see the module docstring)."""

    model_config = ConfigDict(frozen=True)

    moe_backend_choices: tuple[str, ...]
    gemma4_moe_activation: str
    nvfp4_pick: dict[str, str]
    """``sm<capability>`` -> the NvFp4MoeBackend vLLM picks for a ModelOpt NVFP4 Gemma 4 MoE on that GPU."""


class MoeBackendRule(ReleaseRule, MoeBackendSupport):
    read: list[str]
    """The releases whose source was read for this rule."""


@lru_cache(maxsize=1)
def moe_backend_table() -> ReleaseTable[MoeBackendRule]:
    """``data/moe_backend.json``."""
    return ReleaseTable[MoeBackendRule].model_validate_json(data_text("moe_backend.json"))


def moe_backend_support(version: str | None) -> MoeBackendSupport | None:
    """The shipped facts for ``version``; None for an unknown release or one outside 0.19.0-0.33.0."""
    rule = moe_backend_table().rule_for(version)
    return MoeBackendSupport(**rule.model_dump(include=set(MoeBackendSupport.model_fields))) if rule else None


def is_nvfp4_moe_target(target: Checkpoint | None) -> bool:
    return is_moe_target(target) and (target.quantization.algo or "").upper() == "NVFP4"


class MoeBackendChoice(BaseModel):
    """Whether to pass ``--moe-backend`` and why, with the finding the plan reports."""

    model_config = ConfigDict(frozen=True)

    value: str | None
    reason: str
    finding: Finding


def choose_moe_backend(target: Checkpoint | None, version: str | None, profile: str) -> MoeBackendChoice | None:
    """The ``--moe-backend`` an NVFP4 MoE target needs on ``profile`` with vLLM ``version``; None for any other
    target or a profile whose card is not SM12x."""
    capability = PROFILE_CAPABILITY.get(profile)
    if not is_nvfp4_moe_target(target) or capability is None or capability // 10 != 12:
        return None
    support = moe_backend_support(version)
    if support is None:
        message = (f"vLLM {version or '(not found)'} is outside the releases whose NVFP4 MoE kernel choice specdraft "
                   f"read (0.19.0-0.33.0): on a {profile} (SM {capability // 10}.{capability % 10}) only Marlin is "
                   "known to give correct output")
        return MoeBackendChoice(value=MARLIN, reason=message, finding=Finding(
            level="warning", check="moe-backend", message=message,
            hint="check that this vLLM has --moe-backend marlin (vllm serve --help=all); without it, expect NaN"))
    picked = support.nvfp4_pick[f"sm{capability}"]
    if picked in CORRECT_ON_SM12X:
        reason = f"vLLM {version} picks {picked} for NVFP4 MoE on SM {capability // 10}.x by itself"
        return MoeBackendChoice(value=None, reason=reason, finding=Finding(level="ok", check="moe-backend",
                                                                             message=reason))
    why = (f"vLLM {version} picks {picked} for {target.ref}'s NVFP4 experts on a {profile} (read from its "
           f"select_nvfp4_moe_backend); {WRONG_ON_SM12X}")
    if MARLIN not in support.moe_backend_choices:
        return MoeBackendChoice(value=None, reason=why, finding=Finding(
            level="error", check="moe-backend", message=f"{why}; this release has no --moe-backend {MARLIN}",
            hint="serve it with a vLLM from 0.19.0 on, which takes --moe-backend marlin"))
    return MoeBackendChoice(value=MARLIN, reason=why, finding=Finding(
        level="ok", check="moe-backend", message=f"--moe-backend {MARLIN}: {why}"))
