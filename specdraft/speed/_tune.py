"""``tune`` as a library call: the recommendation from the resolved inputs, the schedule and the measured check.

``TuneRequest`` says which measurements or given values to use (one field per ``specdraft tune`` option);
``resolve_tune_inputs(request) -> TuneInputs`` turns them into numbers, each with the words that say where
it came from; ``tune(request) -> TuneReport`` adds the recommendation, the per-batch-size schedule and the
check against the benched server. ``TuneReport.to_json()`` is what ``specdraft tune --json`` prints.

Each bench result file is read once per call.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from specdraft.bench import ratio, round_ratio
from specdraft.errors import UserError
from specdraft.speed._batch_size_schedule import SchedulePoint, recommend_schedule, schedule_ranges
from specdraft.speed._batch_step_costs import best_k_per_batch_size, known_batch_step_cost
from specdraft.speed._calibration import acceptance_from_result, cost_ratio_from_results, overhead_from_results, step_ms
from specdraft.speed._speedup_model import Recommendation, overhead_fraction, recommend
from specdraft.speed._tune_inputs import BenchRuns, MeasuredRun, TuneInputs, resolve_acceptance, resolve_from_runs
from specdraft.speed._tune_request import TuneRequest


class TuneReport(BaseModel):
    """What tune answers: the recommendation, its inputs, the optional schedule and measured check."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    recommendation: Recommendation
    inputs: TuneInputs
    schedule: list[tuple[int, int, int]] | None = None
    check: dict | None = None
    """The prediction at the benched server's K beside its measured speedup."""

    def to_json(self) -> dict:
        out = self.recommendation.to_json()
        inputs = self.inputs
        out["sources"] = {"acceptance": inputs.acceptance.source, "cost_ratio": inputs.cost_ratio.source,
                          "overhead": inputs.overhead.source,
                          "host_cost": None if inputs.host is None else inputs.host.source}
        if self.schedule is not None:
            out["num_speculative_tokens_per_batch_size"] = [list(s) for s in self.schedule]
        out["measured"] = self.check
        return out


def tune(request: TuneRequest) -> TuneReport:
    """Resolve the inputs, recommend K, and (when asked) a schedule per batch size."""
    runs = BenchRuns.load(request)
    inputs = resolve_from_runs(request, runs)
    rec = recommend(inputs.acceptance.value, inputs.cost_ratio.value, max_k=request.max_k,
                    overhead=inputs.overhead.value, extrapolation=request.extrapolation, host=inputs.host)
    schedule = _schedule(request, runs) if request.schedule else None
    return TuneReport(recommendation=rec, inputs=inputs, schedule=schedule,
                      check=_measured_vs_predicted(rec, inputs.measured))


def _measured_vs_predicted(rec: Recommendation, measured: MeasuredRun | None) -> dict | None:
    if measured is None:
        return None
    row = next((r for r in rec.table if r.k == measured.k), None)
    predicted = row.predicted_speedup if row else None
    over = ratio(predicted, measured.speedup)  # None where the measured speedup is too close to 0 to divide by
    return {"k": measured.k, "measured_speedup": round_ratio(measured.speedup),
            "predicted_speedup": None if predicted is None else round_ratio(predicted),
            "prediction_error": None if over is None else round(over - 1, 4)}


def _schedule(request: TuneRequest, runs: BenchRuns) -> list[tuple[int, int, int]]:
    """One K per level the speculative run measured, each from that level's acceptance, c and o."""
    spec, draft_only, target_only = runs.speculative, runs.draft_only, runs.target_only
    if request.batch_costs:
        acceptance = resolve_acceptance(request, runs).value
        choices = best_k_per_batch_size(known_batch_step_cost(request.batch_costs), acceptance, max_k=request.max_k)
        if not choices:
            raise UserError(f"--batch-costs {request.batch_costs} measured one K per batch size: no step line to "
                            "plan a schedule from", hint="bench the server at two or more K per --concurrency level")
        return schedule_ranges([(c.batch_size, c.best_k) for c in choices])
    if spec is None or draft_only is None:
        raise UserError("--schedule needs per-concurrency measurements",
                        hint="add --from-bench SPEC.json --step-times DRAFT_ONLY.json TARGET_ONLY.json "
                             "(each benched with the same --concurrency levels)")
    points = []
    for level in spec.levels:
        n = level.concurrency
        if request.measure_overhead:
            overhead = overhead_from_results(spec, draft_only, target_only, n)
        elif request.overhead_ms is not None:  # the same ms is a different share of each batch size's target step
            overhead = overhead_fraction(request.overhead_ms, step_ms(target_only, n, "target-only"))
        else:
            overhead = request.overhead_fraction or 0.0
        points.append(SchedulePoint(batch_size=n, per_position_acceptance=acceptance_from_result(spec, n),
                                    cost_ratio=cost_ratio_from_results(draft_only, target_only, n),
                                    overhead=overhead))
    return recommend_schedule(points, max_k=request.max_k, extrapolation=request.extrapolation)
