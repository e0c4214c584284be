"""``--method auto`` against the GPU: at a forced acceptance alpha, the order it ranks the methods in, the target
alone among them at 1x, is the order their best measured speedups came in on one machine
(benchmarks/gpu/methods_costs.py reads the raw rows), or a recorded, explained difference."""

import sys
from pathlib import Path

import pytest

from specdraft.speed import known_host_costs, predict_speedup
from specdraft.checkpoints import inspect_checkpoint
from specdraft.speed import step_model
from specdraft.planning.facts.method_ranking import rank_methods

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks/gpu"))

import methods_costs  # noqa: E402  (a script beside the GPU tools, not a package)

DRAFTS = {"31b": {"draft_model": "google/gemma-4-E2B-it", "mtp": "google/gemma-4-31B-it-assistant",
                  "eagle3": str(REPO / "benchmarks/gpu/configs/eagle3_31b"),
                  "dflash": str(REPO / "benchmarks/gpu/configs/dflash_31b")},
          "26b": {"draft_model": "google/gemma-4-E2B-it", "mtp": "google/gemma-4-26B-A4B-it-assistant",
                  "eagle3": str(REPO / "benchmarks/gpu/configs/eagle3_26b")}}
TARGETS = {"31b": "google/gemma-4-31B-it", "26b": "google/gemma-4-26B-A4B-it"}
CALL5 = tuple(f"docs/gpu/raw/h200x4_call5/lane{i}-results.jsonl" for i in range(4))
LEASES = {"issue7_h100": ("docs/gpu/raw/issue7_h100/results.jsonl",),
          "issue7_mtp_h100": ("docs/gpu/raw/issue7_mtp_h100/results.jsonl",),
          # lanes 0-2 of one 4 x H200 machine: k0r, df7 and e3ks ran side by side in call 3; the same files hold
          # that machine's earlier lm85, lm70 and ld70 rows (call 2: MTP and the E2B draft in K lookup engines)
          "h200x4_call3": tuple(f"docs/gpu/raw/h200x4_call3/lane{i}-results.jsonl" for i in range(3)),
          # call 5, plain engines side by side: k0r, e3k3 (lane 0), df3/5/8, df1/2 and mtp8p, e3k5/7; the same files
          # hold call 4's lx8b (MTP K = 8 at 0.70, V1, 64-token requests) and V2 rows, which the ranking leaves out
          "h200x4_call5": CALL5,
          # e3m3 (call 5, lane 0) beside section 6's 26B rows: call 5 ran no 26B target alone, so every 26B row
          # divides by the first machine's m0 (issue17_h200, 4.031 ms), as section 6 does for lane rows
          "h200x4_call5_26b": ("docs/gpu/raw/h200x4_call5/lane0-results.jsonl",
                               "docs/gpu/raw/issue17_h200/results.jsonl")}
"""The rows a ranking is measured on: one machine each, but for the 26B-A4B's."""
PROFILES = {"issue7_h100": "h100", "issue7_mtp_h100": "h100", "h200x4_call3": "h200", "h200x4_call5": "h200",
            "h200x4_call5_26b": "h200"}
"""The GPU profile auto ranks for on each machine."""
SHAPES = {"h200x4_call5_26b": "26b"}
"""The target shape of a lease's rows where not the 31B."""
ALONE = "target alone"

_K_LOOKUP = ("call 3's MTP and E2B draft rows ran in K lookup engines (PIECEWISE CUDA graphs: the host launches the "
             "target's attention, 18.1 ms a step in e3ks' profile), 64-token requests of call 2's load jobs, and its "
             "EAGLE-3 rows too (e3ks); DFlash and the target alone in plain engines. Auto's entries are plain "
             "engines': call 5, all plain engines at 256 tokens, measured mtp above eagle3 at both alphas, as auto "
             "has it (docs/gpu/README.md section 9.7)")
EXPECTED_DIFFERENCES = {
    ("h200x4_call3", 0.85): (["dflash", "mtp", "eagle3", ALONE], "auto puts mtp above eagle3; " + _K_LOOKUP),
    ("h200x4_call3", 0.70): (["dflash", "mtp", "eagle3", "draft_model", ALONE],
                             "as at 0.85 for eagle3 and mtp; the E2B draft (ld70, K = 2 and 5) measured 0.61x and "
                             "0.73x in its K lookup engine, where auto predicts 1.49x at K = 2 from the H100's plain "
                             "engine entry (its host line over the H200's 17.7 ms target step): " + _K_LOOKUP)}
"""(lease, alpha) -> auto's order where it differs from the measured one, and why (the measured order is asserted
too: new rows re-open the difference)."""
MEASURED = {("h200x4_call3", 0.85): ["dflash", "eagle3", "mtp", ALONE],
            ("h200x4_call3", 0.70): ["dflash", "eagle3", "mtp", ALONE, "draft_model"],
            ("h200x4_call5", 0.85): ["dflash", "mtp", "eagle3", ALONE],
            ("h200x4_call5", 0.70): ["dflash", "mtp", "eagle3", ALONE],
            ("h200x4_call5_26b", 0.85): ["mtp", "eagle3", ALONE, "draft_model"],
            ("h200x4_call5_26b", 0.70): ["mtp", ALONE, "eagle3", "draft_model"]}


def measured_speedups(lease: str, alpha: float) -> list[tuple[str, float]]:
    """Each method's best measured speedup on ``lease`` at ``alpha``, fastest first."""
    shape = SHAPES.get(lease, "31b")
    rows = methods_costs.load_all([str(REPO / path) for path in LEASES[lease]])
    out = methods_costs.predict(methods_costs.target_alone(rows, shape), methods_costs.speculative_rows(rows, shape),
                                shape)
    return [(o["method"], o["speedup"]) for o in methods_costs.measured_ranking(out)[alpha]]


def measured_order(lease: str, alpha: float) -> list[str]:
    """The methods by their best measured speedup, the target alone placed at 1x."""
    return with_alone(measured_speedups(lease, alpha))


def with_alone(ranked: list[tuple[str, float]]) -> list[str]:
    """Methods fastest first with the target alone at 1x among them (a tie goes to the method)."""
    slower = next((i for i, (_, speedup) in enumerate(ranked) if speedup < 1.0), len(ranked))
    return [m for m, _ in ranked[:slower]] + [ALONE] + [m for m, _ in ranked[slower:]]


def best_drafting_speedup(method: str, shape: str, profile: str, rates: tuple[float, ...]) -> float:
    """The best speedup auto's step model predicts for ``method`` at any K >= 1 (below 1x where it would not draft)."""
    model = step_model(method, shape, profile)
    return max(predict_speedup(rates, k, model.cost_ratio, model.overhead, model.host) for k in range(1, 9))


def auto_order(lease: str, measured: list[str], alpha: float) -> list[str]:
    """Auto's order of the measured methods. A method auto ranks at K = 0 drafts nothing: it goes below the target
    alone, by the best speedup its step model predicts at K >= 1 (auto's 1x for all of them would order nothing)."""
    shape, profile = SHAPES.get(lease, "31b"), PROFILES[lease]
    methods = [m for m in measured if m != ALONE]
    rates = tuple(alpha ** i for i in range(1, 9))
    ranking = rank_methods(inspect_checkpoint(TARGETS[shape]),
                           [inspect_checkpoint(DRAFTS[shape][m]) for m in methods if m in DRAFTS[shape]],
                           version="0.26.0", profile=profile, measured={m: rates for m in methods})
    speedups = [(row.method, row.predicted_speedup if row.k else
                 min(best_drafting_speedup(row.method, shape, profile, rates), 0.999))
                for row in ranking.ranked if row.method in methods]
    return with_alone(sorted(speedups, key=lambda pair: -pair[1]))


@pytest.mark.parametrize("alpha", [0.85, 0.70])
@pytest.mark.parametrize("lease", sorted(LEASES))
def test_auto_ranks_the_measured_methods_in_their_measured_order(lease, alpha):
    measured = measured_order(lease, alpha)
    assert len(measured) >= 3
    if (lease, alpha) in MEASURED:
        assert measured == MEASURED[lease, alpha]
    expected, why = EXPECTED_DIFFERENCES.get((lease, alpha), (measured, "auto's order is the measured one"))
    assert auto_order(lease, measured, alpha) == expected, why


def test_a_profiled_row_gives_the_shipped_entry_of_its_path():
    """The arithmetic the EAGLE-3 and DFlash entries came from reproduces the MTP assistant's shipped entry from its
    own raw row (a GPU-bound step: o is the step beyond the target's and the drafting)."""
    rows = methods_costs.load_all([str(REPO / path) for path in LEASES["issue7_mtp_h100"]])
    target = methods_costs.target_alone(rows)
    row = next(r for r in methods_costs.speculative_rows(rows) if r["tag"] == "mtp3" and "profile" in r)
    entry = methods_costs.profile_entry(row, target["step_ms"])
    shipped = known_host_costs()["vllm0.26-mtp-31b-assistant"]
    for field in ("per_step_ms", "per_draft_token_ms", "gpu_draft_ms_per_token", "gpu_idle_ms_per_step",
                  "gpu_overhead_ms_per_step"):
        assert entry[field] == pytest.approx(getattr(shipped, field), abs=0.01), field


def lease_entries(lease: str) -> dict:
    shape = SHAPES.get(lease, "31b")
    rows = methods_costs.load_all([str(REPO / path) for path in LEASES[lease]])
    return methods_costs.entries(methods_costs.target_alone(rows, shape), methods_costs.speculative_rows(rows, shape),
                                 shape)


FIGURES = ("per_step_ms", "per_draft_token_ms", "gpu_draft_ms_per_token", "gpu_idle_ms_per_step",
           "gpu_overhead_ms_per_step", "measured_at_k")


def test_the_call3_eagle3_and_dflash_entries_are_their_h200_profiles():
    """DFlash's step waited on the GPU: its entry is the df7 profile as it is. EAGLE-3's (the K lookup engine's)
    was host-bound and lasted a third longer under the profiler: its host line is the least-squares line through
    e3ks' measured steps (as the 26B entries'), c and o its K = 3 profile's."""
    found = lease_entries("h200x4_call3")
    costs = known_host_costs()
    assert not found["dflash"]["profile"]["host_bound"] and found["eagle3"]["profile"]["host_bound"]
    assert (found["dflash"]["shipped"]["rule"], found["eagle3"]["shipped"]["rule"]) == ("profile", "host line fitted")
    for name, method in (("vllm0.26-dflash-31b-speculator", "dflash"), ("vllm0.26-eagle3-31b-speculator", "eagle3")):
        for field in FIGURES:
            assert getattr(costs[name], field) == pytest.approx(found[method]["shipped"][field], abs=0.001), field
        assert (REPO / costs[name].trace).is_file()
    assert (costs["vllm0.26-eagle3-31b-speculator"].per_step_ms,
            costs["vllm0.26-eagle3-31b-speculator"].per_draft_token_ms) == pytest.approx(found["eagle3"]["fitted"])
    assert found["eagle3"]["ks"] == list(range(1, 9)) and found["dflash"]["ks"] == [7]


def test_the_plain_engine_entries_are_their_call5_rows():
    """EAGLE-3's plain-engine step waited on the GPU: its GPU line is the line through the six measured steps of
    K = 3, 5, 7, its host line the e3k3 profile's. DFlash's step is flat in K: all of it is o. The 26B EAGLE-3's was
    host-bound at one K: the profile's host split scaled to the measured step, over section 6's m0 (4.031 ms)."""
    costs = known_host_costs()
    eagle3, dflash = lease_entries("h200x4_call5")["eagle3"], lease_entries("h200x4_call5")["dflash"]
    eagle3_26b = lease_entries("h200x4_call5_26b")["eagle3"]
    assert (eagle3["profiled"], eagle3["ks"], eagle3["shipped"]["rule"]) == ("e3k3", [3, 5, 7], "GPU line fitted")
    assert (dflash["profiled"], dflash["ks"], dflash["shipped"]["rule"]) == (None, [1, 2, 3, 5, 8], "flat")
    assert (eagle3_26b["profiled"], eagle3_26b["target_step_ms"], eagle3_26b["shipped"]["rule"]) == \
        ("e3m3", 4.031, "host line scaled")
    for name, found, fields in (
            ("vllm0.26-eagle3-31b-speculator-plain", eagle3, FIGURES),
            ("vllm0.26-eagle3-26b-speculator", eagle3_26b, FIGURES),
            ("vllm0.26-dflash-31b-speculator-flat", dflash,
             ("per_draft_token_ms", "gpu_draft_ms_per_token", "gpu_overhead_ms_per_step", "measured_at_k"))):
        entry = costs[name]
        assert entry.target_step_ms == found["target_step_ms"], name
        for field in fields:
            assert getattr(entry, field) == pytest.approx(found["shipped"][field], abs=0.001), (name, field)
        assert (REPO / entry.trace).is_file() and "section 9.7" in entry.source
    # no DFlash job of call 5 was profiled: its host line is df7's block (call 3), under its GPU line
    df7 = costs["vllm0.26-dflash-31b-speculator"]
    flat = costs["vllm0.26-dflash-31b-speculator-flat"]
    assert flat.per_step_ms == pytest.approx(df7.per_step_ms + df7.measured_at_k * df7.per_draft_token_ms, abs=0.001)
    assert flat.gpu_idle_ms_per_step == df7.gpu_idle_ms_per_step
    assert flat.per_step_ms < flat.target_step_ms + flat.gpu_overhead_ms_per_step


def test_dflash_s_step_is_flat_in_k_and_eagle3_s_is_not():
    """The flat model holds where the fitted line rises less over the measured K than the rows scatter around
    their mean: DFlash's 0.26 ms over K = 1-8 against 0.57 ms. EAGLE-3's rises 3.9 ms over K = 3-7: turned away.
    df7's per-token split (its one forward / 7) would have put DFlash's K = 1 step 2 ms under the measured one."""
    rows = methods_costs.load_all([str(REPO / path) for path in CALL5])
    spec = methods_costs.speculative_rows(rows)
    dflash, eagle3 = methods_costs.flat_step(spec, "dflash"), methods_costs.flat_step(spec, "eagle3")
    assert dflash["fits"] and dflash["line_rise_ms"] < dflash["max_residual_ms"] < 0.6
    assert not eagle3["fits"] and eagle3["line_rise_ms"] > 3
    df7 = known_host_costs()["vllm0.26-dflash-31b-speculator"]
    k1 = [r["step_ms"] for r in spec if r["tag"] == "df1"]
    split_k1 = methods_costs.target_alone(rows)["step_ms"] + df7.gpu_draft_ms_per_token + df7.gpu_overhead_ms_per_step
    assert min(k1) - split_k1 > 1.9


def dflash_rows() -> list:
    """Every measured one-sequence DFlash row of the H200 lane calls, with its machine's target alone."""
    out = []
    for lease in ("h200x4_call3", "h200x4_call5"):
        rows = methods_costs.load_all([str(REPO / path) for path in LEASES[lease]])
        target = methods_costs.target_alone(rows)
        out += [pytest.param(r, target, id=f"{r['tag']}-{r['alpha']}")
                for r in methods_costs.speculative_rows(rows) if r["method"] == "dflash"]
    return out


@pytest.mark.parametrize("row, target", dflash_rows())
def test_auto_s_dflash_step_predicts_every_measured_dflash_row(row, target):
    """DFlash drafts the block in one forward: auto's step model for it has no per-token cost, and with each row's
    own per-position acceptance on the H200 it predicts the measured speedup over that machine's k0r within 10%,
    at every K measured (1, 2, 3, 5, 7, 8)."""
    model = step_model("dflash", "31b", "h200")
    assert model.cost_ratio == 0 and model.host_per_draft_token == 0 and model.measured
    predicted = predict_speedup(row["per_position_acceptance"], row["k"], model.cost_ratio, model.overhead,
                                model.host)
    assert predicted == pytest.approx(row["decode_tok_s"] / target["decode_tok_s"], rel=0.10)


@pytest.mark.parametrize("alpha", [0.85, 0.70])
def test_auto_s_eagle3_step_predicts_the_plain_engine_rows(alpha):
    """EAGLE-3 is no longer the MTP assistant's step: its plain-engine entry predicts e3k3, e3k5 and e3k7 within 5%."""
    rows = methods_costs.load_all([str(REPO / path) for path in CALL5])
    target = methods_costs.target_alone(rows)
    model = step_model("eagle3", "31b", "h200")
    assert model.measured and "eagle3-31b-speculator-plain" in model.basis
    for row in (r for r in methods_costs.speculative_rows(rows) if r["method"] == "eagle3" and r["alpha"] == alpha):
        predicted = predict_speedup(row["per_position_acceptance"], row["k"], model.cost_ratio, model.overhead,
                                    model.host)
        assert predicted == pytest.approx(row["decode_tok_s"] / target["decode_tok_s"], rel=0.05), row["tag"]
