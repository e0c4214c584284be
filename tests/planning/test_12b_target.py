"""The 12B (``Gemma4UnifiedForConditionalGeneration``) planned from its config.json alone: with its MTP assistant
(``gemma4_unified_assistant``) and with the E2B / E4B as draft models, on the releases that serve them, and refused
on those that do not. vLLM 0.23.0 is the first release whose model registry lists the unified model and whose
SpeculativeConfig maps the unified assistant to gemma4_mtp (the per-release table, read from the release trees).
Its step costs are its own: the plans served beside it over HTTP on an H200 (benchmarks/gpu/raw/real-stack-h200x4-m5,
tests/benchmarks/test_served_rows.py)."""

import pytest
from packaging.version import Version

from specdraft.planning import LaunchRequest, build_launch_plan
from specdraft.planning.knowledge.release_support import first_release
from specdraft.speed import step_model
from tests.planning.conftest import shipped_config, write_checkpoint

TWELVE, ASSISTANT = "google/gemma-4-12B-it", "google/gemma-4-12B-it-assistant"
FIRST = "0.23.0"


@pytest.fixture
def directories(tmp_path, empty_hub):
    """Config-only checkpoint directories of the published shapes (no weights on disk)."""
    return lambda repo_id: str(write_checkpoint(tmp_path / repo_id.replace("/", "__"), shipped_config(repo_id)))


def _plan(directories, release, version: str, draft: str | None, **request):
    return build_launch_plan(LaunchRequest(target=directories(TWELVE), draft=directories(draft) if draft else None,
                                           profile="h200", vllm_root=release(version), **request))


def _k_reason(plan) -> str:
    (flag,) = [flag for flag in plan.serve.flags if flag.name == "--speculative-config"]
    return flag.reason


def _release_finding(plan):
    (finding,) = [f for f in plan.findings if f.check == "release-support"]
    return finding


def test_the_table_says_0_23_0_brings_the_unified_model_and_its_assistant():
    assert first_release(lambda r: "Gemma4UnifiedForConditionalGeneration" in r.gemma4_architectures) == FIRST
    assert first_release(lambda r: "gemma4_unified_assistant" in r.gemma4_assistant_model_types) == FIRST


@pytest.mark.parametrize("version", ["0.21.0", "0.22.1", "0.23.0", "0.33.0"])
def test_the_12b_with_its_mtp_assistant_is_refused_before_0_23_0(directories, release, version):
    plan = _plan(directories, release, version, ASSISTANT)
    finding = _release_finding(plan)
    assert plan.speculative.method == "mtp"
    if Version(version) < Version(FIRST):
        assert finding.level == "error" and plan.has_errors
        assert f"vLLM {version} cannot drive a gemma4_unified_assistant draft with method mtp" in finding.message
        assert finding.hint.startswith(f"pip install 'vllm>={FIRST}'")
    else:
        assert finding.level == "ok" and not plan.has_errors


@pytest.mark.parametrize("draft", ["google/gemma-4-E2B-it", "google/gemma-4-E4B-it"])
@pytest.mark.parametrize("version", ["0.22.1", "0.23.0"])
def test_the_12b_with_an_e_series_draft_model_is_refused_where_the_unified_model_is_missing(
        directories, release, draft, version):
    """Another model_type (gemma4 beside gemma4_unified), one tokenizer: vLLM's draft_model asks only for equal
    vocab sizes, and specdraft for the special-token ids both agree on."""
    plan = _plan(directories, release, version, draft)
    finding = _release_finding(plan)
    (method,) = [f for f in plan.findings if f.check == "speculative-method"]
    assert method.message.startswith("method draft_model")
    checks = {f.check: f.level for f in plan.findings}
    assert (checks["vocab-size"], checks["special-tokens"], checks["draft-family"]) == ("ok", "ok", "ok")
    if version == "0.22.1":
        assert finding.level == "error"
        assert finding.message.startswith("vLLM 0.22.1 has no Gemma4UnifiedForConditionalGeneration model")
        assert finding.hint == f"pip install 'vllm>={FIRST}'"
    else:
        assert finding.level == "ok" and not plan.has_errors


def test_the_12b_alone_is_refused_where_the_release_lacks_its_model(directories, release):
    old = _release_finding(_plan(directories, release, "0.22.1", None, method="none"))
    assert old.level == "error" and old.hint == f"pip install 'vllm>={FIRST}'"
    assert not [f for f in _plan(directories, release, FIRST, None, method="none").findings
                if f.check == "release-support"]


def test_the_memory_plan_counts_the_12b_and_its_assistant_from_their_shapes(directories, release):
    plan = _plan(directories, release, "0.26.0", ASSISTANT)
    assert (plan.memory.target_weight_bytes, plan.memory.draft_weight_bytes) == (11_907_350_272 * 2, 422_856_960 * 2)
    assert "Gemma 4 formula" in plan.target.weight_bytes_basis
    assert not [f for f in plan.findings if "weight size unknown" in f.message]


@pytest.mark.parametrize("draft", [ASSISTANT, "google/gemma-4-E2B-it"])
def test_k_beside_the_12b_no_longer_borrows_the_31b_s_costs(directories, release, draft):
    """The 12B was served with its assistant and with an E2B draft (m5): its own step costs price it, and its K keeps
    the default of its kind (one K was served with each drafter, the default: nothing to pick another from)."""
    plan = _plan(directories, release, "0.26.0", draft)
    assert "not measured" not in _k_reason(plan)
    entry = "vllm0.26-mtp-12b-assistant-served" if draft == ASSISTANT else "vllm0.26-draft_model-e2b-async-12b-served"
    assert f"step costs measured: host-cost entry {entry} beside the 12B" in _k_reason(plan)
    assert plan.speculative.num_speculative_tokens == (8 if draft == ASSISTANT else 3)


def test_k_beside_the_31b_claims_its_measurement(tmp_path, empty_hub, release):
    target = str(write_checkpoint(tmp_path / "31b", shipped_config("google/gemma-4-31B-it")))
    draft = str(write_checkpoint(tmp_path / "31b-assistant", shipped_config("google/gemma-4-31B-it-assistant")))
    plan = build_launch_plan(LaunchRequest(target=target, draft=draft, profile="h200", vllm_root=release("0.26.0")))
    assert "not measured" not in _k_reason(plan) and "measured" in _k_reason(plan)


@pytest.mark.parametrize("draft, method, entry", [(ASSISTANT, "mtp", "vllm0.26-mtp-12b-assistant-served"),
                                                  ("google/gemma-4-E2B-it", "draft_model",
                                                   "vllm0.26-draft_model-e2b-async-12b-served")])
def test_method_auto_beside_the_12b_prices_its_drafter_with_the_costs_served_beside_it(directories, release, draft,
                                                                                      method, entry):
    plan = _plan(directories, release, "0.26.0", draft, method="auto")
    row = next(row for row in plan.method_ranking.ranked if row.method == method)
    assert row.measured_costs and row.cost_basis.startswith(f"measured: host-cost entry {entry} beside the 12B (")
    assert "served over HTTP at K = " in row.cost_basis
    assert not any("are used, not measured" in note for note in plan.method_ranking.notes)


def test_a_method_served_beside_the_31b_only_takes_its_costs_beside_the_12b_and_says_so():
    """No EAGLE-3 drafter was served beside the 12B: the 31B's entry stands in, marked not measured, as it did for
    every method before the 12B was served."""
    eagle3 = step_model("eagle3", "12b", "h200")
    assert not eagle3.measured and eagle3.basis.startswith("not measured beside the 12B: the 31B's stand in (")
    assert (eagle3.cost_ratio, eagle3.overhead) == (step_model("eagle3", "31b", "h200").cost_ratio,
                                                    step_model("eagle3", "31b", "h200").overhead)
    assert {m for m in ("draft_model", "mtp", "eagle3", "dflash", "ngram_gpu") if step_model(m, "12b").measured} \
        == {"draft_model", "mtp"}
