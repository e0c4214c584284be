"""Questions to a vLLM server over HTTP (its model list, its ``/metrics`` counters), and how an unreachable or
stalled server is reported."""

from __future__ import annotations

import httpx

from specdraft.bench._metrics import SpecDecodeCounters, parse_spec_decode_counters
from specdraft.errors import UserError

QUESTION_TIMEOUT_S = 30.0
"""``/v1/models`` and ``/metrics`` answer at once on a live server, so a port that takes a connection and never
answers is found out this soon, not after ``DEFAULT_TIMEOUT_S``."""
CONNECT_TIMEOUT_S = 10.0


def server_root(base_url: str) -> str:
    """Accept ``http://host:port`` or ``http://host:port/v1``; return the server root."""
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def ask(client: httpx.Client, url: str) -> httpx.Response:
    timeout_s = min(read_timeout_s(client), QUESTION_TIMEOUT_S)
    try:
        return client.get(url, timeout=httpx.Timeout(timeout_s, connect=CONNECT_TIMEOUT_S))
    except httpx.TimeoutException as err:
        raise stalled(url, err, timeout_s) from None
    except (httpx.HTTPError, httpx.InvalidURL, UnicodeError) as err:  # UnicodeError: a host name IDNA cannot encode
        raise UserError(
            f"cannot reach the server at {url}: {type(err).__name__}: {err}",
            hint="start it (python -m specdraft launch ...) or check --base-url",
        ) from None


def read_timeout_s(client: httpx.Client) -> float:
    return client.timeout.read if client.timeout.read is not None else QUESTION_TIMEOUT_S


def stalled(url: str, err: httpx.TimeoutException, timeout_s: float) -> UserError:
    if isinstance(err, httpx.ConnectTimeout):
        return UserError(f"cannot reach the server at {url}: no connection within {CONNECT_TIMEOUT_S:g} s",
                         hint="start it (python -m specdraft launch ...) or check --base-url")
    return UserError(f"the server at {url} took the request and sent nothing for {timeout_s:g} s; bench stopped",
                     hint="check the server's log (is it stuck, or another program on that port?); "
                          "bench --timeout SECONDS waits longer for a slow one")


def served_models(client: httpx.Client, base_url: str) -> list[str]:
    """The model ids a server lists at /v1/models."""
    url = f"{server_root(base_url)}/v1/models"
    response = ask(client, url)
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
    url = f"{server_root(base_url)}/metrics"
    response = ask(client, url)
    if response.status_code != 200:
        raise UserError(f"{url} answered HTTP {response.status_code}; bench reads acceptance from it",
                        hint="serve with vLLM's OpenAI server, which exposes /metrics")
    return parse_spec_decode_counters(response.text, model)
