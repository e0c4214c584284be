"""The speed model: how fast speculative decoding runs at each ``num_speculative_tokens``, and the K to choose.

A speculative step costs ``max(1 + K*c + o, h_0 + K*h)`` target steps and emits ``E(K) = 1 + a_1 + ... + a_K``
tokens; the predicted speedup is their ratio. The modules, by what they hold:

- ``_acceptance``: vLLM's unconditional acceptance per draft position, checked (``validate_acceptance``) and
  extended past the measured positions (``extend_acceptance``: a geometric fit, said in ``Extrapolation``).
- ``_speedup_model``: the model itself. ``recommend(per_position_acceptance, cost_ratio, max_k=8, overhead=0.0,
  host=None) -> Recommendation``: the K with the largest predicted speedup, or 0 when nothing beats the target
  alone; ``predict_speedup``, ``step_cost``, ``HostCost`` (the host line: launching the drafter from the CPU).
- ``_batch_size_schedule``: ``recommend_schedule(points)``, vLLM's ``num_speculative_tokens_per_batch_size`` from
  several batch sizes (``schedule_ranges``: the ranges from one K per batch size).
- ``_cost_ratio``: c = draft step / target step, from two measured step times or estimated from the bytes each
  shape reads per token (``estimate_cost_ratio``).
- ``_calibration``: the model's inputs measured by ``specdraft bench`` (``acceptance_from_result``,
  ``cost_ratio_from_results``, ``overhead_from_results``) and ``fit_step_costs``: c and o fitted through step
  times at several K.
- ``_known_host_costs``: the measured host lines per path and vLLM release (``data/host_costs.json``).
- ``_step_models``: ``step_model(method, size, profile, family) -> StepModel``: one method's c, o and host line
  beside a measured size of a family (the family's rows name the host-cost entries), or modelled from them.
- ``_batch_step_costs``: step times measured per batch size and K (``data/batch_step_costs.json``) and
  ``best_k_per_batch_size``: the model's pick at each.
- ``_tune_request``: ``TuneRequest``, what ``specdraft tune`` is asked (one field per option).
- ``_tune_inputs``: ``resolve_tune_inputs(request) -> TuneInputs``: acceptance, c, o and the host line from bench
  results, given values or the tables, each value with its source.
- ``_tune``: ``tune(TuneRequest(...)) -> TuneReport``, what ``specdraft tune`` does as a call: the resolved inputs,
  then the recommendation, the schedule and the measured check; ``TuneReport.to_json()`` is ``tune --json``'s
  output.

It reads bench results (``specdraft.bench``), never the bench client, and knows nothing of a launch plan.
"""

from specdraft.speed._acceptance import (
    Extrapolation,
    conditional_acceptance,
    extend_acceptance,
    fit_geometric_alpha,
    validate_acceptance,
)
from specdraft.speed._batch_size_schedule import SchedulePoint, recommend_schedule, schedule_ranges
from specdraft.speed._batch_step_costs import (
    BatchKChoice,
    BatchLevel,
    BatchStepCosts,
    best_k_per_batch_size,
    known_batch_step_cost,
    known_batch_step_costs,
)
from specdraft.speed._calibration import (
    StepCostFit,
    acceptance_from_result,
    cost_ratio_from_results,
    fit_step_costs,
    measured_speedup,
    overhead_from_results,
    speculative_step_ms,
    step_ms,
)
from specdraft.speed._cost_ratio import (
    BYTES_PER_PARAM,
    DecodeFootprint,
    bytes_per_param,
    cost_ratio_from_step_times,
    decode_footprint,
    estimate_cost_ratio,
    footprint_of,
    load_text_config,
)
from specdraft.speed._known_host_costs import KnownHostCost, host_cost_named, known_host_cost, known_host_costs
from specdraft.speed._speedup_model import (
    HostCost,
    KPrediction,
    Recommendation,
    host_cost_from_ms,
    measured_overhead,
    overhead_fraction,
    predict_speedup,
    recommend,
    step_cost,
)
from specdraft.speed._step_models import StepModel, host_step_ms, size_name, step_from_entry, step_model
from specdraft.speed._tune import TuneReport, tune
from specdraft.speed._tune_inputs import MeasuredRun, Sourced, TuneInputs, resolve_tune_inputs
from specdraft.speed._tune_request import TuneRequest

__all__ = [
    "BatchKChoice", "BatchLevel", "BatchStepCosts", "best_k_per_batch_size", "known_batch_step_cost",
    "known_batch_step_costs",
    "BYTES_PER_PARAM", "acceptance_from_result", "bytes_per_param", "conditional_acceptance",
    "cost_ratio_from_results", "cost_ratio_from_step_times", "decode_footprint", "DecodeFootprint",
    "estimate_cost_ratio", "extend_acceptance", "Extrapolation", "fit_geometric_alpha", "fit_step_costs",
    "footprint_of", "host_cost_from_ms", "host_cost_named", "HostCost", "known_host_costs", "KnownHostCost",
    "known_host_cost", "KPrediction", "MeasuredRun", "load_text_config", "measured_overhead", "measured_speedup",
    "overhead_fraction", "overhead_from_results", "predict_speedup", "recommend", "recommend_schedule",
    "schedule_ranges", "Recommendation", "resolve_tune_inputs", "SchedulePoint", "speculative_step_ms", "step_cost",
    "step_ms", "StepModel", "host_step_ms", "size_name", "step_from_entry", "step_model", "Sourced", "StepCostFit",
    "tune", "TuneInputs", "TuneReport", "TuneRequest", "validate_acceptance",
]
