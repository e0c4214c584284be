"""Step costs per batch size as shipped data: what load31.py derives from the committed raw GPU rows, the step line
tune fits at each batch size, and the levels and requests it turns away."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from specdraft.speed import (
    BatchLevel,
    BatchStepCosts,
    TuneRequest,
    best_k_per_batch_size,
    known_batch_step_cost,
    known_batch_step_costs,
    tune,
)
from specdraft.errors import UserError

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "specdraft/speed/data/batch_step_costs.json"
MTP, DRAFT = "vllm0.26-mtp-31b-assistant-h200", "vllm0.26-draft_model-e2b-async-h200"


def entry(*levels: BatchLevel) -> BatchStepCosts:
    return BatchStepCosts(name="t", method="mtp", vllm="0.26.0", gpu="G", target="T", target_shape={}, drafter="D",
                          cudagraph_mode=["FULL"], source="s", levels=levels)


def test_the_shipped_costs_are_what_load31_writes_from_the_committed_raw_rows(tmp_path):
    """A hand edit of the data, or raw rows that moved, fails here until the file is regenerated."""
    about = json.loads(SHIPPED.read_text())["_about"]
    raw = about_runs(SHIPPED)
    out = tmp_path / "costs.json"
    done = subprocess.run([sys.executable, "benchmarks/gpu/load31.py", *raw, "--out", str(tmp_path),
                           "--costs-out", str(out)], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text()) == json.loads(SHIPPED.read_text())
    assert about.startswith("Step costs per batch size")


def about_runs(path: Path) -> list[str]:
    """The raw results files an entry's source names, in order (every entry names the same files)."""
    source = next(v["source"] for k, v in json.loads(path.read_text()).items() if not k.startswith("_"))
    return source.split("raw rows: ")[1].split(", ")


def test_a_hand_worked_batch_size_gives_its_line_and_tunes_pick():
    # target step 20 ms; K = 2 -> 20 ms, K = 4 -> 24 ms: 16 ms + K x 2 ms, c = 0.1, o = 16 / 20 - 1 = -0.2
    costs = entry(BatchLevel(batch_size=4, target_step_ms=20.0, step_ms={2: 20.0, 4: 24.0}))
    fit = costs.fit(costs.levels[0])
    assert (fit.cost_ratio, fit.overhead) == pytest.approx((0.1, -0.2))
    (choice,) = best_k_per_batch_size(costs, [0.5 ** i for i in range(1, 9)], max_k=8)
    # S(K) = (2 - 0.5**K) / (0.8 + 0.1 K): 1.67, 1.75, 1.72, ... -> K = 2
    assert choice.best_k == 2 and choice.predicted[1] == pytest.approx(1.75 / 1.0)


@pytest.mark.parametrize("steps", [{3: 30.0}, {2: 30.0, 4: 26.0}])
def test_a_batch_size_with_one_k_or_with_longer_drafts_running_faster_gives_no_line(steps):
    costs = entry(BatchLevel(batch_size=1, target_step_ms=17.0, step_ms=steps))
    assert costs.fit(costs.levels[0]) is None
    assert best_k_per_batch_size(costs, [0.8], max_k=4) == []


def test_only_batch_sizes_up_to_the_servers_are_planned():
    costs = known_batch_step_cost(MTP)
    choices = best_k_per_batch_size(costs, [0.8 ** i for i in range(1, 9)], max_k=8, up_to=8)
    # batch size 1 was measured with K = 5 running faster per step than K = 3 (PIECEWISE noise): no line there
    assert [c.batch_size for c in choices] == [2, 4, 8]
    assert costs.fit(costs.levels[0]) is None and costs.levels[0].batch_size == 1


def test_the_e2b_draft_has_a_line_at_every_batch_size_now_that_k_2_3_5_were_measured():
    costs = known_batch_step_cost(DRAFT)
    assert all(set(level.step_ms) == {2, 3, 5} and costs.fit(level) is not None for level in costs.levels)
    # at 0.70 the line says what the rows measured on the schedule engine: no K beats the target alone at 1 and 8
    choices = {c.batch_size: c.best_k for c in best_k_per_batch_size(costs, [0.7 ** i for i in range(1, 9)], max_k=8)}
    assert choices[1] == choices[8] == 0


def test_an_unknown_name_is_refused_naming_the_known_ones():
    with pytest.raises(UserError) as err:
        known_batch_step_cost("nope")
    assert all(name in err.value.hint for name in known_batch_step_costs())


def test_tune_reads_the_costs_at_one_batch_size_and_plans_a_schedule_over_all():
    rates = tuple(0.85 ** i for i in range(1, 9))
    report = tune(TuneRequest(per_position_acceptance=rates, batch_costs=MTP, concurrency=32, schedule=True))
    assert report.inputs.cost_ratio.source.startswith(f"measured per batch size ({MTP}, batch size 32)")
    expected = [(c.batch_size, c.best_k) for c in best_k_per_batch_size(known_batch_step_cost(MTP), rates, max_k=8)]
    assert report.recommendation.recommended_k == dict(expected)[32]
    assert report.schedule[0][2] == expected[0][1] and report.schedule[-1][2] == dict(expected)[32]


@pytest.mark.parametrize("fields, message", [
    (dict(batch_costs=MTP, concurrency=3), "has no step line at batch size 3"),
    (dict(batch_costs=MTP, concurrency=1), "has no step line at batch size 1"),
    (dict(batch_costs=MTP, overhead_fraction=0.1), "--batch-costs fits the per-step overhead at each batch size"),
])
def test_tune_turns_away_batch_costs_it_cannot_fit(fields, message):
    with pytest.raises(UserError, match=message):
        tune(TuneRequest(per_position_acceptance=(0.8,), **fields))
