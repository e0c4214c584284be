"""DSpark drafters (speculators-format and Gemma 4's own), ``.dflash2`` speculators, and the lossy ``fly``
rejection sampling, planned against real release trees."""

import json
from pathlib import Path

import pytest

from specdraft.checkpoints import inspect_checkpoint, published_drafters
from specdraft.checkpoints._speculator_params import speculator_parameters
from specdraft.planning.knowledge.method_costs import default_acceptance
from specdraft.speed import step_model
from specdraft.planning.facts.method_ranking import rank_methods
from specdraft.planning.knowledge.methods import check_drafter_class, check_lossy_rejection, given_rejection_method
from specdraft.planning.knowledge.release_support import release_support
from specdraft.planning.knowledge.speculators import read_speculator, speculator_from_name
from tests.planning.conftest import write_checkpoint

TARGET_31B = "google/gemma-4-31B-it"
DSPARK_31B = "RedHatAI/gemma-4-31B-it-speculator.dspark"
REPO = Path(__file__).resolve().parents[2]
DSPARK_CONFIG = json.loads((REPO / "benchmarks/gpu/configs/dspark_31b/config.json").read_text())
# A Gemma 4 DSpark drafter in its own format, the shape vllm/model_executor/models/gemma4_dspark.py builds
# (Gemma4DSparkModel: zero-based target_layer_ids, block_size, markov_rank, Gemma 4 attention fields).
GEMMA4_DSPARK_CONFIG = {
    "architectures": ["Gemma4DSparkModel"], "model_type": "gemma4_text", "hidden_size": 5376, "vocab_size": 262144,
    "num_hidden_layers": 2, "num_attention_heads": 32, "num_key_value_heads": 16, "head_dim": 256,
    "intermediate_size": 21504, "layer_types": ["sliding_attention", "full_attention"], "sliding_window": 1024,
    "block_size": 7, "mask_token_id": 4, "target_layer_ids": [0, 14, 29, 44, 58], "markov_rank": 256,
}


@pytest.fixture(scope="module")
def tree():
    from tools.release_trees import release_tree

    return lambda version: release_tree(version, progress=lambda line: None)


def _plan(tree, version, **fields):
    from specdraft.planning import LaunchRequest, build_launch_plan

    return build_launch_plan(LaunchRequest(profile="h200", vllm_root=tree(version), **fields))


def _errors(plan):
    return {f.check: f.message for f in plan.findings if f.level == "error"}


def _local(tmp_path, config, name=DSPARK_31B):
    return str(write_checkpoint(tmp_path / name.replace("/", "__"), config))


# the misplan: a speculators-format DSpark drafter planned as a 30.7B draft_model (by its name) or a crash (local)


def test_a_local_speculators_dspark_config_plans_dspark_with_its_own_k(tree, tmp_path):
    draft = _local(tmp_path, DSPARK_CONFIG)
    plan = _plan(tree, "0.33.0", target=TARGET_31B, draft=draft)
    assert plan.speculative.as_dict() == {"method": "dspark", "model": draft, "num_speculative_tokens": 7,
                                          "draft_tensor_parallel_size": 1}
    assert not _errors(plan), _errors(plan)
    assert "draft-size" not in {f.check for f in plan.findings}
    assert plan.memory.draft_weight_bytes < 8 * 2**30   # the drafter, not a second 31B


def test_the_published_dspark_drafter_named_offline_plans_dspark_not_draft_model(tree):
    plan = _plan(tree, "0.33.0", target=TARGET_31B, draft=DSPARK_31B)
    assert plan.speculative.method == "dspark" and plan.speculative.num_speculative_tokens == 7
    assert not _errors(plan), _errors(plan)
    checks = {f.check: f.message for f in plan.findings}
    assert "was trained beside google/gemma-4-31B-it" in checks["speculator-verifier"]
    assert "loads dspark speculators" in checks["speculators-type"]


def test_the_reconstructed_dspark_config_has_the_hub_s_size():
    """Each field's source is in benchmarks/gpu/configs/README.md; the hub lists the checkpoint at 8.39 GB."""
    draft = inspect_checkpoint(DSPARK_31B)
    assert draft.source == "shape-facts" and draft.config == DSPARK_CONFIG
    assert round(speculator_parameters(DSPARK_CONFIG) * 2 / 1e9, 2) == 8.39
    found = read_speculator(DSPARK_CONFIG)
    assert (found.method, found.verifier, found.speculative_tokens, found.aux_layer_ids) == \
        ("dspark", TARGET_31B, 7, (1, 17, 29, 47, 58))


def test_the_31b_dspark_beside_the_26b_is_refused(tree, tmp_path):
    plan = _plan(tree, "0.33.0", target="google/gemma-4-26B-A4B-it", draft=_local(tmp_path, DSPARK_CONFIG))
    assert "google/gemma-4-31B-it" in _errors(plan)["speculator-verifier"]


# what each release serves


def test_a_release_without_dspark_refuses_the_speculators_drafter(tree):
    plan = _plan(tree, "0.24.0", target=TARGET_31B, draft=DSPARK_31B)
    assert "has no speculative method 'dspark'" in _errors(plan)["release-support"]
    assert "pip install 'vllm>=0.25.0'" in next(f.hint for f in plan.findings if f.check == "speculators-type")


def test_gemma4_s_own_dspark_drafter_needs_the_release_s_gemma4dsparkmodel(tree, tmp_path):
    draft = _local(tmp_path, GEMMA4_DSPARK_CONFIG, "local/gemma4-dspark")
    refused = _plan(tree, "0.25.1", target=TARGET_31B, draft=draft, method="dspark")
    assert list(_errors(refused)) == ["drafter-class"]
    assert "vLLM 0.25.1 has no Gemma4DSparkModel" in _errors(refused)["drafter-class"]
    assert next(f.hint for f in refused.findings if f.check == "drafter-class") == "pip install 'vllm>=0.26.0'"
    served = _plan(tree, "0.26.0", target=TARGET_31B, draft=draft, method="dspark")
    assert not _errors(served), _errors(served)
    assert served.speculative.num_speculative_tokens == 7   # its block_size, vLLM's K for DSpark


def test_the_drafter_class_rule_reads_the_release_table():
    assert "Gemma4DSparkModel" not in release_support("0.25.1").gemma4_architectures
    assert check_drafter_class("dspark", "Gemma4DSparkModel", release_support("0.25.1"), "0.25.1").level == "error"
    assert check_drafter_class("dspark", "Gemma4DSparkModel", release_support("0.26.0"), "0.26.0").level == "ok"
    assert check_drafter_class("dspark", None, release_support("0.25.1"), "0.25.1") is None


def test_a_dflash2_speculator_is_dflash_loaded_from_0_29_0(tree, tmp_path):
    named = speculator_from_name("RedHatAI/gemma-4-31B-it-speculator.dflash2")
    assert (named.speculators_type, named.method, named.verifier) == ("dflash2", "dflash", TARGET_31B)
    assert speculator_from_name(DSPARK_31B).method == "dspark"
    config = {**json.loads((REPO / "benchmarks/gpu/configs/dflash_31b/config.json").read_text()),
              "speculators_model_type": "dflash2"}
    draft = _local(tmp_path, config, "local/dflash2")
    refused = _plan(tree, "0.28.0", target=TARGET_31B, draft=draft)
    assert refused.speculative.method == "dflash"
    assert "does not load 'dflash2' speculators" in _errors(refused)["speculators-type"]
    assert not _errors(_plan(tree, "0.29.0", target=TARGET_31B, draft=draft))


# --method auto


def test_auto_ranks_dspark_with_a_modelled_step_marked_not_measured(tmp_path):
    draft = inspect_checkpoint(_local(tmp_path, DSPARK_CONFIG))
    ranking = rank_methods(inspect_checkpoint(TARGET_31B), [draft], version="0.33.0", profile="h200")
    (row,) = [row for row in ranking.ranked if row.method == "dspark"]
    assert row.measured_costs is False and 0 < row.k <= 7   # its trained block: 8 less the anchor
    assert row.cost_basis.startswith("not measured: modelled as DFlash's step beside the 31B")
    assert row.acceptance_basis == default_acceptance("dspark").basis and "assumed" in row.acceptance_basis
    assert "(costs not measured)" in "\n".join(ranking.lines())
    model, dflash = step_model("dspark", "31b", "h200"), step_model("dflash", "31b", "h200")
    assert (model.cost_ratio, model.overhead, model.measured) == (dflash.cost_ratio, dflash.overhead, False)


def test_auto_turns_dspark_away_on_a_release_without_it(tmp_path):
    draft = inspect_checkpoint(_local(tmp_path, DSPARK_CONFIG))
    ranking = rank_methods(inspect_checkpoint(TARGET_31B), [draft], version="0.24.0", profile="h200")
    (away,) = [t for t in ranking.turned_away if t.method == "dspark"]
    assert "vLLM 0.24.0 has no method dspark" in away.reason
    native = inspect_checkpoint(_local(tmp_path, GEMMA4_DSPARK_CONFIG, "local/gemma4-dspark"))
    ranking = rank_methods(inspect_checkpoint(TARGET_31B), [native], version="0.25.1", profile="h200")
    assert "has no Gemma4DSparkModel" in next(t.reason for t in ranking.turned_away if t.method == "dspark")


def test_the_31b_s_published_drafters_include_its_dspark_speculator():
    target = inspect_checkpoint(TARGET_31B)
    assert DSPARK_31B in published_drafters(target)
    published = [inspect_checkpoint(repo) for repo in published_drafters(target)]
    ranking = rank_methods(target, [], version="0.33.0", profile="h100", published=published)
    assert DSPARK_31B in {row.draft for row in ranking.to_download}


# rejection_sample_method: fly


@pytest.mark.parametrize("extra_args", [
    ["--speculative-config", '{"method": "mtp", "rejection_sample_method": "fly"}'],
    ['--speculative-config={"rejection_sample_method": "fly"}'],
    ["--speculative_config", '{"rejection_sample_method": "fly"}'],
    ["--speculative-config.rejection_sample_method", "fly"],
    ["--speculative-config.rejection_sample_method=fly"],
    ['--speculative_config.rejection_sample_method="fly"'],
    ["--speculative-config", '{"rejection_sample_method": "standard"}', "--speculative-config.rejection_sample_method",
     "fly"],
])
def test_every_spelling_of_fly_after_the_double_dash_is_read(extra_args):
    assert given_rejection_method(extra_args) == "fly"


@pytest.mark.parametrize("extra_args", [[], ["--speculative-config", "not json"], ["--max-num-seqs", "fly"],
                                        ["--speculative-config.method", "fly"], ["--speculative-config"],
                                        ["--speculative-config", '{"rejection_sample_method": "standard"}']])
def test_no_fly_is_read_where_none_is_given(extra_args):
    assert given_rejection_method(extra_args) != "fly"
    assert check_lossy_rejection(extra_args, "0.33.0", release_support("0.33.0")) is None


def test_fly_is_a_warning_naming_the_vllm_line_that_calls_it_lossy(tree):
    finding = check_lossy_rejection(["--speculative-config.rejection_sample_method=fly"], "0.33.0",
                                    release_support("0.33.0"))
    assert finding.level == "warning" and "outputs differ from the target's" in finding.message
    assert "vllm/config/speculative.py:2032" in finding.message
    line = (tree("0.33.0") / "vllm/config/speculative.py").read_text().splitlines()[2031]
    assert "FLy verification is a lossy speculative decoding method and" in line


def test_a_plan_given_fly_after_the_double_dash_warns_and_a_release_without_it_refuses(tree):
    extra = ["--speculative-config", json.dumps({"method": "mtp", "model": "google/gemma-4-31B-it-assistant",
                                                 "num_speculative_tokens": 4, "rejection_sample_method": "fly"})]
    plan = _plan(tree, "0.33.0", target=TARGET_31B, draft="google/gemma-4-31B-it-assistant", extra_args=extra)
    (finding,) = [f for f in plan.findings if f.check == "rejection-sample-method"]
    assert finding.level == "warning" and "lossy" in finding.message
    refused = _plan(tree, "0.32.0", target=TARGET_31B, draft="google/gemma-4-31B-it-assistant", extra_args=extra)
    assert "not a choice of vLLM 0.32.0 (standard, synthetic, block)" in _errors(refused)["rejection-sample-method"]
    alone = _plan(tree, "0.33.0", target=TARGET_31B, method="none", extra_args=extra)
    assert "rejection-sample-method" in {f.check for f in alone.findings}
