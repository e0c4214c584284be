"""Methods beyond draft_model and mtp: speculators checkpoints, their verifier, and what each release serves."""

from pathlib import Path

import pytest

from specdraft.speed import predict_speedup
from specdraft.checkpoints import inspect_checkpoint
from specdraft.planning.knowledge.method_costs import acceptance_for, default_acceptance
from specdraft.speed import step_from_entry, step_model
from specdraft.planning.facts.method_ranking import rank_methods
from specdraft.planning.facts.vllm_install import method_packages_beside
from specdraft.planning.knowledge.methods import check_async_for_method, check_method_options, check_method_package
from specdraft.planning.knowledge.release_support import release_support
from specdraft.planning.knowledge.speculators import check_verifier, read_speculator
from tests.planning.conftest import write_checkpoint

TARGET_31B, TARGET_26B = "google/gemma-4-31B-it", "google/gemma-4-26B-A4B-it"
REPO = Path(__file__).resolve().parents[2]


def speculator_config(kind="eagle3", verifier=TARGET_31B, hidden_size=5376, aux=(2, 29, 56)) -> dict:
    """A speculators-format config.json (https://github.com/vllm-project/speculators)."""
    return {"architectures": ["Eagle3Speculator"], "speculators_model_type": kind,
            "speculators_config": {"algorithm": kind, "default_proposal_method": "greedy",
                                   "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 3}],
                                   "verifier": {"name_or_path": verifier,
                                                "architectures": ["Gemma4ForConditionalGeneration"]}},
            "eagle_aux_hidden_state_layer_ids": list(aux), "draft_vocab_size": 32000,
            "transformer_layer_config": {"model_type": "llama", "hidden_size": hidden_size, "num_hidden_layers": 1,
                                         "vocab_size": 262144}}


@pytest.fixture
def speculator(tmp_path):
    def make(name="RedHatAI/gemma-4-31B-it-speculator.eagle3", **kwargs):
        directory = write_checkpoint(tmp_path / name.replace("/", "__"), speculator_config(**kwargs))
        return inspect_checkpoint(str(directory))
    return make


def test_a_speculators_config_names_its_method_verifier_and_k():
    found = read_speculator(speculator_config("peagle"))
    assert (found.speculators_type, found.method, found.verifier, found.speculative_tokens) == \
        ("peagle", "eagle3", TARGET_31B, 3)
    assert read_speculator({"model_type": "gemma4"}) is None


def test_a_31b_speculator_beside_the_26b_is_an_error():
    finding = check_verifier(TARGET_26B, inspect_checkpoint(TARGET_26B).config,
                             "RedHatAI/gemma-4-31B-it-speculator.eagle3", read_speculator(speculator_config()))
    assert finding.level == "error"
    assert "google/gemma-4-31B-it" in finding.message and "5376 wide" in finding.message
    assert "layers 56" in finding.message  # the 26B has 30 layers


def test_a_speculator_whose_shape_is_another_models_is_an_error_even_with_the_right_name():
    wrong = read_speculator(speculator_config(hidden_size=2816))
    finding = check_verifier(TARGET_31B, inspect_checkpoint(TARGET_31B).config, "local-speculator", wrong)
    assert finding.level == "error" and "2816 wide" in finding.message


def test_the_31b_speculator_fits_the_31b():
    finding = check_verifier(TARGET_31B, inspect_checkpoint(TARGET_31B).config, "s", read_speculator(speculator_config()))
    assert finding.level == "ok"


def test_options_of_another_method_are_refused():
    support = release_support("0.33.0")
    refused = check_method_options("ngram", {"suffix_decoding_max_tree_depth": 8}, support, "0.33.0")
    assert refused.level == "error" and "prompt_lookup_min" in refused.message
    assert check_method_options("ngram", {"prompt_lookup_min": 2, "prompt_lookup_max": 5}, support, "0.33.0").level == "ok"


def test_suffix_needs_arctic_inference_beside_vllm(tmp_path):
    vllm = tmp_path / "vllm"
    vllm.mkdir()
    assert check_method_package("suffix", method_packages_beside(vllm), vllm).level == "error"
    (tmp_path / "arctic_inference").mkdir()
    assert check_method_package("suffix", method_packages_beside(vllm), vllm).level == "ok"
    assert check_method_package("ngram", method_packages_beside(vllm), vllm) is None
    assert check_method_package("suffix", None, None).level == "warning"


def test_explicit_async_scheduling_is_refused_for_ngram_and_suffix_only():
    assert check_async_for_method("ngram", ["--async-scheduling"]).level == "error"
    assert check_async_for_method("suffix", ["--async-scheduling"]).level == "error"
    assert check_async_for_method("ngram_gpu", ["--async-scheduling"]) is None


def test_auto_ranks_the_measured_mtp_assistant_first_beside_the_31b(speculator):
    target = inspect_checkpoint(TARGET_31B)
    drafts = [inspect_checkpoint("google/gemma-4-31B-it-assistant"), inspect_checkpoint("google/gemma-4-E2B-it"),
              speculator()]
    ranking = rank_methods(target, drafts, version="0.33.0", profile="h100")
    assert [row.method for row in ranking.ranked][:1] == ["mtp"]
    assert {row.method for row in ranking.ranked} == {"mtp", "draft_model", "eagle3", "ngram", "ngram_gpu", "suffix"}
    eagle3 = next(row for row in ranking.ranked if row.method == "eagle3")
    assert eagle3.measured_costs and "vllm0.26-eagle3-31b-speculator-plain" in eagle3.cost_basis
    assert "not measured" in "\n".join(ranking.lines())   # ngram and suffix stay modelled
    assert ranking.chosen.k == 8 and ranking.turned_away == [] and ranking.notes == []


def test_auto_turns_away_a_speculator_trained_beside_another_model(speculator):
    ranking = rank_methods(inspect_checkpoint(TARGET_26B), [speculator()], version="0.33.0", profile="h100")
    assert [(t.method, "verifier" in t.reason or "trained beside" in t.reason) for t in ranking.turned_away] == \
        [("eagle3", True)]
    assert ranking.notes == ["the target step beside the 26B-A4B was not measured on h100: host times are taken over "
                             "the target step each cost was measured beside, on another GPU"]


def test_auto_turns_away_what_the_release_lacks(speculator):
    drafts = [speculator(), speculator("z-lab/gemma-4-31B-it-dflash", kind="dflash"),
              inspect_checkpoint("google/gemma-4-31B-it-assistant")]
    ranking = rank_methods(inspect_checkpoint(TARGET_31B), drafts, version="0.19.0", profile="h100")
    reasons = {t.method: t.reason for t in ranking.turned_away}
    assert "SupportsEagle3" in reasons["eagle3"]            # Gemma 4 feeds EAGLE-3 drafters from 0.19.1
    assert "has no method dflash" in reasons["dflash"]      # dflash arrives in 0.20.0
    assert "cannot drive" in reasons["mtp"]                 # Gemma 4 assistants arrive in 0.21.0
    assert {row.method for row in ranking.ranked} == {"ngram", "ngram_gpu", "suffix"}


def test_auto_turns_away_suffix_without_arctic_inference(tmp_path):
    (tmp_path / "vllm").mkdir()
    ranking = rank_methods(inspect_checkpoint(TARGET_31B), [], version="0.33.0", profile="h100",
                           vllm_root=tmp_path / "vllm")
    assert [t.method for t in ranking.turned_away] == ["suffix"]


def test_thinking_lowers_the_prediction_and_a_measured_acceptance_replaces_the_default():
    target, drafts = inspect_checkpoint(TARGET_31B), [inspect_checkpoint("google/gemma-4-31B-it-assistant")]
    plain = rank_methods(target, drafts, version="0.33.0", profile="h100").ranked[0]
    thinking = rank_methods(target, drafts, version="0.33.0", profile="h100", thinking=True).ranked[0]
    assert thinking.predicted_speedup < plain.predicted_speedup and "thinking on" in thinking.acceptance_basis
    poor = rank_methods(target, drafts, version="0.33.0", profile="h100",
                        measured={"mtp": (0.2, 0.04)}).ranked
    assert poor[0].method == "ngram_gpu"
    assert next(r for r in poor if r.method == "mtp").acceptance_basis.startswith("measured")


def test_the_mtp_dflash_and_eagle3_defaults_reproduce_the_published_figures():
    for method, k, published in (("mtp", 8, 3.11), ("dflash", 15, 3.03)):
        model = step_model(method)
        rates, _ = acceptance_for(method, thinking=False, positions=k)
        assert predict_speedup(rates, k, model.cost_ratio, model.overhead, model.host) == pytest.approx(published,
                                                                                                       abs=0.02)
        assert "jarvislabs.ai" in default_acceptance(method).basis
    eagle3, _ = acceptance_for("eagle3", thinking=False, positions=5)
    assert 1 + sum(eagle3) == pytest.approx(2.83, abs=0.01)   # RedHat's MT-bench acceptance length at K = 5


METHODS = ("draft_model", "mtp", "ngram_gpu", "ngram", "suffix", "eagle3", "dflash")


def test_costs_say_which_were_measured_beside_which_target():
    assert {m for m in METHODS if step_model(m, "31b").measured} == {"draft_model", "mtp", "ngram_gpu", "dflash",
                                                                     "eagle3"}
    assert {m for m in METHODS if step_model(m, "26b").measured} == {"draft_model", "mtp", "eagle3"}
    assert "vllm0.26-mtp-26b-assistant-served" in step_model("mtp", "26b").basis
    assert "assumed shape" in step_model("eagle3", "26b").basis   # configs/eagle3_26b: no published config
    assert "beside the 26B-A4B" in step_model("dflash", "26b").basis   # no 26B DFlash drafter is published


def test_dflash_s_measured_step_is_the_same_at_every_k_and_eagle3_s_grows():
    """DFlash's entry is flat in K (c = 0: one forward drafts the block, measured at K = 1-8); EAGLE-3's plain
    engine adds about 1 ms of GPU a drafted token, no longer the MTP assistant's 0.5 ms."""
    dflash, eagle3, mtp = (step_model(m, "31b", "h200") for m in ("dflash", "eagle3", "mtp"))
    assert dflash.cost_ratio == 0 and dflash.host_per_draft_token == 0 and "flat in K" in dflash.basis
    assert eagle3.cost_ratio > 1.5 * mtp.cost_ratio and "MTP assistant" not in eagle3.basis


@pytest.mark.parametrize("alpha, order", [(0.85, ["mtp", "eagle3"]), (0.70, ["mtp"])])
def test_beside_the_26b_auto_ranks_eagle3_by_its_own_measured_step(alpha, order):
    """The 26B EAGLE-3 step (e3m3, a drafter of assumed shape) is host-bound beside a 4 ms target: second to the MTP
    assistant at 0.85, not worth drafting at 0.70 (measured 1.33x and 0.72x at K = 3, docs/gpu/README.md 9.7)."""
    target = inspect_checkpoint(TARGET_26B)
    drafts = [inspect_checkpoint("google/gemma-4-26B-A4B-it-assistant"),
              inspect_checkpoint(str(REPO / "benchmarks/gpu/configs/eagle3_26b"))]
    ranking = rank_methods(target, drafts, version="0.26.0", profile="h200",
                           measured={m: tuple(alpha ** i for i in range(1, 9)) for m in ("mtp", "eagle3")})
    assert [row.method for row in ranking.ranked if row.k > 0] == order
    assert next(row for row in ranking.ranked if row.method == "eagle3").measured_costs


def test_beside_the_26b_auto_uses_the_26b_costs_and_drafts_nothing_with_the_e2b():
    """The E2B draft lost at every K beside the 26B-A4B (docs/gpu/README.md 6); the 31B's in-process entry, which a
    26B target used to get, would have drafted with it."""
    target = inspect_checkpoint(TARGET_26B)
    drafts = [inspect_checkpoint("google/gemma-4-26B-A4B-it-assistant"), inspect_checkpoint("google/gemma-4-E2B-it")]
    ranking = rank_methods(target, drafts, version="0.33.0", profile="h200")
    rows = {row.method: row for row in ranking.ranked}
    assert ranking.chosen.method == "mtp" and 1 < rows["mtp"].predicted_speedup < 2 and rows["draft_model"].k == 0
    assert ranking.notes == []
    thirty_one = step_from_entry("vllm0.26-draft_model-e2b-async", "h200", "31b", True)
    rates, _ = acceptance_for("draft_model", thinking=False, positions=3)
    assert predict_speedup(rates, 3, thirty_one.cost_ratio, thirty_one.overhead, thirty_one.host) > 1.2


def test_a_published_speculator_not_on_this_machine_is_judged_by_its_name():
    target = inspect_checkpoint(TARGET_26B)
    ranking = rank_methods(target, [inspect_checkpoint("RedHatAI/gemma-4-31B-it-speculator.dflash"),
                                    inspect_checkpoint("RedHatAI/gemma-4-26B-A4B-it-speculator.eagle3")],
                           version="0.33.0", profile="h100")
    assert [(t.method, t.draft) for t in ranking.turned_away] == \
        [("dflash", "RedHatAI/gemma-4-31B-it-speculator.dflash")]
    assert "google/gemma-4-31B-it" in ranking.turned_away[0].reason
    assert "eagle3" in {row.method for row in ranking.ranked}


# whole plans against real release trees


@pytest.fixture(scope="module")
def tree():
    from tools.release_trees import release_tree

    return lambda version: release_tree(version, progress=lambda line: None)


def _plan(tree, version, **fields):
    from specdraft.planning import LaunchRequest, build_launch_plan

    return build_launch_plan(LaunchRequest(profile="h100", vllm_root=tree(version), **fields))


def _errors(plan):
    return {f.check: f.message for f in plan.findings if f.level == "error"}


def test_a_local_eagle3_speculator_beside_its_verifier_plans_eagle3_with_its_own_k(tree, speculator):
    draft = speculator()
    plan = _plan(tree, "0.33.0", target=TARGET_31B, draft=str(draft.path))
    assert plan.speculative.as_dict() == {"method": "eagle3", "model": str(draft.path), "num_speculative_tokens": 3,
                                          "draft_tensor_parallel_size": 1}
    assert "speculator-verifier" not in _errors(plan) and "target-family" not in _errors(plan)
    assert "draft-family" not in {f.check for f in plan.findings}


def test_the_31b_speculator_beside_the_26b_blocks_the_plan(tree, speculator):
    plan = _plan(tree, "0.33.0", target=TARGET_26B, draft=str(speculator().path))
    assert "google/gemma-4-31B-it" in _errors(plan)["speculator-verifier"] and plan.has_errors


def test_eagle3_on_0_19_0_and_dflash_on_0_19_1_are_refused(tree, speculator):
    eagle3 = _plan(tree, "0.19.0", target=TARGET_31B, draft=str(speculator().path))
    assert "SupportsEagle3" in _errors(eagle3)["method-target"]
    dflash = _plan(tree, "0.19.1", target=TARGET_31B,
                   draft=str(speculator("z-lab/gemma-4-31B-it-dflash", kind="dflash").path))
    assert "has no speculative method 'dflash'" in _errors(dflash)["release-support"]
    assert "'dflash' speculators" in _errors(dflash)["speculators-type"]


def test_ngram_gpu_passes_its_prompt_lookup_options_and_refuses_suffix_ones(tree):
    plan = _plan(tree, "0.33.0", target=TARGET_31B, method="ngram_gpu", prompt_lookup_min=2, prompt_lookup_max=4)
    assert plan.speculative.as_dict() == {"method": "ngram_gpu", "num_speculative_tokens": 3,
                                          "prompt_lookup_min": 2, "prompt_lookup_max": 4}
    assert not plan.has_errors and plan.draft is None
    wrong = _plan(tree, "0.33.0", target=TARGET_31B, method="ngram", suffix_decoding_max_tree_depth=8)
    assert "suffix_decoding_max_tree_depth" in _errors(wrong)["method-options"]


def test_suffix_without_arctic_inference_and_ngram_with_explicit_async_are_refused(tree):
    assert "arctic_inference" in _errors(_plan(tree, "0.33.0", target=TARGET_31B, method="suffix"))["method-package"]
    refused = _plan(tree, "0.26.0", target=TARGET_31B, method="ngram", extra_args=["--async-scheduling"])
    assert "--async-scheduling" in _errors(refused)["async-scheduling"]


def test_auto_with_an_assistant_chooses_mtp_at_the_rankings_k(tree):
    plan = _plan(tree, "0.33.0", target=TARGET_31B, draft="google/gemma-4-31B-it-assistant", method="auto")
    assert plan.speculative.method == "mtp" and plan.speculative.num_speculative_tokens == 8
    assert [row.method for row in plan.method_ranking.ranked][0] == "mtp"
    assert plan.to_json_dict()["method_ranking"]["ranked"][0]["measured_costs"] is True


def test_auto_with_a_bench_acceptance_ranks_by_it(tree, tmp_path):
    """A saved bench result of an MTP server that accepted little: its acceptance, not the default, ranks mtp."""
    from specdraft.bench import SpecDecodeCounters
    from tests.speed.test_calibration import result

    path = tmp_path / "mtp.json"
    result("mtp", {1: 30.0}, {1: SpecDecodeCounters(100, 800, 30, (20, 6, 2, 1, 1, 0, 0, 0))}).save(path)
    plan = _plan(tree, "0.33.0", target=TARGET_31B, draft="google/gemma-4-31B-it-assistant", method="auto",
                 acceptance_from=f"mtp={path}")
    mtp = next(row for row in plan.method_ranking.ranked if row.method == "mtp")
    assert mtp.acceptance_basis.startswith("measured") and mtp.predicted_speedup < 1.3
    assert plan.speculative.method == "ngram_gpu" and plan.speculative.model is None


def _documented_commands() -> list[list[str]]:
    import shlex

    from tests.documented import commands, read

    return [shlex.split(line, comments=True) for line in commands(read("docs/methods.md"))]


@pytest.mark.parametrize("argv", _documented_commands(), ids=lambda argv: " ".join(argv[4:8]))
def test_the_documented_method_commands_run(argv, capsys):
    from specdraft.cli import main

    status = main(argv[3:])
    out = capsys.readouterr().out
    assert status == 0
    if "RedHatAI/gemma-4-31B-it-speculator.eagle3" in argv:   # the 31B's speculator beside the 26B
        assert "turned away: eagle3 with RedHatAI/gemma-4-31B-it-speculator.eagle3" in out
    elif "none" in argv:
        assert "alone, without speculation" in out and "--speculative-config '" not in out
    else:
        assert ("Methods (--method auto" in out or "method_ranking" in out
                                or "prompt_lookup_max" in out)


@pytest.mark.parametrize("broken", [
    {"speculators_config": 5}, {"speculators_config": {"proposal_methods": 7, "verifier": "x"}},
    {"speculators_config": {"proposal_methods": [3]}}, {"eagle_aux_hidden_state_layer_ids": ["a", None, 2]},
    {"transformer_layer_config": [1], "target_hidden_size": "wide"},
])
def test_a_malformed_speculators_config_reads_as_unknown_fields_not_a_crash(broken):
    found = read_speculator({"speculators_model_type": "eagle3", **broken})
    assert found.method == "eagle3" and found.hidden_size is None
    assert check_verifier(TARGET_31B, inspect_checkpoint(TARGET_31B).config, "s", found).level in ("ok", "error")


def test_a_dflash_drafter_in_its_own_format_is_dflash_and_judged_by_its_shape(tmp_path):
    """z-lab's format: a dflash_config with the target layers it reads, no speculators_config."""
    config = {"architectures": ["DFlashDraftModel"], "model_type": "qwen3", "hidden_size": 5376,
              "num_hidden_layers": 5, "dflash_config": {"target_layer_ids": [1, 12, 23, 35, 46, 57]}}
    draft = inspect_checkpoint(str(write_checkpoint(tmp_path / "dflash", config)))
    ranking = rank_methods(inspect_checkpoint(TARGET_26B), [draft], version="0.33.0", profile="h100")
    assert [(t.method, "5376 wide" in t.reason and "35, 46, 57" in t.reason) for t in ranking.turned_away] == \
        [("dflash", True)]
    fits = rank_methods(inspect_checkpoint(TARGET_31B), [draft], version="0.33.0", profile="h100")
    assert "dflash" in {row.method for row in fits.ranked}


@pytest.mark.parametrize("given", ["mtp", "medusa=result.json", "=result.json"])
def test_acceptance_from_names_a_planned_method_and_a_file(given):
    import pydantic

    from specdraft.planning import LaunchRequest

    with pytest.raises(pydantic.ValidationError, match="METHOD=RESULT.json"):
        LaunchRequest(target=TARGET_31B, acceptance_from=given)


def test_acceptance_from_a_missing_file_is_one_line_exit_2(capsys, tmp_path):
    from specdraft.cli import main

    status = main(["launch", "--target", TARGET_31B, "--acceptance-from", f"mtp={tmp_path / 'none.json'}",
                   "--dry-run"])
    err = capsys.readouterr().err
    assert status == 2 and "Traceback" not in err and "none.json" in err


def test_a_speculators_dflash_layer_numbered_from_one_may_name_the_last_layer():
    """vLLM subtracts one from speculators DFlash's aux_hidden_state_layer_ids: 60 is the 31B's last layer."""
    config = speculator_config(kind="dflash", aux=())
    config["aux_hidden_state_layer_ids"] = [2, 31, 60]
    target = inspect_checkpoint(TARGET_31B)
    assert check_verifier(TARGET_31B, target.config, "s", read_speculator(config)).level == "ok"
    config["aux_hidden_state_layer_ids"] = [2, 31, 61]
    assert check_verifier(TARGET_31B, target.config, "s", read_speculator(config)).level == "error"


def test_the_published_31b_speculators_plan_offline_from_their_shipped_configs():
    """Named, not downloaded: their own config ships, so the plan knows their shape, size and verifier."""
    from specdraft.planning import LaunchRequest, build_launch_plan

    for kind, gib in (("eagle3", 4.2), ("dflash", 7.7), ("dspark", 7.8)):
        draft = inspect_checkpoint(f"RedHatAI/gemma-4-31B-it-speculator.{kind}")
        assert draft.source == "shape-facts" and draft.config["speculators_model_type"] == kind
        assert round(draft.weight_bytes / 2**30, 1) == gib
        plan = build_launch_plan(LaunchRequest(target=TARGET_31B, draft=draft.ref, method=kind, profile="h200"))
        assert not [f for f in plan.findings if f.level == "error"], plan.findings
        assert plan.speculative.method == kind


def test_a_named_speculator_without_shipped_facts_is_still_refused_offline():
    """The 26B's EAGLE-3 config is not published where we could read it: its name alone gives no shape."""
    from specdraft.planning import LaunchRequest, build_launch_plan

    plan = build_launch_plan(LaunchRequest(target=TARGET_26B, draft="RedHatAI/gemma-4-26B-A4B-it-speculator.eagle3",
                                           method="eagle3", profile="h200"))
    refused = [f for f in plan.findings if f.level == "error" and f.check == "draft-checkpoint"]
    assert refused and "ships shape facts only for" in refused[0].message


def test_the_eagle3_parameter_count_matches_the_published_size():
    from specdraft.checkpoints._speculator_params import speculator_parameters

    config = inspect_checkpoint("RedHatAI/gemma-4-31B-it-speculator.eagle3").config
    assert round(speculator_parameters(config) * 2 / 1e9, 1) == 4.5   # "4.5 GB in BF16" (AEON-7's NVFP4 card)
    assert speculator_parameters({"speculators_model_type": "eagle3"}) is None
    assert speculator_parameters({"model_type": "gemma4"}) is None


@pytest.mark.parametrize("target, drafters", [
    (TARGET_31B, ["google/gemma-4-31B-it-assistant", "RedHatAI/gemma-4-31B-it-speculator.eagle3",
                  "RedHatAI/gemma-4-31B-it-speculator.dflash", "RedHatAI/gemma-4-31B-it-speculator.dspark"]),
    ("nvidia/Gemma-4-31B-IT-NVFP4", ["google/gemma-4-31B-it-assistant", "RedHatAI/gemma-4-31B-it-speculator.eagle3",
                                     "RedHatAI/gemma-4-31B-it-speculator.dflash",
                                     "RedHatAI/gemma-4-31B-it-speculator.dspark"]),
    (TARGET_26B, ["google/gemma-4-26B-A4B-it-assistant"]),
])
def test_the_published_drafters_of_a_target_are_its_assistant_then_its_speculators(target, drafters):
    from specdraft.checkpoints import published_drafters

    assert published_drafters(inspect_checkpoint(target)) == drafters


def test_auto_without_a_draft_ranks_the_published_drafters_to_download_apart():
    from specdraft.checkpoints import published_drafters

    target = inspect_checkpoint(TARGET_31B)
    published = [inspect_checkpoint(repo) for repo in published_drafters(target)]
    ranking = rank_methods(target, [], version="0.33.0", profile="h100", published=published)
    assert {row.draft for row in ranking.ranked} == {None}
    assert ranking.chosen.method == "ngram_gpu"
    assert [(row.method, row.draft) for row in ranking.to_download][0] == ("mtp", "google/gemma-4-31B-it-assistant")
    assert {row.method for row in ranking.to_download} == {"mtp", "eagle3", "dflash", "dspark"}
    assert ranking.better_download.predicted_speedup > 2 * ranking.chosen.predicted_speedup
    text = "\n".join(ranking.lines())
    assert "mtp with google/gemma-4-31B-it-assistant: K = 8" in text


def test_auto_without_a_draft_on_a_release_without_mtp_turns_the_assistant_away():
    from specdraft.checkpoints import published_drafters

    target = inspect_checkpoint(TARGET_31B)
    published = [inspect_checkpoint(repo) for repo in published_drafters(target)]
    ranking = rank_methods(target, [], version="0.19.0", profile="h100", published=published)
    assert "google/gemma-4-31B-it-assistant" not in {row.draft for row in ranking.to_download}
    assert "google/gemma-4-31B-it-assistant" in {row.draft for row in ranking.turned_away}


def test_a_plan_without_a_draft_names_the_faster_published_drafter(tree):
    plan = _plan(tree, "0.33.0", target=TARGET_31B, method="auto")
    assert plan.speculative.model is None
    (finding,) = [f for f in plan.findings if f.check == "method-auto"]
    assert "the published mtp drafter google/gemma-4-31B-it-assistant is predicted" in finding.message
    assert "--draft google/gemma-4-31B-it-assistant" in finding.message
    assert plan.to_json_dict()["method_ranking"]["to_download"][0]["draft"] == "google/gemma-4-31B-it-assistant"
