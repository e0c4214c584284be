"""The benchmark client: streams requests to an OpenAI-compatible vLLM server, times every token,
and reads ``/metrics`` before and after each concurrency level. Imported by name (``specdraft.bench.client``),
never by ``specdraft.bench`` itself: only what sends requests pays for httpx."""

from __future__ import annotations

import datetime as _dt
import json
import math
import threading
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import httpx

from specdraft import __version__
from specdraft.bench._metrics import SpecDecodeCounters, parse_spec_decode_counters
from specdraft.bench._prompts import BUILTIN_PROMPTS, Prompt
from specdraft.bench._results import BenchResult, LevelResult, Summary
from specdraft.errors import UserError

DEFAULT_TIMEOUT_S = 600.0
"""How long a request waits for the server's next bytes (``bench --timeout``): a long prompt queued behind a full
batch may see its first token minutes after it was sent."""
MAX_TIMEOUT_S = 86400.0
QUESTION_TIMEOUT_S = 30.0
"""``/v1/models`` and ``/metrics`` answer at once on a live server, so a port that takes a connection and never
answers is found out this soon, not after ``DEFAULT_TIMEOUT_S``."""
CONNECT_TIMEOUT_S = 10.0
MAX_CONCURRENCY = 1024
"""Requests bench keeps in flight at most (each a thread and a connection); vLLM batches 256 sequences by default
(``--max-num-seqs``), so levels far above what a server runs at once measure its queue, not its batching."""

NO_SPECULATION_NOTE = (
    "the server exports no speculative-decoding metrics (vllm:spec_decode_*): it runs without "
    "--speculative-config, so acceptance fields are null"
)


@dataclass(frozen=True)
class RequestTiming:
    """What one streamed request measured (times in seconds from sending it)."""

    output_tokens: int
    ttft_s: float
    e2e_s: float
    first_token_s: float
    last_token_s: float
    first_chunk_tokens: int = 1
    """Tokens in the first streamed chunk: 1 (the prefill's) unless the server sent several steps at once."""

    @property
    def decode_tokens(self) -> int:
        """Tokens after the first chunk: the ones decode steps produced between the first and last chunk."""
        return max(0, self.output_tokens - self.first_chunk_tokens)

    @property
    def decode_s(self) -> float:
        """Time from the first token to the last."""
        return self.last_token_s - self.first_token_s

    @property
    def itl_ms(self) -> float:
        """Mean inter-token latency of this request in ms; NaN with fewer than two tokens."""
        return 1000.0 * self.decode_s / self.decode_tokens if self.decode_tokens else float("nan")


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


def _root(base_url: str) -> str:
    """Accept ``http://host:port`` or ``http://host:port/v1``; return the server root."""
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def _get(client: httpx.Client, url: str) -> httpx.Response:
    timeout_s = min(_read_timeout_s(client), QUESTION_TIMEOUT_S)
    try:
        return client.get(url, timeout=httpx.Timeout(timeout_s, connect=CONNECT_TIMEOUT_S))
    except httpx.TimeoutException as err:
        raise _stalled(url, err, timeout_s) from None
    except (httpx.HTTPError, httpx.InvalidURL, UnicodeError) as err:  # UnicodeError: a host name IDNA cannot encode
        raise UserError(
            f"cannot reach the server at {url}: {type(err).__name__}: {err}",
            hint="start it (python -m specdraft launch ...) or check --base-url",
        ) from None


def _read_timeout_s(client: httpx.Client) -> float:
    return client.timeout.read if client.timeout.read is not None else QUESTION_TIMEOUT_S


def _stalled(url: str, err: httpx.TimeoutException, timeout_s: float) -> UserError:
    if isinstance(err, httpx.ConnectTimeout):
        return UserError(f"cannot reach the server at {url}: no connection within {CONNECT_TIMEOUT_S:g} s",
                         hint="start it (python -m specdraft launch ...) or check --base-url")
    return UserError(f"the server at {url} took the request and sent nothing for {timeout_s:g} s; bench stopped",
                     hint="check the server's log (is it stuck, or another program on that port?); "
                          "bench --timeout SECONDS waits longer for a slow one")


def served_models(client: httpx.Client, base_url: str) -> list[str]:
    """The model ids a server lists at /v1/models."""
    url = f"{_root(base_url)}/v1/models"
    response = _get(client, url)
    if response.status_code != 200:
        raise UserError(f"{url} answered HTTP {response.status_code}: is this an OpenAI-compatible vLLM server?",
                        hint="check --base-url")
    try:
        return [m["id"] for m in response.json()["data"]]
    except (ValueError, KeyError, TypeError):
        raise UserError(f"{url} did not return a model list: is this an OpenAI-compatible vLLM server?",
                        hint="check --base-url") from None


def check_model(client: httpx.Client, base_url: str, model: str) -> None:
    """``UserError`` unless the server serves ``model``, naming what it does serve."""
    models = served_models(client, base_url)
    if model not in models:
        served = ", ".join(models) or "nothing"
        raise UserError(f"the server at {base_url} serves {served}, not {model!r}",
                        hint=f"use --model {models[0]}" if models else "check the server's --served-model-name")


def scrape_spec_decode(client: httpx.Client, base_url: str, model: str) -> SpecDecodeCounters | None:
    """The server's speculative-decoding counters now (None if it exports none)."""
    url = f"{_root(base_url)}/metrics"
    response = _get(client, url)
    if response.status_code != 200:
        raise UserError(f"{url} answered HTTP {response.status_code}; bench reads acceptance from it",
                        hint="serve with vLLM's OpenAI server, which exposes /metrics")
    return parse_spec_decode_counters(response.text, model)


def _server_error(response: httpx.Response) -> str:
    try:
        body = json.loads(response.read())
        message = body.get("error", {}).get("message") if isinstance(body.get("error"), dict) else body.get("message")
        return message or json.dumps(body)[:300]
    except ValueError:
        return response.text[:300]


class _StreamClock:
    """When a stream's output chunks arrived, and how many tokens they carried."""

    def __init__(self) -> None:
        self.first: float | None = None
        self.last: float | None = None
        self.usage_tokens: int | None = None
        self.first_chunk_tokens = 1
        self.chunks_with_output = 0

    def add(self, chunk: dict, now: float) -> None:
        usage = chunk.get("usage") or {}
        if usage.get("completion_tokens") is not None:
            previous, self.usage_tokens = self.usage_tokens or 0, int(usage["completion_tokens"])
            is_output = self.usage_tokens > previous
        else:
            is_output = bool(chunk.get("choices"))
        if is_output:
            self.chunks_with_output += 1
            if self.first is None:
                self.first = now
                self.first_chunk_tokens = self.usage_tokens if self.usage_tokens else 1
            self.last = now

    def timing(self, end: float, url: str) -> RequestTiming:
        if self.first is None:
            raise UserError(f"the server streamed no tokens for a request to {url}")
        tokens = self.usage_tokens if self.usage_tokens is not None else self.chunks_with_output
        return RequestTiming(tokens, self.first, end, self.first, self.last, self.first_chunk_tokens)


def _chunk(payload: str, url: str) -> dict:
    """One streamed event as a completion chunk; ``UserError`` for anything else (not JSON, an error event)."""
    try:
        chunk = json.loads(payload)
    except ValueError:
        chunk = None
    usage = chunk.get("usage") or {} if isinstance(chunk, dict) else None
    if not isinstance(usage, dict) or not isinstance(usage.get("completion_tokens", 0), (int, type(None))):
        raise UserError(f"{url} streamed something that is not a completion chunk: {payload[:120]!r}",
                        hint="bench an OpenAI-compatible vLLM server (check --base-url)")
    if "error" in chunk:
        error = chunk["error"]
        raise UserError(f"the server failed a request to {url} mid-stream: "
                        f"{error.get('message') if isinstance(error, dict) else error}",
                        hint="the server's log says why")
    return chunk


def _request_body(model: str, prompt: Prompt, max_tokens: int, temperature: float) -> tuple[str, dict]:
    """The endpoint and body of one streamed request."""
    body: dict = {"model": model, "max_tokens": max_tokens, "temperature": temperature, "stream": True,
                  "stream_options": {"include_usage": True, "continuous_usage_stats": True}, "ignore_eos": True}
    if prompt.messages is not None:
        body["messages"] = list(prompt.messages)
        return "/v1/chat/completions", body
    body["prompt"] = list(prompt.text) if isinstance(prompt.text, tuple) else prompt.text
    return "/v1/completions", body


def stream_request(client: httpx.Client, base_url: str, model: str, prompt: Prompt, max_tokens: int,
                   temperature: float) -> RequestTiming:
    """Send one streaming request (``ignore_eos``, so every request yields ``max_tokens``) and time it.

    A chunk holds one or more engine steps' output: one token per step without speculation, up to
    K + 1 with it. vLLM's ``continuous_usage_stats`` puts the running token count in every chunk, so a
    chunk counts as output when that count grows (a chat stream's role-only first chunk does not), the
    tokens of the first output chunk are known, and decode = (tokens - first chunk's) / span. A server
    without it is taken chunk by chunk, the prefill's single token first.
    """
    path, body = _request_body(model, prompt, max_tokens, temperature)
    url = f"{_root(base_url)}{path}"
    clock = _StreamClock()
    start = time.perf_counter()
    try:
        with client.stream("POST", url, json=body) as response:
            if response.status_code != 200:
                raise UserError(f"the server rejected a request to {url}: HTTP {response.status_code}: "
                                f"{_server_error(response)}", hint="check --model and --max-tokens")
            for line in response.iter_lines():
                if not line.startswith("data:"):
                    continue
                payload = line[len("data:"):].strip()
                if payload == "[DONE]":
                    break
                now = time.perf_counter() - start
                clock.add(_chunk(payload, url), now)
    except httpx.TimeoutException as err:
        raise _stalled(url, err, _read_timeout_s(client)) from None
    except httpx.HTTPError as err:
        raise UserError(f"request to {url} failed: {type(err).__name__}: {err}",
                        hint="check that the server is still up (its log says why it stopped)") from None
    return clock.timing(time.perf_counter() - start, url)


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
