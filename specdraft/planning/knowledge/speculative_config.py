"""The speculative config, with vLLM's own field names, and its ``--speculative-config`` JSON."""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

SpeculativeMethod = Literal["draft_model", "mtp", "ngram", "ngram_gpu", "suffix", "eagle", "eagle3", "dflash",
                            "dspark"]
RejectionSampleMethod = Literal["standard", "synthetic", "block", "fly", "strict", "probabilistic"]

# Methods whose proposer is a second checkpoint named by `model`.
METHODS_WITH_DRAFT_MODEL = frozenset({"draft_model", "mtp", "eagle", "eagle3", "dflash", "dspark"})
# Substrings of a draft path that make vLLM auto-detect a method other than draft_model
# (SpeculativeConfig.__post_init__, 0.19-0.33) when `method` is left out.
AUTODETECT_MARKERS = ("eagle-", "eagle3", "dflash", "dspark")


class SpeculativeConfig(BaseModel):
    """What vLLM reads from ``--speculative-config``; ``to_vllm()`` renders exactly that JSON.

    Fields left at ``None`` are omitted, so vLLM applies its own default for them.
    Validation is pure: no file or network access happens here.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    method: SpeculativeMethod | None = None
    """Proposer kind. ``None`` lets vLLM detect it: a Gemma 4 draft checkpoint becomes ``draft_model``."""
    model: str | None = None
    """Draft checkpoint: a local directory or a Hugging Face repo id."""
    num_speculative_tokens: int = Field(default=4, gt=0)
    """Tokens the draft proposes per target step (gamma)."""
    draft_tensor_parallel_size: int | None = Field(default=None, ge=1)
    """Tensor-parallel size of the draft: 1 or the target's (``draft_model`` needs the target's)."""
    quantization: str | None = None
    """The draft's ``--quantization`` method (for example ``modelopt``, ``compressed-tensors``)."""
    max_model_len: int | None = Field(default=None, ge=1)
    """Longest sequence the draft proposes for; vLLM uses min(draft, target) when unset."""
    revision: str | None = None
    """Hub revision (branch, tag or commit) of the draft checkpoint."""
    rejection_sample_method: RejectionSampleMethod | None = None
    """``standard`` (exact rejection sampling), ``synthetic`` (forced acceptance, for benchmarking) or ``fly``
    (vLLM 0.33.0: lossy, the outputs then differ from the target's)."""
    synthetic_acceptance_rates: list[float] | None = None
    """Per-position forced acceptance rates, non-increasing, one per speculative token (synthetic only)."""
    synthetic_acceptance_length: float | None = None
    """Forced mean acceptance length in [1, num_speculative_tokens + 1] (synthetic only)."""
    prompt_lookup_min: int | None = Field(default=None, ge=1)
    """ngram / ngram_gpu: the shortest n-gram of the context matched against its end."""
    prompt_lookup_max: int | None = Field(default=None, ge=1)
    """ngram / ngram_gpu: the longest n-gram matched."""
    suffix_decoding_max_tree_depth: int | None = Field(default=None, ge=1)
    """suffix: the deepest suffix-tree match (vLLM's default 24)."""
    attention_backend: str | None = None
    """The drafter's attention backend (vLLM 0.21.0 on); unset, every proposer but Gemma 4's MTP picks its own."""
    num_speculative_tokens_per_batch_size: list[tuple[int, int, int]] | None = None
    """``[(first, last, K), ...]``: K for the batch sizes first..last (inclusive), vLLM 0.24.0 and later. The
    ranges start at 1 and do not overlap; K = 0 drafts nothing at those sizes; ``num_speculative_tokens`` is
    the largest K (vLLM caps every K at it)."""

    @model_validator(mode="after")
    def _check_consistency(self) -> "SpeculativeConfig":
        if self.method in METHODS_WITH_DRAFT_MODEL and self.model is None:
            raise ValueError(f"model: method={self.method!r} needs a draft checkpoint in 'model'")
        if self.method in ("ngram", "ngram_gpu", "suffix") and self.model is not None:
            raise ValueError(f"model: method={self.method!r} uses no draft checkpoint, got model={self.model!r}")
        if self.method is None and self.model is None:
            raise ValueError("model: give a draft checkpoint, or a method that needs none (ngram, suffix)")
        self._check_synthetic()
        self._check_schedule()
        return self

    def _check_schedule(self) -> None:
        """vLLM's own rules for the schedule (vllm/v1/spec_decode/dynamic/utils.py), plus: no K above
        ``num_speculative_tokens``, which vLLM would lower silently."""
        schedule = self.num_speculative_tokens_per_batch_size
        if schedule is None:
            return
        name = "num_speculative_tokens_per_batch_size"
        if not schedule:
            raise ValueError(f"{name}: must not be empty")
        previous_last = 0
        for first, last, k in schedule:
            if not 1 <= first <= last:
                raise ValueError(f"{name}: ({first}, {last}, {k}) is not a range of batch sizes >= 1")
            if first <= previous_last:
                raise ValueError(f"{name}: ranges must be sorted and must not overlap, got {schedule!r}")
            if not 0 <= k <= self.num_speculative_tokens:
                raise ValueError(f"{name}: K = {k} must be in [0, num_speculative_tokens = "
                                 f"{self.num_speculative_tokens}]")
            previous_last = last
        if schedule[0][0] != 1:
            raise ValueError(f"{name}: the first range must start at batch size 1, got {schedule[0][0]}")

    def _check_synthetic(self) -> None:
        rates, length = self.synthetic_acceptance_rates, self.synthetic_acceptance_length
        if self.rejection_sample_method != "synthetic":
            if rates is not None or length is not None:
                name = "synthetic_acceptance_rates" if rates is not None else "synthetic_acceptance_length"
                raise ValueError(
                    f"{name}: only valid with rejection_sample_method='synthetic', "
                    f"got rejection_sample_method={self.rejection_sample_method!r}"
                )
            return
        if (rates is None) == (length is None):
            raise ValueError(
                "synthetic_acceptance_rates: rejection_sample_method='synthetic' needs exactly one of "
                f"synthetic_acceptance_rates or synthetic_acceptance_length, got rates={rates!r}, length={length!r}"
            )
        k = self.num_speculative_tokens
        if rates is not None:
            if len(rates) != k:
                raise ValueError(f"synthetic_acceptance_rates: needs {k} entries (num_speculative_tokens), got {rates!r}")
            if any(not 0.0 <= r <= 1.0 for r in rates):
                raise ValueError(f"synthetic_acceptance_rates: every entry must be in [0, 1], got {rates!r}")
            if any(later > earlier for earlier, later in zip(rates, rates[1:])):
                raise ValueError(f"synthetic_acceptance_rates: must be non-increasing, got {rates!r}")
        if length is not None and not 1.0 <= length <= k + 1:
            raise ValueError(f"synthetic_acceptance_length: must be in [1, {k + 1}], got {length!r}")

    def as_dict(self) -> dict:
        """The fields that are set, in declaration order: the object vLLM receives."""
        return self.model_dump(exclude_none=True)

    def to_vllm(self) -> str:
        """The exact JSON text for ``--speculative-config``."""
        return json.dumps(self.as_dict())

    def set_fields(self) -> list[str]:
        """Names of the fields this config sends to vLLM."""
        return list(self.as_dict())
