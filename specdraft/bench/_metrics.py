"""vLLM's speculative-decoding counters on ``/metrics``, read with prometheus_client's text parser.

vLLM (v1, ``vllm/v1/spec_decode/metrics.py``) exports Prometheus counters labelled
``model_name`` and ``engine``:

- ``vllm:spec_decode_num_drafts_total``: speculative steps (one per sequence per step);
- ``vllm:spec_decode_num_draft_tokens_total``: draft tokens proposed;
- ``vllm:spec_decode_num_accepted_tokens_total``: draft tokens accepted;
- ``vllm:spec_decode_num_accepted_tokens_per_pos_total{position="i"}``: drafts whose token at 0-based
  position i was accepted. A token is accepted only if every earlier one was, so divided by the drafts
  this is the *unconditional* acceptance at position i + 1.

Counters only grow, so a run is measured as the difference of two scrapes.

Every release from 0.19 to 0.33 defines them alike (name, labels ``model_name``, ``engine`` and ``position``); a
counter's samples are ``NAME_total`` (prometheus_client appends it), and a text without ``# TYPE`` lines names the
family ``NAME_total`` itself, so both spellings are read as one (``metric_samples``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from specdraft.errors import UserError

DRAFTS = "vllm:spec_decode_num_drafts"
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens"
ACCEPTED_TOKENS = "vllm:spec_decode_num_accepted_tokens"
ACCEPTED_PER_POSITION = "vllm:spec_decode_num_accepted_tokens_per_pos"
SPEC_DECODE_METRICS = (DRAFTS, DRAFT_TOKENS, ACCEPTED_TOKENS, ACCEPTED_PER_POSITION)


@dataclass(frozen=True)
class SpecDecodeCounters:
    """One scrape (or the difference of two) of vLLM's speculative-decoding counters, summed over engines."""

    num_drafts: float
    num_draft_tokens: float
    num_accepted_tokens: float
    accepted_per_position: tuple[float, ...]
    """Index i holds the count for vLLM's ``position="i"`` (draft position i + 1)."""

    def __post_init__(self):
        counts = (self.num_drafts, self.num_draft_tokens, self.num_accepted_tokens, *self.accepted_per_position)
        if not all(math.isfinite(c) for c in counts):
            raise ValueError(f"speculative-decoding counters must be finite numbers, got {counts}")

    def __sub__(self, before: "SpecDecodeCounters") -> "SpecDecodeCounters":
        width = max(len(self.accepted_per_position), len(before.accepted_per_position))
        after_pos = self.accepted_per_position + (0.0,) * (width - len(self.accepted_per_position))
        before_pos = before.accepted_per_position + (0.0,) * (width - len(before.accepted_per_position))
        return SpecDecodeCounters(
            self.num_drafts - before.num_drafts,
            self.num_draft_tokens - before.num_draft_tokens,
            self.num_accepted_tokens - before.num_accepted_tokens,
            tuple(a - b for a, b in zip(after_pos, before_pos)),
        )

    def __add__(self, other: "SpecDecodeCounters") -> "SpecDecodeCounters":
        width = max(len(self.accepted_per_position), len(other.accepted_per_position))
        mine = self.accepted_per_position + (0.0,) * (width - len(self.accepted_per_position))
        theirs = other.accepted_per_position + (0.0,) * (width - len(other.accepted_per_position))
        return SpecDecodeCounters(
            self.num_drafts + other.num_drafts,
            self.num_draft_tokens + other.num_draft_tokens,
            self.num_accepted_tokens + other.num_accepted_tokens,
            tuple(a + b for a, b in zip(mine, theirs)),
        )

    @property
    def num_speculative_tokens(self) -> int:
        """K as the server is configured: vLLM exports one per-position counter per speculative token."""
        return len(self.accepted_per_position)

    @property
    def mean_acceptance_length(self) -> float | None:
        """``1 + accepted / drafts``: tokens per speculative step, bonus token included (this is E(K))."""
        return 1.0 + self.num_accepted_tokens / self.num_drafts if self.num_drafts else None

    @property
    def draft_acceptance_rate(self) -> float | None:
        """``accepted / draft tokens``: the share of proposed tokens kept (not the per-token alpha)."""
        return self.num_accepted_tokens / self.num_draft_tokens if self.num_draft_tokens else None

    @property
    def per_position_acceptance(self) -> tuple[float, ...] | None:
        """Unconditional acceptance a_1..a_K: accepted at position i / drafts."""
        if not self.num_drafts:
            return None
        return tuple(count / self.num_drafts for count in self.accepted_per_position)

    def to_json(self) -> dict:
        def rounded(value: float | None) -> float | None:
            return None if value is None else round(value, 6)

        per_position = self.per_position_acceptance
        return {
            "num_drafts": int(self.num_drafts),
            "num_draft_tokens": int(self.num_draft_tokens),
            "num_accepted_tokens": int(self.num_accepted_tokens),
            "accepted_per_position": [int(c) for c in self.accepted_per_position],
            "num_speculative_tokens": self.num_speculative_tokens,
            "mean_acceptance_length": rounded(self.mean_acceptance_length),
            "draft_acceptance_rate": rounded(self.draft_acceptance_rate),
            "per_position_acceptance": None if per_position is None else [round(a, 6) for a in per_position],
        }

    @classmethod
    def from_json(cls, data: dict) -> "SpecDecodeCounters":
        """Counts as ``to_json`` writes them: whole numbers (``ValueError`` otherwise; a count of 1e-320 drafts
        would turn every rate into infinity)."""
        def count(value, name: str) -> float:
            number = float(value)
            if not (math.isfinite(number) and number.is_integer()):
                raise ValueError(f"spec_decode.{name} must be finite and whole, got {number}")
            return number

        return cls(
            count(data["num_drafts"], "num_drafts"),
            count(data["num_draft_tokens"], "num_draft_tokens"),
            count(data["num_accepted_tokens"], "num_accepted_tokens"),
            tuple(count(c, "accepted_per_position") for c in data["accepted_per_position"]),
        )


def parse_spec_decode_counters(metrics_text: str, model: str | None = None) -> SpecDecodeCounters | None:
    """The speculative-decoding counters in a ``/metrics`` page, or None if the server exports none
    (it was started without ``--speculative-config``).

    With ``model``, only samples labelled ``model_name=model`` count, unless no sample carries that name
    (a server started with ``--served-model-name`` labels by that name); engines are summed.
    """
    samples = metric_samples(metrics_text, SPEC_DECODE_METRICS)
    if not samples:
        return None
    names = {s.labels.get("model_name") for _, s in samples}
    keep_model = model if model in names else None
    return _summed([(name, s) for name, s in samples
                    if keep_model is None or s.labels.get("model_name") == keep_model])


def spec_decode_counters_by_model(metrics_text: str) -> dict[str, SpecDecodeCounters]:
    """The speculative-decoding counters of each ``model_name`` in a ``/metrics`` page, its engines (data-parallel
    ranks) summed; empty when the server exports none."""
    by_model: dict[str, list] = {}
    for name, sample in metric_samples(metrics_text, SPEC_DECODE_METRICS):
        by_model.setdefault(sample.labels.get("model_name", ""), []).append((name, sample))
    return {model: _summed(samples) for model, samples in by_model.items()}


def _summed(samples: list[tuple[str, Sample]]) -> SpecDecodeCounters:
    totals: dict[str, float] = {}
    per_position: dict[int, float] = {}
    for family_name, sample in samples:
        if family_name == ACCEPTED_PER_POSITION:
            position = int(sample.labels["position"])
            per_position[position] = per_position.get(position, 0.0) + sample.value
        else:
            totals[family_name] = totals.get(family_name, 0.0) + sample.value
    width = max(per_position) + 1 if per_position else 0
    if not all(math.isfinite(v) for v in (*totals.values(), *per_position.values())):
        raise UserError("the server's /metrics reports a speculative-decoding counter that is not a finite number "
                        f"({', '.join(f'{k}={v}' for k, v in totals.items())}; per position {per_position})",
                        hint="restart the server; counters only count up from 0")
    return SpecDecodeCounters(
        totals.get(DRAFTS, 0.0),
        totals.get(DRAFT_TOKENS, 0.0),
        totals.get(ACCEPTED_TOKENS, 0.0),
        tuple(per_position.get(i, 0.0) for i in range(width)),
    )


def metric_samples(metrics_text: str, names: tuple[str, ...]) -> list[tuple[str, Sample]]:
    """``(name, sample)`` for every sample of the metrics ``names`` (given without ``_total``) in a ``/metrics``
    page. A counter is read from its ``NAME_total`` sample, or a bare ``NAME`` one (``_created`` is when it was
    made, not a count); a gauge from ``NAME``. ``UserError`` for a page that is not Prometheus text."""
    wanted = set(names)
    found = []
    try:
        for family in text_string_to_metric_families(metrics_text):
            # Without a ``# TYPE NAME counter`` line the parser keeps the ``_total`` in the family's name.
            name = family.name[: -len("_total")] if family.name.endswith("_total") else family.name
            if name in wanted:
                found.extend((name, s) for s in family.samples if s.name in (name, name + "_total"))
    except ValueError as err:
        raise UserError(f"the server's /metrics is not in the Prometheus text format ({err})",
                        hint="point --base-url at a vLLM OpenAI server, which serves /metrics") from None
    return found
