"""One reading of a running vLLM server: its ``/metrics`` (per ``model_name``, the engines of data-parallel ranks
summed) and the models ``/v1/models`` lists, each HTTP read bounded by a timeout.

vLLM defines the metrics read here alike in every release from 0.19 to 0.33 (``vllm/v1/metrics/loggers.py`` and
``vllm/v1/spec_decode/metrics.py``; ``tests/watch/data`` holds a page per release generated from those sources):
the labels are ``model_name`` and ``engine`` (one per data-parallel rank), and the speculative-decoding counters
exist only on a server started with ``--speculative-config``.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from specdraft.bench import SpecDecodeCounters, metric_samples, spec_decode_counters_by_model
from specdraft.errors import UserError

GENERATION_TOKENS = "vllm:generation_tokens"
"""Counter: tokens generated (a speculative step's accepted tokens and its bonus token alike)."""
REQUESTS_RUNNING = "vllm:num_requests_running"
"""Gauge: requests in the engine's running batch."""


@dataclass(frozen=True)
class ModelReading:
    """What ``/metrics`` says about one served model at one moment."""

    model: str
    engines: tuple[str, ...]
    spec_decode: SpecDecodeCounters | None
    """None: this model's engines export no speculative-decoding counters (no ``--speculative-config``)."""
    generation_tokens: float
    requests_running: float


@dataclass(frozen=True)
class ServerReading:
    """One reading of the server, ``at`` seconds on a monotonic clock."""

    at: float
    models: dict[str, ModelReading]
    served: dict[str, str | None]
    """``/v1/models``: each model id and its ``root`` (the checkpoint it was loaded from), where listed."""


def read_metrics(metrics_text: str) -> dict[str, ModelReading]:
    """Each model's reading in a ``/metrics`` page; ``UserError`` for a page without vLLM's engine metrics."""
    engine = metric_samples(metrics_text, (GENERATION_TOKENS, REQUESTS_RUNNING))
    if not engine:
        raise UserError("the server's /metrics has no vLLM engine metrics (vllm:generation_tokens, "
                        "vllm:num_requests_running), so acceptance cannot be judged",
                        hint="point --base-url at a vLLM OpenAI server started without --disable-log-stats")
    spec = spec_decode_counters_by_model(metrics_text)
    engines: dict[str, set[str]] = {}
    sums: dict[tuple[str, str], float] = {}
    for name, sample in engine:
        model = sample.labels.get("model_name", "")
        engines.setdefault(model, set()).add(sample.labels.get("engine", ""))
        sums[model, name] = sums.get((model, name), 0.0) + sample.value
    return {model: ModelReading(model, tuple(sorted(ranks)), spec.get(model), sums.get((model, GENERATION_TOKENS), 0.0),
                                sums.get((model, REQUESTS_RUNNING), 0.0))
            for model, ranks in sorted(engines.items())}


def server_root(base_url: str) -> str:
    """``http://host:port`` from ``http://host:port`` or ``http://host:port/v1``."""
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def _get(client: httpx.Client, url: str) -> httpx.Response:
    try:
        response = client.get(url)
    except httpx.TimeoutException:
        raise UserError(f"the server at {url} did not answer within {client.timeout.read} s",
                        hint="check that it is up, or give a longer --timeout") from None
    except (httpx.HTTPError, httpx.InvalidURL, UnicodeError) as err:  # UnicodeError: a host name IDNA cannot encode
        raise UserError(f"cannot read {url}: {type(err).__name__}: {err}",
                        hint="check --base-url and that the server is up (its log says why it stopped)") from None
    if response.status_code != 200:
        raise UserError(f"{url} answered HTTP {response.status_code}",
                        hint="point --base-url at a vLLM OpenAI server (it serves /metrics and /v1/models)")
    return response


def _served(response: httpx.Response, url: str) -> dict[str, str | None]:
    try:
        return {m["id"]: m.get("root") for m in response.json()["data"]}
    except (ValueError, KeyError, TypeError):
        raise UserError(f"{url} did not return a model list",
                        hint="point --base-url at an OpenAI-compatible vLLM server") from None


def read_server(client: httpx.Client, base_url: str, at: float) -> ServerReading:
    """Read ``/v1/models`` and ``/metrics`` once; ``UserError`` (with the reason) when either cannot be read."""
    root = server_root(base_url)
    served = _served(_get(client, f"{root}/v1/models"), f"{root}/v1/models")
    return ServerReading(at=at, models=read_metrics(_get(client, f"{root}/metrics").text), served=served)
