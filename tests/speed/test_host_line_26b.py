"""tune's model against the 26B-A4B-shaped MoE target on the GPU (docs/gpu/README.md section 6, NVIDIA H200,
vLLM 0.26.0): the E2B draft_model pair and the 26B's MTP assistant, K = 1..8, forced acceptance 0.85 and 0.70.

Beside a 4 ms target step both paths are host-bound: the E2B drafter costs ~11 ms of host time per drafted token,
so it never breaks even; the 4-layer MTP assistant ~1.3 ms, so it pays, but only for short drafts.

The rows come from four H200 machines: the first lease (target alone and most rows), a second lease (MTP K = 5,
draft K = 8 at 0.70) and three lane calls (draft K = 5 and 7, MTP K = 7). A row divides by the target alone of
its own machine where that machine ran one (the lanes of md5 and md7), else by the first lease's; tune predicts it
over the same target step.
"""

import json
from pathlib import Path

import pytest

from specdraft.speed import host_cost_named, known_host_costs, recommend

REPO = Path(__file__).resolve().parents[2]
RAW = REPO / "docs/gpu/raw"
RESULTS = RAW / "issue17_h200/results.jsonl"
OTHERS = [RAW / "issue20_h200/results.jsonl", RAW / "h200x2_lanes/lane1.jsonl",
          RAW / "h200x4_call1/lane2-results.jsonl", RAW / "h200x4_call2/lane2-results.jsonl"]
DRAFT, MTP = "vllm0.26-draft_model-e2b-async-26b", "vllm0.26-mtp-26b-assistant"


def _lease(path: Path = RESULTS):
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    target = next((r for r in rows if r["tag"] == "m0"), None)
    spec = [r for r in rows if r.get("target_dir") == "target26b" and "alpha" in r and "error" not in r]
    return target, spec


def _all_rows():
    """(row, target alone it divides by) for every machine's 26B rows."""
    first, spec = _lease()
    out = [(r, first) for r in spec]
    for path in OTHERS:
        own, rows = _lease(path)
        out += [(r, own or first) for r in rows]
    return out


def _predict(name: str, method: str, alpha: float):
    """Measured and predicted speedup per K for one path and acceptance level (tune with the path's entry, over
    the target step of the row's machine), and tune's recommendation over the first lease's target step."""
    rows = {r["k"]: (r, base) for r, base in _all_rows() if r["method"] == method and r["alpha"] == alpha}
    acceptance = rows[max(rows)][0]["per_position_acceptance"]
    entry = known_host_costs()[name]

    def rec_at(t):
        return recommend(acceptance, entry.gpu_draft_ms_per_token / t, overhead=entry.gpu_overhead_ms_per_step / t,
                         host=host_cost_named(name, t), max_k=max(rows))

    measured = {k: r["decode_tok_s"] / base["decode_tok_s"] for k, (r, base) in rows.items()}
    predicted = {k: rec_at(base["step_ms"]).table[k - 1].predicted_speedup for k, (r, base) in rows.items()}
    return measured, predicted, rec_at(_lease()[0]["step_ms"])


def _within(measured, predicted, bound=0.10):
    return sorted(k for k in measured if abs(predicted[k] / measured[k] - 1) <= bound)


def test_the_26b_entries_fit_the_measured_host_bound_steps():
    """The host line is a least-squares fit to the measured step times of the first lease: shorter than the K = 3
    profile's, whose step lasted 30-45% longer than measured (the profiler's own host overhead), and the host never
    waited."""
    _, spec = _lease()
    for name, method, tag in ((DRAFT, "draft_model", "md3"), (MTP, "mtp", "mm3")):
        entry = known_host_costs()[name]
        profile = next(r for r in spec if r["tag"] == tag and "profile" in r)["profile"]["median_per_step"]
        assert profile["cpu_ms.draft"] / 3 > entry.per_draft_token_ms and profile["sync_ms.other"] < 0.1
        for r in (r for r, _ in _all_rows() if r["method"] == method):
            line = entry.per_step_ms + r["k"] * entry.per_draft_token_ms
            assert r["step_ms"] == pytest.approx(line, rel=0.6)  # steps are noisy: K = 2 (draft) and 8 (mtp) stray most


def test_the_lane_draft_rows_stray_from_the_line_both_ways():
    """Draft K = 5 (two-H200 lane) stepped 25-45% above the host line and K = 7 (four-H200 lane) 31% below it, so
    K = 7 measured faster than K = 5 and 6: the host-bound step moves with the host (the lanes shared one host's
    CPUs with other jobs), not only with K."""
    entry = known_host_costs()[DRAFT]
    steps = {(r["k"], r["alpha"]): r["step_ms"] for r, _ in _all_rows() if r["method"] == "draft_model"}
    ratio = {key: step / (entry.per_step_ms + key[0] * entry.per_draft_token_ms) for key, step in steps.items()}
    assert all(1.2 < ratio[(5, a)] < 1.5 and 0.65 < ratio[(7, a)] < 0.75 for a in (0.85, 0.70))
    for alpha in (0.85, 0.70):
        measured, _, _ = _predict(DRAFT, "draft_model", alpha)
        assert measured[7] > max(measured[5], measured[6])


@pytest.mark.parametrize("alpha", [0.85, 0.70])
def test_the_e2b_draft_never_breaks_even_beside_the_26b(alpha):
    """Every measured K = 1..8 loses (0.17x-0.62x), tune recommends no speculation, and predicts a loss at every K
    even at alpha 0.95; its predictions are within 10% only at K = 4, 6 (0.70) and 8: K = 1..3 are off by 17-40%,
    the lane rows K = 5 and 7 by 22-44%."""
    measured, predicted, rec = _predict(DRAFT, "draft_model", alpha)
    assert sorted(measured) == list(range(1, 9))
    assert max(measured.values()) < 0.65 and rec.recommended_k == 0
    assert max(measured, key=measured.get) == 1
    assert all(s < 1.0 for s in predicted.values())
    t = _lease()[0]["step_ms"]
    entry = known_host_costs()[DRAFT]
    high = recommend([0.95 ** i for i in range(1, 9)], entry.gpu_draft_ms_per_token / t,
                     overhead=entry.gpu_overhead_ms_per_step / t, host=host_cost_named(DRAFT, t))
    assert high.recommended_k == 0
    assert _within(measured, predicted) == {0.85: [4, 8], 0.70: [4, 6, 8]}[alpha]
    assert all(abs(predicted[k] / measured[k] - 1) > 0.2 for k in (5, 7))


@pytest.mark.parametrize("alpha", [0.85, 0.70])
def test_the_26b_mtp_assistant_pays_for_short_drafts(alpha):
    """MTP wins at every measured K = 1..8 (1.01x-1.67x); tune picks K = 3 (0.85) / 2 (0.70), within 8% of the
    best measured K (4 at both: K = 7 from a lane did not change it, 1.22x / 1.09x); predictions stay within 26% of
    every row but K = 5 at 0.85 (second lease, +32%), within 10% of 3 of the 8 rows at 0.85 and 6 of 8 at 0.70."""
    measured, predicted, rec = _predict(MTP, "mtp", alpha)
    assert sorted(measured) == list(range(1, 9))
    assert min(measured.values()) > 1.0
    best = max(measured, key=measured.get)
    assert best == 4 and rec.recommended_k == {0.85: 3, 0.70: 2}[alpha]
    assert measured[rec.recommended_k] >= 0.92 * measured[best]
    for k, m in measured.items():
        if (k, alpha) != (5, 0.85):
            assert predicted[k] == pytest.approx(m, rel=0.26)
    assert _within(measured, predicted) == {0.85: [1, 3, 6], 0.70: [1, 2, 4, 5, 7, 8]}[alpha]
    if alpha == 0.85:
        assert predicted[5] / measured[5] - 1 > 0.3
