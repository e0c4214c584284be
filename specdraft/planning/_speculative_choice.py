"""Deciding the speculative config: the method where vLLM would detect the wrong one, and K.

The default K per GPU profile is the fastest measured there; where the figures come from is in
docs/ARCHITECTURE.md ("Default K").
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from specdraft.families import rules_for
from specdraft.planning._checkpoint import Checkpoint
from specdraft.planning._k_schedule import KScheduleDecision
from specdraft.planning._request import LaunchRequest
from specdraft.planning._speculative import AUTODETECT_MARKERS, SpeculativeConfig


class DefaultK(BaseModel):
    model_config = ConfigDict(frozen=True)

    k: int
    reason: str


# A draft model's launches cost ~10 ms of host time per drafted token on Hopper, so longer drafts
# slow down there; on a DGX Spark the slow target step hides that cost.
_HOPPER_K = DefaultK(k=3, reason="the fastest K measured on an H100 and an H200 for an E2B draft beside the 31B: "
                                 "longer drafts are host-bound there (docs/gpu/README.md)")
_SPARK_K = DefaultK(k=4, reason="the validated DGX Spark setting (9 -> 18 tok/s with an E2B draft)")
_DRAFT_MODEL_K = {"dgx-spark": _SPARK_K, "h100": _HOPPER_K, "h200": _HOPPER_K}
# An MTP assistant is GPU-bound (no host line), so longer drafts keep paying; the H200 takes the H100's K.
_HOPPER_ASSISTANT_K = DefaultK(k=8, reason="tune's pick at alpha 0.70 from the acceptance and step costs measured on "
                                           "an H100 with the 31B's MTP assistant (vLLM 0.26.0); K = 9, the longest "
                                           "measured, was the fastest at alpha 0.70 and 0.85 (docs/gpu/README.md)")
_ASSISTANT_K = {"dgx-spark": DefaultK(k=4, reason="the published recipes' N for Gemma 4 MTP assistants (2 for E2B, 4 "
                                                  "for E4B/26B, 4-8 for 31B); not measured by specdraft"),
                "h100": _HOPPER_ASSISTANT_K, "h200": _HOPPER_ASSISTANT_K}

# Beside a MoE target (26B-A4B: ~4 ms per token on an H200) a drafted token's host time is no longer hidden:
# measured on an H200 with vLLM 0.26.0 (docs/gpu/README.md section 6), the MTP assistant was fastest at K = 4
# (1.67x at alpha 0.85, 1.34x at 0.70; K = 8 near break-even) and the E2B draft lost at every K (best K = 1).
_HOPPER_MOE_K = {
    True: DefaultK(k=4, reason="the fastest K measured on an H200 for the 26B-A4B's MTP assistant at alpha 0.70 and "
                               "0.85 (vLLM 0.26.0, docs/gpu/README.md section 6)"),
    False: DefaultK(k=1, reason="the least bad K measured on an H200 for an E2B draft beside the 26B-A4B: every K lost "
                                "to the target alone (0.62x at K = 1; docs/gpu/README.md section 6)"),
}


def default_num_speculative_tokens(profile: str, assistant: bool = False, moe_target: bool = False) -> DefaultK:
    """The K a launch uses when none is given, and why: per GPU profile, for a draft model or an MTP assistant,
    beside a dense or a mixture-of-experts target (measured for the latter on Hopper only)."""
    if moe_target and profile in ("h100", "h200"):
        return _HOPPER_MOE_K[assistant]
    table = _ASSISTANT_K if assistant else _DRAFT_MODEL_K
    return table.get(profile, table["dgx-spark"])


class SpeculativeChoice(BaseModel):
    """The speculative config the plan passes, with the reasons behind what it set."""

    model_config = ConfigDict(frozen=True)

    config: SpeculativeConfig
    method_reason: str
    """Why ``method`` was set; empty when it is left to vLLM's detection or was given."""
    k_reason: str
    """Where K came from: ``given`` or the profile's default and its basis."""

    @property
    def resolved_method(self) -> str:
        """The method vLLM runs: the configured one, else what it detects (``draft_model``)."""
        return self.config.method or "draft_model"

    def with_k_schedule(self, decision: KScheduleDecision) -> "SpeculativeChoice":
        """The choice with the K (and schedule) a load test decided; unchanged where it decided none."""
        if decision.k is None:
            return self
        config = SpeculativeConfig(**{**self.config.as_dict(), "num_speculative_tokens": decision.k,
                                      "num_speculative_tokens_per_batch_size": decision.schedule})
        what = "the largest K of the schedule" if decision.schedule else "chosen"
        return self.model_copy(update={"config": config, "k_reason": f"{what} from --from-bench"})


def choose_method(request: LaunchRequest, draft: Checkpoint) -> tuple[str | None, str]:
    """The method to set and why: the given one, else one where vLLM's detection would go wrong (None: leave
    it to vLLM, which detects ``draft_model``)."""
    if request.method is not None:
        return request.method, ""
    if draft.is_assistant:
        return "mtp", f"the draft is a {rules_for(draft.config).display_name} MTP assistant"
    if any(marker in request.draft.lower() for marker in AUTODETECT_MARKERS):
        return "draft_model", "the draft path would make vLLM guess an EAGLE/DFlash/DSpark head"
    return None, ""


def choose_speculative(request: LaunchRequest, draft: Checkpoint, target: Checkpoint | None = None) -> SpeculativeChoice:
    """Method, K, draft TP, quantization and revision for ``--speculative-config``."""
    method, why = choose_method(request, draft)
    if request.num_speculative_tokens:
        k, k_reason = request.num_speculative_tokens, "given"
    else:
        moe_target = target is not None and bool(target.text_config.get("enable_moe_block"))
        default = default_num_speculative_tokens(request.profile, draft.is_assistant, moe_target)
        k, k_reason = default.k, default.reason
    config = SpeculativeConfig(
        method=method,
        model=request.draft,
        num_speculative_tokens=k,
        draft_tensor_parallel_size=request.draft_tensor_parallel_size or request.tensor_parallel_size,
        quantization=request.draft_quantization or draft.quantization.method,
        revision=request.draft_revision,
    )
    return SpeculativeChoice(config=config, method_reason=why, k_reason=k_reason)
