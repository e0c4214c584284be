"""One streamed request to a vLLM server, timed chunk by chunk: what ``bench`` measures per request."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import httpx

from specdraft.bench._prompts import Prompt
from specdraft.bench._server import read_timeout_s, server_root, stalled
from specdraft.errors import UserError


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
    url = f"{server_root(base_url)}{path}"
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
        raise stalled(url, err, read_timeout_s(client)) from None
    except httpx.HTTPError as err:
        raise UserError(f"request to {url} failed: {type(err).__name__}: {err}",
                        hint="check that the server is still up (its log says why it stopped)") from None
    return clock.timing(time.perf_counter() - start, url)
