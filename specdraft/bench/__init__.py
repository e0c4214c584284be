"""Benchmark a vLLM server: what a run measured, and how it is read back.

- ``specdraft.bench.client.run_bench(base_url, model, ...) -> BenchResult``: streamed timings (per-sequence decode
  tok/s, aggregate tok/s, TTFT, end-to-end latency) per concurrency level, each level warmed up to its batch size
  and measured for a request count or a duration, and vLLM's acceptance counters read from ``/metrics`` around each
  level. The client is a module of its own so that reading results (tune, launch's plan, watch) does not load
  the HTTP stack.
- ``BenchResult`` / ``load_result``: a run as JSON, what ``tune --from-bench`` and ``launch --from-bench`` read;
  ``where_speculation_pays(speedups)``: per level, whether speculation beat a ``--compare`` baseline.
- ``parse_spec_decode_counters(metrics_text)``: vLLM's speculative-decoding counters on ``/metrics``.
- ``load_prompts``: the prompt set a run sends.

The speed model that turns results into a K (``recommend``, ``tune``) is ``specdraft.speed``.
"""

from specdraft.bench._metrics import (
    SpecDecodeCounters,
    metric_samples,
    parse_spec_decode_counters,
    spec_decode_counters_by_model,
)
from specdraft.bench._prompts import BUILTIN_PROMPTS, Prompt, load_prompts
from specdraft.bench._results import BenchResult, LevelResult, Summary, check_result_path, load_result
from specdraft.bench._speedups import Speedup, WherePays, compare, ratio, round_ratio, where_speculation_pays

__all__ = [
    "BUILTIN_PROMPTS", "BenchResult", "check_result_path", "compare", "LevelResult", "load_prompts", "load_result",
    "metric_samples", "parse_spec_decode_counters", "Prompt", "ratio", "round_ratio", "SpecDecodeCounters",
    "spec_decode_counters_by_model", "Speedup", "Summary", "WherePays", "where_speculation_pays",
]
