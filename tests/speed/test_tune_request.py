"""tune as a library call: each input with its source, the same answer the CLI prints."""

import json

import pytest
from pydantic import ValidationError

from specdraft.speed import KnownHostCost, TuneRequest, known_host_costs, resolve_tune_inputs, tune
from specdraft.cli import main

MTP = "vllm0.26-mtp-31b-assistant"


def test_a_known_host_cost_entry_supplies_c_o_and_the_host_line_and_says_so():
    inputs = resolve_tune_inputs(TuneRequest(per_position_acceptance=(0.83, 0.67), host_costs=MTP,
                                             target_step_ms=24.72))
    entry = known_host_costs()[MTP]
    assert inputs.cost_ratio.value == pytest.approx(entry.gpu_draft_ms_per_token / 24.72)
    assert inputs.cost_ratio.source.startswith(f"known: {entry.gpu_draft_ms_per_token} ms of drafter GPU time")
    assert inputs.overhead.value == pytest.approx(entry.gpu_overhead_ms_per_step / 24.72)
    assert inputs.host.source.startswith(f"known: {MTP}:")
    assert (inputs.acceptance.value, inputs.acceptance.source) == ((0.83, 0.67), "given")


def test_the_library_report_is_what_tune_json_prints(capsys):
    request = TuneRequest(per_position_acceptance=(0.85, 0.72, 0.61), cost_ratio=0.18, overhead_ms=2.0,
                          target_step_ms=20.0, max_k=5)
    assert main(["tune", "--per-position-acceptance", "0.85,0.72,0.61", "--cost-ratio", "0.18",
                 "--overhead-ms", "2", "--target-step-ms", "20", "--max-k", "5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(tune(request).to_json()))


def test_a_request_needs_exactly_one_acceptance_source():
    from specdraft.errors import UserError

    with pytest.raises(UserError, match="acceptance from exactly one source"):
        resolve_tune_inputs(TuneRequest(cost_ratio=0.1))


def test_a_host_cost_entry_with_a_negative_time_or_a_missing_field_is_refused_on_load():
    entry = known_host_costs()[MTP].model_dump()
    with pytest.raises(ValidationError, match="per_step_ms"):
        KnownHostCost(**entry | {"per_step_ms": -1.0})
    with pytest.raises(ValidationError, match="trace"):
        KnownHostCost(**{k: v for k, v in entry.items() if k != "trace"})
