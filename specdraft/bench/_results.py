"""Bench results: what one run measured, as JSON that ``tune --from-bench`` and ``--compare-results`` read back."""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Sequence

from specdraft.bench._metrics import SpecDecodeCounters
from specdraft.errors import UserError

SCHEMA = "specdraft.bench/1"


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
    def from_json(cls, data: dict | None) -> "Summary | None":
        return None if data is None else cls(**{k: float(data[k]) for k in ("mean", "p50", "p90", "min", "max")})


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
        }

    @classmethod
    def from_json(cls, data: dict) -> "LevelResult":
        spec = data.get("spec_decode")
        return cls(
            concurrency=int(data["concurrency"]),
            requests=int(data["requests"]),
            output_tokens=int(data["output_tokens"]),
            wall_s=float(data["wall_s"]),
            output_tok_s=float(data["output_tok_s"]),
            decode_tok_s=None if data.get("decode_tok_s") is None else float(data["decode_tok_s"]),
            itl_ms=Summary.from_json(data.get("itl_ms")),
            ttft_s=Summary.from_json(data.get("ttft_s")),
            e2e_s=Summary.from_json(data.get("e2e_s")),
            spec_decode=None if spec is None else SpecDecodeCounters.from_json(spec),
        )


@dataclass(frozen=True)
class Speedup:
    """Candidate over baseline at one concurrency level (> 1 means the candidate is faster)."""

    concurrency: int
    decode_tok_s: float | None
    """Ratio of per-sequence decode tok/s."""
    output_tok_s: float
    """Ratio of aggregate output tok/s."""
    e2e: float | None
    """Baseline mean end-to-end latency / candidate's."""

    def to_json(self) -> dict:
        return {"concurrency": self.concurrency, "decode_tok_s": round_ratio(self.decode_tok_s),
                "output_tok_s": round_ratio(self.output_tok_s), "e2e": round_ratio(self.e2e)}


def round_ratio(value: float | None) -> float | None:
    """A ratio to 4 significant digits: fixed decimals would turn a 0.00054x speedup into 0.0005."""
    return None if value is None else float(f"{value:.4g}")


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
        return replace(self, baseline=replace(baseline, baseline=None, speedups=()),
                       speedups=tuple(compare(self, baseline)))

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
        }

    @classmethod
    def from_json(cls, data: dict) -> "BenchResult":
        baseline = data.get("baseline")
        return cls(
            base_url=data["base_url"],
            model=data["model"],
            max_tokens=int(data["max_tokens"]),
            temperature=float(data.get("temperature", 0.0)),
            prompts_source=data.get("prompts_source", ""),
            num_prompts=int(data.get("num_prompts", 0)),
            levels=tuple(LevelResult.from_json(lv) for lv in data["levels"]),
            speculative=bool(data["speculative"]),
            notes=tuple(data.get("notes", ())),
            started_at=data.get("started_at", ""),
            specdraft_version=data.get("specdraft_version", ""),
            baseline=None if baseline is None else cls.from_json(baseline),
            speedups=tuple(Speedup(**s) for s in data.get("speedups", ())),
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


def check_result_path(path: Path) -> None:
    """``UserError`` unless ``save`` can write ``path``: tried the way ``save`` writes, before anything is measured."""
    path = Path(path)
    if path.is_dir():
        raise UserError(f"--out {path} is a directory", hint=f"give a file name, e.g. --out {path / 'result.json'}")
    try:
        _partial(path).touch()
        _partial(path).unlink()
    except OSError as err:
        raise UserError(f"cannot write the result to {path}: {err.strerror or err}",
                        hint="pass --out a path in an existing, writable directory") from None


def load_result(path: Path) -> BenchResult:
    """Read a result written by ``specdraft bench --out``; ``UserError`` if it is missing or not one."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(f"bench result {path} does not exist",
                        hint="write one with: python -m specdraft bench --base-url URL --model NAME --out RESULT.json") from None
    except UnicodeDecodeError:
        raise UserError(f"{path} is not a specdraft bench result (not UTF-8 text)",
                        hint="write one with: python -m specdraft bench ... --out RESULT.json") from None
    except (OSError, json.JSONDecodeError) as err:
        raise UserError(f"cannot read bench result {path}: {err}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise UserError(f"{path} is not a specdraft bench result (expected schema {SCHEMA!r})",
                        hint="write one with: python -m specdraft bench ... --out RESULT.json")
    try:
        return BenchResult.from_json(data)
    except (AttributeError, KeyError, TypeError, ValueError) as err:  # a field of the wrong shape or type
        raise UserError(f"{path}: malformed bench result ({type(err).__name__}: {err})") from None


def compare(candidate: BenchResult, baseline: BenchResult) -> list[Speedup]:
    """Speedup of ``candidate`` over ``baseline`` at every concurrency level both ran."""
    if candidate.max_tokens != baseline.max_tokens:
        raise UserError(
            f"the two runs are not the same workload: max_tokens {candidate.max_tokens} vs {baseline.max_tokens}",
            hint="rerun one of them with the same --max-tokens and prompts",
        )
    speedups = []
    for lv in candidate.levels:
        base = baseline.level(lv.concurrency)
        if base is None:
            continue
        decode = lv.decode_tok_s / base.decode_tok_s if lv.decode_tok_s and base.decode_tok_s else None
        e2e = base.e2e_s.mean / lv.e2e_s.mean if lv.e2e_s and base.e2e_s and lv.e2e_s.mean else None
        output = lv.output_tok_s / base.output_tok_s if base.output_tok_s else float("nan")
        speedups.append(Speedup(lv.concurrency, decode, output, e2e))
    if not speedups:
        raise UserError(
            f"the two runs share no concurrency level ({[lv.concurrency for lv in candidate.levels]} vs "
            f"{[lv.concurrency for lv in baseline.levels]})",
            hint="rerun with the same --concurrency",
        )
    return speedups
