"""The benchmark client: streams requests to an OpenAI-compatible vLLM server, times every token,
and reads ``/metrics`` before and after each concurrency level. Imported by name (``specdraft.bench.client``),
never by ``specdraft.bench`` itself: only what sends requests pays for httpx."""

from __future__ import annotations

import datetime as _dt
import math
import threading
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import httpx

from specdraft import __version__
from specdraft.bench._metrics import SpecDecodeCounters
from specdraft.bench._prompts import BUILTIN_PROMPTS, Prompt
from specdraft.bench._results import BenchResult, LevelResult, Summary
from specdraft.bench._server import (
    CONNECT_TIMEOUT_S,
    QUESTION_TIMEOUT_S,
    check_model,
    scrape_spec_decode,
    served_models,
)
from specdraft.bench._stream import RequestTiming, stream_request
from specdraft.errors import UserError

__all__ = [
    "CONNECT_TIMEOUT_S", "DEFAULT_TIMEOUT_S", "MAX_CONCURRENCY", "MAX_TIMEOUT_S", "NO_SPECULATION_NOTE", "Progress",
    "QUESTION_TIMEOUT_S", "RequestTiming", "check_model", "run_bench", "run_level", "scrape_spec_decode",
    "served_models", "stream_request",
]

DEFAULT_TIMEOUT_S = 600.0
"""How long a request waits for the server's next bytes (``bench --timeout``): a long prompt queued behind a full
batch may see its first token minutes after it was sent."""
MAX_TIMEOUT_S = 86400.0
MAX_CONCURRENCY = 1024
"""Requests bench keeps in flight at most (each a thread and a connection); vLLM batches 256 sequences by default
(``--max-num-seqs``), so levels far above what a server runs at once measure its queue, not its batching."""

NO_SPECULATION_NOTE = (
    "the server exports no speculative-decoding metrics (vllm:spec_decode_*): it runs without "
    "--speculative-config, so acceptance fields are null"
)


@dataclass(frozen=True)
class Progress:
    """Reported after every finished request, so a front end can draw a bar."""

    concurrency: int
    done: int
    total: int | None
    """Requests the level measures; None for a level that runs for ``duration_s``."""
    elapsed_s: float = 0.0
    duration_s: float | None = None
    warmup: bool = False
    """True while the level's unmeasured warm-up requests run."""


def _closed_loop(send: Callable[[int], RequestTiming], concurrency: int, *, requests: int | None = None,
                 duration_s: float | None = None, on_done: Callable[[int, float], None] | None = None,
                 ) -> list[RequestTiming]:
    """Keep ``concurrency`` requests in flight: each slot sends the next one as soon as its last one ends, until
    ``requests`` were sent or ``duration_s`` has passed (requests in flight then finish and count). A failed
    request stops every slot from sending more, and its error is raised."""
    lock = threading.Lock()
    sent, finished, failed = 0, [], []
    start = time.perf_counter()

    def next_index() -> int | None:
        nonlocal sent
        with lock:
            over = (failed or (requests is not None and sent >= requests)
                    or (duration_s is not None and time.perf_counter() - start >= duration_s))
            if over:
                return None
            sent += 1
            return sent - 1

    def slot() -> None:
        while (index := next_index()) is not None:
            try:
                timing = send(index)
            except BaseException as err:
                with lock:
                    failed.append(err)
                return
            with lock:  # reported under the lock, so that the counts arrive in order
                finished.append((index, timing))
                if on_done:
                    on_done(len(finished), time.perf_counter() - start)

    threads = [threading.Thread(target=slot, daemon=True) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failed:
        raise failed[0]
    return [timing for _, timing in sorted(finished, key=lambda pair: pair[0])]


def run_level(
    client: httpx.Client,
    base_url: str,
    model: str,
    prompts: Sequence[Prompt],
    *,
    concurrency: int,
    requests: int | None = None,
    duration_s: float | None = None,
    warmup: int = 0,
    max_tokens: int,
    temperature: float,
    progress: Callable[[Progress], None] | None = None,
) -> LevelResult:
    """One concurrency level in a steady state: ``warmup`` unmeasured requests with ``concurrency`` in flight,
    then ``requests`` requests (or as many as ``duration_s`` holds) between two /metrics scrapes, prompts cycled.

    The warm-up fills every slot before the clock and the counters start, so the measured requests run at the
    level's batch size from their first step (and the server's caches and graphs for it are built)."""
    def send(index: int) -> RequestTiming:
        return stream_request(client, base_url, model, prompts[index % len(prompts)], max_tokens, temperature)

    def report(total: int | None, duration: float | None, warming: bool):
        if progress is None:
            return None
        return lambda done, elapsed: progress(Progress(concurrency, done, total, elapsed, duration, warming))

    if warmup:
        _closed_loop(send, concurrency, requests=warmup, on_done=report(warmup, None, True))
    before = scrape_spec_decode(client, base_url, model)
    start = time.perf_counter()
    timings = _closed_loop(send, concurrency, requests=requests, duration_s=duration_s,
                           on_done=report(requests, duration_s, False))
    wall = time.perf_counter() - start
    after = scrape_spec_decode(client, base_url, model)
    spec = after - before if after is not None and before is not None else None
    return _level_result(concurrency, timings, wall, spec, warmup=warmup, duration_s=duration_s)


def _level_result(concurrency: int, timings: Sequence[RequestTiming], wall: float, spec: SpecDecodeCounters | None,
                  *, warmup: int, duration_s: float | None) -> LevelResult:
    if not wall > 0:  # a clock that did not advance: no throughput to divide out, rather than NaN in the result
        raise UserError(f"concurrency {concurrency}: the level's wall time is {wall} s, so it has no throughput",
                        hint="rerun the bench; time.perf_counter did not advance over the level")
    total = sum(t.output_tokens for t in timings)
    decode_tokens = sum(t.decode_tokens for t in timings)
    decode_s = sum(t.decode_s for t in timings)
    return LevelResult(
        concurrency=concurrency,
        requests=len(timings),
        output_tokens=total,
        wall_s=wall,
        output_tok_s=total / wall,
        decode_tok_s=decode_tokens / decode_s if decode_s > 0 else None,
        itl_ms=Summary.of([t.itl_ms for t in timings]),
        ttft_s=Summary.of([t.ttft_s for t in timings]),
        e2e_s=Summary.of([t.e2e_s for t in timings]),
        spec_decode=spec,
        warmup_requests=warmup,
        duration_s=duration_s,
        mean_in_flight=sum(t.e2e_s for t in timings) / wall,
    )


def _check_workload(concurrency: Sequence[int], max_tokens: int, requests: int | None, temperature: float,
                    duration_s: float | None = None, warmup: int | None = None,
                    timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
    """Refuse a workload before the server is asked anything."""
    if max_tokens < 2:
        raise UserError(f"--max-tokens must be at least 2 to time decoding, got {max_tokens}")
    if not concurrency or min(concurrency) < 1:
        raise UserError(f"--concurrency levels must be >= 1, got {list(concurrency)}")
    if max(concurrency) > MAX_CONCURRENCY:
        raise UserError(f"--concurrency {max(concurrency)}: bench keeps at most {MAX_CONCURRENCY} requests in flight "
                        "(one thread and one connection each)",
                        hint=f"levels up to the server's --max-num-seqs show its batching; above it requests only queue"
                             f" (e.g. --concurrency 1,8,64,{MAX_CONCURRENCY})")
    if not (math.isfinite(timeout_s) and 0 < timeout_s <= MAX_TIMEOUT_S):
        raise UserError(f"--timeout must be seconds above 0 and at most {MAX_TIMEOUT_S:g}, got {timeout_s}",
                        hint=f"--timeout {DEFAULT_TIMEOUT_S:g} (the default) waits ten minutes for a slow server")
    if requests is not None and requests < 1:
        raise UserError(f"--requests must be at least 1 per level, got {requests}",
                        hint="leave it out to send each prompt once (at least one request per slot)")
    if not (temperature >= 0 and math.isfinite(temperature)):
        raise UserError(f"--temperature must be a finite number >= 0, got {temperature}",
                        hint="--temperature 0 samples greedily")
    if requests is not None and duration_s is not None:
        raise UserError("give --requests or --duration per level, not both",
                        hint="--duration 60 measures each level for a minute; --requests N sends N")
    if duration_s is not None and not (math.isfinite(duration_s) and duration_s > 0):
        raise UserError(f"--duration must be a finite number of seconds > 0, got {duration_s}")
    if warmup is not None and warmup < 0:
        raise UserError(f"--warmup must be 0 or more requests per level, got {warmup}",
                        hint="--warmup 0 measures from the first request")


def run_bench(
    base_url: str,
    model: str,
    *,
    prompts: Sequence[Prompt] = BUILTIN_PROMPTS,
    prompts_source: str = "built-in",
    concurrency: Sequence[int] = (1,),
    max_tokens: int = 128,
    requests: int | None = None,
    duration_s: float | None = None,
    warmup: int | None = None,
    temperature: float = 0.0,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    progress: Callable[[Progress], None] | None = None,
) -> BenchResult:
    """Bench one server: every concurrency level in turn, with acceptance read from its /metrics.

    Each level first sends ``warmup`` unmeasured requests (default: one per slot, so every level starts with
    its batch full and the server's first-request costs are paid), then measures ``requests`` requests (default:
    the number of prompts, never fewer than the concurrency) or, with ``duration_s``, as many as fit in that
    many seconds with ``concurrency`` always in flight.
    ``timeout_s`` bounds every wait for the server's next bytes (``/v1/models`` and ``/metrics`` wait at most
    ``QUESTION_TIMEOUT_S``). Raises ``UserError`` for an unreachable or stalled server, a model it does not serve,
    or a rejected request.
    """
    _check_workload(concurrency, max_tokens, requests, temperature, duration_s, warmup, timeout_s)
    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    with httpx.Client(timeout=httpx.Timeout(timeout_s, connect=CONNECT_TIMEOUT_S),
                      limits=httpx.Limits(max_connections=max(concurrency) + 2)) as client:
        check_model(client, base_url, model)
        speculative = scrape_spec_decode(client, base_url, model) is not None
        levels = []
        for level in concurrency:
            count = None if duration_s is not None else max(requests if requests is not None else len(prompts), level)
            levels.append(run_level(client, base_url, model, prompts, concurrency=level, requests=count,
                                    duration_s=duration_s, warmup=level if warmup is None else warmup,
                                    max_tokens=max_tokens, temperature=temperature, progress=progress))
    notes = []
    if not speculative:
        notes.append(NO_SPECULATION_NOTE)
    elif all(lv.spec_decode is not None and lv.spec_decode.num_drafts == 0 for lv in levels):
        notes.append("the server speculates but made no drafts during this run, so acceptance is null "
                     "(n-gram speculation drafts only when the text repeats)")
    return BenchResult(
        base_url=base_url, model=model, max_tokens=max_tokens, temperature=temperature,
        prompts_source=prompts_source, num_prompts=len(prompts), levels=tuple(levels), speculative=speculative,
        notes=tuple(notes), started_at=started, specdraft_version=__version__,
    )
