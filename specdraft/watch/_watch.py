"""The watch loop: read the server every interval (or once), turn two readings into a window, judge it."""

from __future__ import annotations

import datetime as _dt
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import httpx
from pydantic import BaseModel, ConfigDict

from specdraft.bench import SpecDecodeCounters
from specdraft.checkpoints import inspect_checkpoint
from specdraft.errors import ExitCode, UserError
from specdraft.watch._scrape import ModelReading, ServerReading, read_server
from specdraft.watch._verdict import (MAX_K, Judgement, PairCosts, check_min_acceptance, costs_for, costs_from_plan,
                                      judge)


MAX_SECONDS = 86400
"""The longest --interval or --timeout: a day (longer is a typo, and time.sleep refuses some of them)."""


class WatchRequest(BaseModel):
    """What ``specdraft watch`` reads and how it judges (one field per option)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str
    interval: float = 10.0
    """Seconds between readings."""
    once: bool = False
    """Read once and judge the counters since the server started."""
    count: int | None = None
    """Stop after this many intervals (None: until interrupted)."""
    timeout: float = 10.0
    """Seconds any one HTTP read may take."""
    model: str | None = None
    """Judge only this ``model_name`` (default: every model the server's /metrics reports)."""
    plan: str | Path | None = None
    """A ``launch --dry-run --json`` plan, named in messages as given."""
    method: str = "draft_model"
    profile: str = "h100"
    thinking: bool = False
    min_acceptance: float | None = None
    max_k: int = MAX_K


@dataclass(frozen=True)
class Window:
    """What changed between two readings of one model (or, read once, everything since the server started)."""

    seconds: float | None
    """None when read once: the server's uptime is not on /metrics for every engine."""
    spec_decode: SpecDecodeCounters | None
    generation_tokens: float
    requests_running: float
    restarted: bool = False
    """The counters went down: the server restarted, and the window starts at its restart."""

    def to_json(self) -> dict:
        spec = None if self.spec_decode is None else self.spec_decode.to_json()
        rate = self.generation_tokens / self.seconds if self.seconds else None
        return {"seconds": None if self.seconds is None else round(self.seconds, 3), "spec_decode": spec,
                "generation_tokens": int(self.generation_tokens),
                "generation_tok_s": None if rate is None else round(rate, 3),
                "requests_running": self.requests_running, "restarted": self.restarted}


def window(before: ModelReading | None, after: ModelReading, seconds: float | None) -> Window:
    """``after - before``; ``after`` alone when there is no ``before`` or the server restarted in between."""
    if before is None:
        return Window(seconds, after.spec_decode, after.generation_tokens, after.requests_running)
    spec = None
    if after.spec_decode is not None:
        spec = after.spec_decode - before.spec_decode if before.spec_decode is not None else after.spec_decode
    went_down = after.generation_tokens < before.generation_tokens or (spec is not None and (
        spec.num_drafts < 0 or spec.num_accepted_tokens < 0 or min(spec.accepted_per_position, default=0) < 0))
    if went_down:
        return Window(seconds, after.spec_decode, after.generation_tokens, after.requests_running, restarted=True)
    return Window(seconds, spec, after.generation_tokens - before.generation_tokens, after.requests_running)


class ModelReport(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    model: str
    engines: tuple[str, ...]
    costs_basis: str
    interval: Window
    interval_judgement: Judgement
    since_start: Window
    since_start_judgement: Judgement
    """What the exit code follows: the whole watch (read once: the server's whole run)."""


class WatchReport(BaseModel):
    """One line of ``watch``: every judged model at one reading."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    at: str
    base_url: str
    models: tuple[ModelReport, ...]

    @property
    def exit_code(self) -> ExitCode:
        """ATTENTION when any model's acceptance since the start is below its floor or it does not speculate."""
        flagged = any(m.since_start_judgement.attention for m in self.models)
        return ExitCode.ATTENTION if flagged else ExitCode.OK

    def to_json(self) -> dict:
        return {"at": self.at, "base_url": self.base_url, "exit_code": int(self.exit_code),
                "models": [{"model": m.model, "engines": list(m.engines), "costs": m.costs_basis,
                            "interval": {**m.interval.to_json(), **m.interval_judgement.model_dump()},
                            "since_start": {**m.since_start.to_json(), **m.since_start_judgement.model_dump()}}
                           for m in self.models]}


def _costs(request: WatchRequest, reading: ServerReading, model: str, planned: PairCosts | None) -> PairCosts:
    if planned is not None:
        return planned
    root = reading.served.get(model) or (model if model in reading.served else None)
    try:
        target = inspect_checkpoint(root) if root else None
    except (UserError, OSError):  # a served name that is no checkpoint here: the costs say whose stand in
        target = None
    how = f", the target read from /v1/models ({root})" if root else ", the target not listed on /v1/models"
    return costs_for(request.method, target, profile=request.profile, thinking=request.thinking, how=how)


def _models(request: WatchRequest, reading: ServerReading) -> list[str]:
    if request.model is None:
        return list(reading.models)
    if request.model not in reading.models:
        raise UserError(f"the server's /metrics reports {', '.join(reading.models) or 'no model'}, "
                        f"not {request.model!r}", hint="drop --model, or give one of those")
    return [request.model]


def watch(request: WatchRequest) -> Iterator[WatchReport]:
    """Yield a report per reading: read once (``once``), or every ``interval`` seconds, ``count`` times or until
    the caller stops. ``UserError`` when the server cannot be read, with the reason."""
    check_min_acceptance(request.min_acceptance)
    if not 0 < request.timeout <= MAX_SECONDS:
        raise UserError(f"--timeout must be a number of seconds > 0 and at most {MAX_SECONDS}, got {request.timeout}",
                        hint="e.g. --timeout 10")
    if request.count is not None and request.count < 1:
        raise UserError(f"--count must be 1 or more intervals, got {request.count}", hint="or give --once")
    if not request.once and not 0 < request.interval <= MAX_SECONDS:
        raise UserError(f"--interval must be a number of seconds > 0 and at most {MAX_SECONDS}, got "
                        f"{request.interval}", hint="e.g. --interval 10, or --once")
    planned = costs_from_plan(request.plan) if request.plan is not None else None  # a bad plan before any read
    with httpx.Client(timeout=httpx.Timeout(request.timeout)) as client:
        first = read_server(client, request.base_url, time.monotonic())
        models = _models(request, first)
        costs = {model: _costs(request, first, model, planned) for model in models}
        if request.once:
            yield _report(request, models, costs, None, first, first)
            return
        previous, done = first, 0
        while request.count is None or done < request.count:
            time.sleep(request.interval)
            reading = read_server(client, request.base_url, time.monotonic())
            yield _report(request, models, costs, previous, reading, first)
            previous, done = reading, done + 1


def _report(request: WatchRequest, models: list[str], costs: dict[str, PairCosts], previous: ServerReading | None,
            reading: ServerReading, first: ServerReading) -> WatchReport:
    out = []
    for model in models:
        now = reading.models.get(model)
        if now is None:
            raise UserError(f"model {model!r} is no longer on the server's /metrics",
                            hint="the server was restarted with another model: start watch again")
        before = None if previous is None else previous.models.get(model)
        start = None if previous is None else first.models.get(model)
        interval = window(before, now, None if previous is None else reading.at - previous.at)
        since = window(start, now, None if previous is None else reading.at - first.at)
        def judged(w: Window) -> Judgement:
            return judge(w.spec_decode, costs[model], min_acceptance=request.min_acceptance, max_k=request.max_k)

        out.append(ModelReport(model=model, engines=now.engines, costs_basis=costs[model].basis, interval=interval,
                               interval_judgement=judged(interval), since_start=since,
                               since_start_judgement=judged(since)))
    at = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    return WatchReport(at=at, base_url=request.base_url, models=tuple(out))
