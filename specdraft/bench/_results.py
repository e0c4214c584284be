"""Bench results: what one run measured, as JSON that ``tune --from-bench`` and ``--compare-results`` read back."""

from __future__ import annotations

import json
import math
import os
import statistics
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Sequence

from specdraft.bench._metrics import SpecDecodeCounters
from specdraft.bench._speedups import Speedup, compare, where_speculation_pays, why_no_ratio
from specdraft.errors import UserError
from specdraft.paths import refuse_special_file

SCHEMA = "specdraft.bench/1"


def _figure(value, name: str) -> float:
    """A measured figure read back from a result file: a finite number >= 0 (``ValueError`` otherwise, which
    ``load_result`` reports as a malformed result): NaN or infinity would flow into speedups and JSON."""
    number = float(value)
    if not (math.isfinite(number) and number >= 0):
        raise ValueError(f"{name} must be a finite number >= 0, got {number}")
    return number


def _optional_figure(value, name: str) -> float | None:
    return None if value is None else _figure(value, name)


@dataclass(frozen=True)
class Summary:
    """Distribution of one per-request figure."""

    mean: float
    p50: float
    p90: float
    min: float
    max: float

    @classmethod
    def of(cls, values: Sequence[float]) -> "Summary | None":
        values = sorted(v for v in values if not math.isnan(v))
        if not values:
            return None
        p90_index = min(len(values) - 1, math.ceil(0.9 * len(values)) - 1)
        return cls(statistics.fmean(values), statistics.median(values), values[p90_index], values[0], values[-1])

    def to_json(self) -> dict:
        return {k: round(v, 6) for k, v in self.__dict__.items()}

    @classmethod
    def from_json(cls, data: dict | None, name: str = "summary") -> "Summary | None":
        if data is None:
            return None
        return cls(**{k: _figure(data[k], f"{name}.{k}") for k in ("mean", "p50", "p90", "min", "max")})


@dataclass(frozen=True)
class LevelResult:
    """One concurrency level: ``requests`` streamed with at most ``concurrency`` in flight."""

    concurrency: int
    requests: int
    output_tokens: int
    wall_s: float
    output_tok_s: float
    """All output tokens / wall time of the level: the server's throughput at this concurrency."""
    decode_tok_s: float | None
    """Decode speed of one sequence: tokens after each request's first over the time from its first token to
    its last, summed over requests (so bursts of several tokens per chunk average out)."""
    itl_ms: Summary | None
    """Per request: mean inter-token latency in ms. For a server without speculation, its decode step time."""
    ttft_s: Summary | None
    e2e_s: Summary | None
    spec_decode: SpecDecodeCounters | None
    """The difference of vLLM's speculative-decoding counters over this level; None without speculation."""
    warmup_requests: int = 0
    """Unmeasured requests sent at this concurrency before the counters and the clock started."""
    duration_s: float | None = None
    """The level's measuring time when it ran for a duration rather than a request count."""
    mean_in_flight: float | None = None
    """Request time over wall time (Little's law): the mean number of sequences in flight. Near ``concurrency``
    the level held its batch size; well below, requests queued or the level was too short for a steady state."""

    def to_json(self) -> dict:
        def summary(s: Summary | None) -> dict | None:
            return None if s is None else s.to_json()

        return {
            "concurrency": self.concurrency,
            "requests": self.requests,
            "output_tokens": self.output_tokens,
            "wall_s": round(self.wall_s, 4),
            "output_tok_s": round(self.output_tok_s, 4),
            "decode_tok_s": None if self.decode_tok_s is None else round(self.decode_tok_s, 4),
            "itl_ms": summary(self.itl_ms),
            "ttft_s": summary(self.ttft_s),
            "e2e_s": summary(self.e2e_s),
            "spec_decode": None if self.spec_decode is None else self.spec_decode.to_json(),
            "warmup_requests": self.warmup_requests,
            "duration_s": self.duration_s,
            "mean_in_flight": None if self.mean_in_flight is None else round(self.mean_in_flight, 4),
        }

    @classmethod
    def from_json(cls, data: dict) -> "LevelResult":
        spec = data.get("spec_decode")
        return cls(
            concurrency=int(data["concurrency"]),
            requests=int(data["requests"]),
            output_tokens=int(data["output_tokens"]),
            wall_s=_figure(data["wall_s"], "wall_s"),
            output_tok_s=_figure(data["output_tok_s"], "output_tok_s"),
            decode_tok_s=_optional_figure(data.get("decode_tok_s"), "decode_tok_s"),
            itl_ms=Summary.from_json(data.get("itl_ms"), "itl_ms"),
            ttft_s=Summary.from_json(data.get("ttft_s"), "ttft_s"),
            e2e_s=Summary.from_json(data.get("e2e_s"), "e2e_s"),
            spec_decode=None if spec is None else SpecDecodeCounters.from_json(spec),
            warmup_requests=int(data.get("warmup_requests", 0)),
            duration_s=_optional_figure(data.get("duration_s"), "duration_s"),
            mean_in_flight=_optional_figure(data.get("mean_in_flight"), "mean_in_flight"),
        )


@dataclass(frozen=True)
class BenchResult:
    """A whole bench run against one server, optionally with the same workload run against a baseline."""

    base_url: str
    model: str
    max_tokens: int
    temperature: float
    prompts_source: str
    num_prompts: int
    levels: tuple[LevelResult, ...]
    speculative: bool
    """Whether the server exported vLLM's speculative-decoding counters."""
    notes: tuple[str, ...] = ()
    started_at: str = ""
    specdraft_version: str = ""
    baseline: "BenchResult | None" = None
    speedups: tuple[Speedup, ...] = field(default=())

    def level(self, concurrency: int) -> LevelResult | None:
        return next((lv for lv in self.levels if lv.concurrency == concurrency), None)

    def pooled_spec_decode(self) -> SpecDecodeCounters | None:
        """Counters summed over every level (None without speculation)."""
        pooled = None
        for lv in self.levels:
            if lv.spec_decode is not None:
                pooled = lv.spec_decode if pooled is None else pooled + lv.spec_decode
        return pooled

    def with_baseline(self, baseline: "BenchResult") -> "BenchResult":
        speedups = tuple(compare(self, baseline))
        reasons = [reason for reason in why_no_ratio(speedups, baseline) if reason not in self.notes]
        return replace(self, baseline=replace(baseline, baseline=None, speedups=()), speedups=speedups,
                       notes=(*self.notes, *reasons))

    def to_json(self) -> dict:
        pooled = self.pooled_spec_decode()
        return {
            "schema": SCHEMA,
            "base_url": self.base_url,
            "model": self.model,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "prompts_source": self.prompts_source,
            "num_prompts": self.num_prompts,
            "speculative": self.speculative,
            "spec_decode": None if pooled is None else pooled.to_json(),
            "levels": [lv.to_json() for lv in self.levels],
            "notes": list(self.notes),
            "started_at": self.started_at,
            "specdraft_version": self.specdraft_version,
            "baseline": None if self.baseline is None else self.baseline.to_json(),
            "speedups": [s.to_json() for s in self.speedups],
            "speculation_pays": ({w.measure: w.to_json() for w in where_speculation_pays(self.speedups)}
                                 if self.speedups else None),
        }

    @classmethod
    def from_json(cls, data: dict) -> "BenchResult":
        baseline = data.get("baseline")
        return cls(
            base_url=data["base_url"],
            model=data["model"],
            max_tokens=int(data["max_tokens"]),
            temperature=_figure(data.get("temperature", 0.0), "temperature"),
            prompts_source=data.get("prompts_source", ""),
            num_prompts=int(data.get("num_prompts", 0)),
            levels=tuple(LevelResult.from_json(lv) for lv in data["levels"]),
            speculative=bool(data["speculative"]),
            notes=tuple(data.get("notes", ())),
            started_at=data.get("started_at", ""),
            specdraft_version=data.get("specdraft_version", ""),
            baseline=None if baseline is None else cls.from_json(baseline),
            speedups=tuple(Speedup.from_json(s) for s in data.get("speedups", ())),
        )

    def save(self, path: Path) -> None:
        """Write the result as JSON; written to a temporary file first, so a failure leaves nothing half-written.
        ``OSError`` when the file cannot be written (``check_result_path`` finds that out before a run)."""
        path = Path(path)
        tmp = _partial(path)
        tmp.write_text(json.dumps(self.to_json(), indent=2) + "\n")
        tmp.replace(path)


def _partial(path: Path) -> Path:
    return path.with_name(path.name + ".partial")


def check_result_path(path: str | os.PathLike) -> None:
    """``UserError`` (naming ``path`` as given) unless ``save`` can write it: tried the way ``save`` writes, before
    anything is measured."""
    if Path(path).is_dir():
        raise UserError(f"--out {path} is a directory",
                        hint=f"give a file name, e.g. --out {os.path.join(path, 'result.json')}")
    try:
        _partial(Path(path)).touch()
        _partial(Path(path)).unlink()
    except OSError as err:
        raise UserError(f"cannot write the result to {path}: {err.strerror or err}",
                        hint="pass --out a path in an existing, writable directory") from None


def load_result(path: str | os.PathLike) -> BenchResult:
    """Read a result written by ``specdraft bench --out``; ``UserError`` (naming ``path`` as given) if it is
    missing or not one."""
    refuse_special_file(path, what="bench result", hint="pass a file written by specdraft bench --out")
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise UserError(f"bench result {path} does not exist",
                        hint="write one with: python -m specdraft bench --base-url URL --model NAME --out RESULT.json") from None
    except UnicodeDecodeError:
        raise UserError(f"{path} is not a specdraft bench result (not UTF-8 text)",
                        hint="write one with: python -m specdraft bench ... --out RESULT.json") from None
    except (OSError, json.JSONDecodeError) as err:
        raise UserError(f"cannot read bench result {path}: {err}") from None
    except RecursionError:
        raise UserError(f"cannot read bench result {path}: JSON nested deeper than a reader follows") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise UserError(f"{path} is not a specdraft bench result (expected schema {SCHEMA!r})",
                        hint="write one with: python -m specdraft bench ... --out RESULT.json")
    try:
        return BenchResult.from_json(data)
    except (AttributeError, KeyError, TypeError, ValueError) as err:  # a field of the wrong shape or type
        raise UserError(f"{path}: malformed bench result ({type(err).__name__}: {err})") from None
