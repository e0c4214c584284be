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

The tuner that turns results into a K (``recommend``, ``tune``) is re-exported here beside them.
"""

from specdraft.bench._batch_costs import (
    BatchKChoice,
    BatchLevel,
    BatchStepCosts,
    best_k_per_batch_size,
    known_batch_step_cost,
    known_batch_step_costs,
)
from specdraft.bench._calibration import (
    StepCostFit,
    acceptance_from_result,
    cost_ratio_from_results,
    measured_speedup,
    fit_step_costs,
    overhead_from_results,
    speculative_step_ms,
    step_ms,
)
from specdraft.bench._cost import (
    BYTES_PER_PARAM,
    DecodeFootprint,
    bytes_per_param,
    cost_ratio_from_step_times,
    decode_footprint,
    estimate_cost_ratio,
    footprint_of,
    load_text_config,
)
from specdraft.bench._host_costs import KnownHostCost, host_cost_named, known_host_cost, known_host_costs
from specdraft.bench._metrics import (
    SpecDecodeCounters,
    metric_samples,
    parse_spec_decode_counters,
    spec_decode_counters_by_model,
)
from specdraft.bench._prompts import BUILTIN_PROMPTS, Prompt, load_prompts
from specdraft.bench._results import (
    BenchResult,
    LevelResult,
    Speedup,
    Summary,
    WherePays,
    check_result_path,
    compare,
    load_result,
    round_ratio,
    where_speculation_pays,
)
from specdraft.bench._tuner import (
    Extrapolation,
    HostCost,
    KPrediction,
    Recommendation,
    SchedulePoint,
    conditional_acceptance,
    extend_acceptance,
    fit_geometric_alpha,
    host_cost_from_ms,
    measured_overhead,
    overhead_fraction,
    predict_speedup,
    recommend,
    recommend_schedule,
    schedule_ranges,
    step_cost,
    validate_acceptance,
)
from specdraft.bench._tune import MeasuredRun, Sourced, TuneInputs, TuneReport, TuneRequest, resolve_tune_inputs, tune

__all__ = [
    "BatchKChoice", "BatchLevel", "BatchStepCosts", "best_k_per_batch_size", "known_batch_step_cost",
    "known_batch_step_costs",
    "BUILTIN_PROMPTS", "BYTES_PER_PARAM", "acceptance_from_result", "BenchResult", "bytes_per_param",
    "check_result_path", "compare",
    "conditional_acceptance", "cost_ratio_from_results", "cost_ratio_from_step_times", "decode_footprint",
    "DecodeFootprint", "estimate_cost_ratio", "extend_acceptance", "Extrapolation", "fit_geometric_alpha",
    "fit_step_costs", "footprint_of", "host_cost_from_ms", "host_cost_named", "HostCost", "known_host_costs",
    "KnownHostCost", "known_host_cost", "KPrediction", "LevelResult", "MeasuredRun", "load_prompts", "load_result",
    "load_text_config", "measured_overhead", "measured_speedup", "overhead_fraction", "overhead_from_results",
    "metric_samples", "parse_spec_decode_counters", "spec_decode_counters_by_model", "predict_speedup", "Prompt", "recommend", "recommend_schedule", "round_ratio", "schedule_ranges",
    "Recommendation", "resolve_tune_inputs", "SchedulePoint", "SpecDecodeCounters",
    "speculative_step_ms", "Speedup", "step_cost", "step_ms", "Sourced", "StepCostFit", "Summary", "tune", "TuneInputs", "TuneReport",
    "TuneRequest", "validate_acceptance", "WherePays", "where_speculation_pays",
]
