"""The host line of a speculative step: launching the drafter from the CPU can take longer than running it.

Found on the GPU (docs/gpu/README.md, issue 7): vLLM 0.26's draft_model path spends ~10 ms of host time per
drafted token on an E2B-shaped drafter against ~3.3 ms of GPU work, so past K = 3 the host sets the pace. The
Gemma 4 MTP assistant (4 layers) costs ~1.6 ms of host and ~0.5 ms of GPU time per drafted token: its steps
are GPU-bound, and long drafts pay off.
"""

import json
from pathlib import Path

import pytest

from specdraft.speed import HostCost, host_cost_from_ms, host_cost_named, known_host_costs, recommend, step_cost
from specdraft.cli import main
from specdraft.errors import UserError

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "docs/gpu/raw/issue7_h100/results.jsonl"
MTP_RESULTS = REPO / "docs/gpu/raw/issue7_mtp_h100/results.jsonl"
MTP = "vllm0.26-mtp-31b-assistant"


def test_a_step_takes_the_longer_of_the_gpu_and_the_host_line():
    host = HostCost(per_step=0.2, per_draft_token=0.45)
    assert step_cost(1, 0.15, 0.1, host) == pytest.approx(1.25)  # GPU: 1 + 0.15 + 0.1 > 0.65
    assert step_cost(4, 0.15, 0.1, host) == pytest.approx(2.0)  # host: 0.2 + 4 * 0.45 > 1.7
    assert step_cost(4, 0.15, 0.1) == pytest.approx(1.7)


def test_a_costly_host_line_recommends_a_shorter_draft_and_marks_host_bound_rows():
    rates = [0.85 ** i for i in range(1, 9)]
    without = recommend(rates, 0.135, overhead=0.086)
    with_host = recommend(rates, 0.135, overhead=0.086, host=HostCost(0.219, 0.432))
    assert without.recommended_k == 6 and with_host.recommended_k == 3
    assert [row.host_bound for row in with_host.table[:4]] == [False, False, True, True]
    assert with_host.to_json()["host_cost"]["per_draft_token"] == pytest.approx(0.432)


def test_host_times_in_ms_are_fractions_of_the_target_step_and_must_be_sane():
    host = host_cost_from_ms(5.0, 10.0, 20.0)
    assert (host.per_step, host.per_draft_token) == (0.25, 0.5)
    for bad in ((-1.0, 10.0, 20.0), (5.0, float("inf"), 20.0), (5.0, 10.0, 0.0)):
        with pytest.raises(UserError):
            host_cost_from_ms(*bad)


def test_every_known_host_cost_names_what_was_measured():
    table = known_host_costs()
    assert "vllm0.26-draft_model-e2b-async" in table
    for entry in table.values():  # the model refuses missing fields and negative times when the file loads
        assert entry.method and entry.vllm and entry.gpu and entry.drafter and entry.source
        assert (REPO / entry.trace).is_file()  # the profile it was read from is in the repository
    assert host_cost_named("vllm0.26-draft_model-e2b-async", 10.428).per_draft_token == pytest.approx(1.0)


def _h100_rows():
    rows = [json.loads(line) for line in RESULTS.read_text().splitlines()]
    target = next(r for r in rows if r["tag"] == "k0" and "error" not in r)
    async_rows = {(r["k"], r["alpha"]): r for r in rows
                  if r["tag"] in ("p2a", "p3a", "p4a", "p5a") and "alpha" in r}
    return target, async_rows


@pytest.mark.parametrize("alpha", [0.85, 0.70])
def test_the_host_line_picks_the_best_measured_k_of_the_h100_sweep(alpha):
    """tune's K is the best measured K (2..5, async scheduling) on the H100, and every prediction is
    within 11% of the measurement; the GPU line alone (no host line) picks K = 6 and 4."""
    target, rows = _h100_rows()
    t = target["step_ms"]
    measured = {k: r["decode_tok_s"] / target["decode_tok_s"] for (k, a), r in rows.items() if a == alpha}
    acceptance = rows[(5, alpha)]["per_position_acceptance"]
    known = known_host_costs()["vllm0.26-draft_model-e2b-async"]
    c, o = known.gpu_draft_ms_per_token / t, known.gpu_overhead_ms_per_step / t
    rec = recommend(acceptance, c, overhead=o, host=host_cost_named("vllm0.26-draft_model-e2b-async", t))
    best = max(measured, key=measured.get)
    assert rec.recommended_k == best == 3
    for row in rec.table:
        if row.k in measured:
            assert row.predicted_speedup == pytest.approx(measured[row.k], rel=0.11)
    assert recommend(acceptance, c, overhead=o).recommended_k > 3  # the GPU line alone drafts longer


@pytest.mark.parametrize("alpha", [0.85, 0.70])
def test_the_mtp_costs_predict_every_measured_mtp_k_within_10_percent(alpha):
    """The 31B's MTP assistant on the H100 (V1 runner, K = 3, 5, 7, 9): predictions from the K = 3 profile are
    within 10% at every K, and tune drafts long (K = 9 of 9 at alpha 0.85, the best measured; 8 at 0.70, between
    the measured K = 7 and 9 that lie within 1.2% of each other)."""
    rows = [json.loads(line) for line in MTP_RESULTS.read_text().splitlines()]
    target = next(r for r in rows if r["tag"] == "k0")
    runs = {r["k"]: r for r in rows if r.get("method") == "mtp" and r.get("alpha") == alpha
            and not r["v2_model_runner"] and r["concurrency"] == 1}
    measured = {k: r["decode_tok_s"] / target["decode_tok_s"] for k, r in runs.items()}
    t = target["step_ms"]
    known = known_host_costs()[MTP]
    rec = recommend(runs[max(runs)]["per_position_acceptance"], known.gpu_draft_ms_per_token / t,
                    overhead=known.gpu_overhead_ms_per_step / t, host=host_cost_named(MTP, t), max_k=max(runs))
    assert sorted(measured) == [3, 5, 7, 9]
    for row in rec.table:
        if row.k in measured:
            assert row.predicted_speedup == pytest.approx(measured[row.k], rel=0.10)
        assert not row.host_bound  # launching 4 small layers never outlasts the target's forward
    assert rec.recommended_k == {0.85: 9, 0.70: 8}[alpha]
    assert max(measured, key=measured.get) == 9


def test_cli_host_costs_need_the_target_step_time(capsys):
    code = main(["tune", "--per-position-acceptance", "0.8,0.6", "--cost-ratio", "0.13",
                 "--host-costs", "vllm0.26-draft_model-e2b-async"])
    _, err = capsys.readouterr()
    assert code == 2 and "--host-costs needs the target's step time" in err and "--target-step-ms" in err


def test_cli_host_ms_takes_two_numbers(capsys):
    code = main(["tune", "--per-position-acceptance", "0.8", "--cost-ratio", "0.1", "--host-ms", "5",
                 "--target-step-ms", "20"])
    _, err = capsys.readouterr()
    assert code == 2 and "--host-ms takes two numbers" in err


def test_cli_host_ms_is_shown_in_text_and_json(capsys):
    args = ["tune", "--per-position-acceptance", "0.85,0.7225,0.614,0.522", "--cost-ratio", "0.135",
            "--host-ms", "5.3,10.4", "--target-step-ms", "24.1"]
    assert main(args) == 0
    out, _ = capsys.readouterr()
    assert "max(1 + K*c + o, h_0 + K*h)" in out and "h host-bound" in out
    assert main([*args, "--json"]) == 0
    data = json.loads(capsys.readouterr()[0])
    assert data["host_cost"]["per_step"] == pytest.approx(5.3 / 24.1, rel=1e-4)
    assert data["sources"]["host_cost"].startswith("given: 5.3 ms per step")
    assert data["recommended_k"] == 3


def test_cli_a_known_path_supplies_c_and_o_unless_they_are_given(capsys):
    mtp9 = "0.83,0.672,0.541,0.463,0.39,0.344,0.29,0.236,0.193"
    args = ["tune", "--per-position-acceptance", mtp9, "--host-costs", MTP, "--target-step-ms", "24.72",
            "--max-k", "9", "--json"]
    assert main(args) == 0
    data = json.loads(capsys.readouterr()[0])
    assert data["cost_ratio"] == pytest.approx(0.514 / 24.72) and data["overhead"] == pytest.approx(1.294 / 24.72)
    assert data["sources"]["cost_ratio"].startswith(f"known: 0.514 ms of drafter GPU time per token ({MTP})")
    assert data["recommended_k"] == 9
    assert main([*args, "--cost-ratio", "0.5", "--overhead-ms", "0"]) == 0  # a slow drafter: given values win
    data = json.loads(capsys.readouterr()[0])
    assert (data["cost_ratio"], data["overhead"], data["sources"]["cost_ratio"]) == (0.5, 0.0, "given")
    assert data["recommended_k"] < 9
