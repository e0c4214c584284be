"""The plan for whole pairs: defaults, profiles, and what the installed vLLM changes."""

import json
import shutil
from pathlib import Path

import pydantic
import pytest

from specdraft.planning import LaunchRequest, build_launch_plan

TARGET, DRAFT = "LilaRest/gemma-4-31B-it-NVFP4-turbo", "mikeytag/gemma-4-E2B-it-NVFP4"


@pytest.fixture(autouse=True)
def offline_empty_hub(tmp_path, monkeypatch):
    """No model on this machine: every checkpoint comes from the shipped shape facts."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")


def _findings(plan):
    return {f.check: f for f in plan.findings}


def test_h100_profile_lowers_the_default_context_to_what_fits_and_warns():
    plan = build_launch_plan(LaunchRequest(target=TARGET, draft=DRAFT, profile="h100"))
    memory = _findings(plan)["memory"]
    assert memory.level == "warning"
    assert memory.message == (f"131072 tokens do not fit NVIDIA H100 80 GB; --max-model-len lowered to "
                              f"{plan.memory.max_model_len}")
    assert plan.serve.flag("--max-model-len").value == str(plan.memory.max_model_len)
    assert plan.serve.flag("--gpu-memory-utilization").value == "0.90"


def test_an_explicit_context_that_does_not_fit_is_an_error_with_what_would():
    plan = build_launch_plan(LaunchRequest(target=TARGET, draft=DRAFT, profile="h100", max_model_len=131072))
    memory = _findings(plan)["memory"]
    assert memory.level == "error" and plan.has_errors
    assert memory.hint.startswith(f"--max-model-len {plan.memory.max_context_that_fits} fits")


def test_h200_fits_the_spark_pairing_at_128k():
    plan = build_launch_plan(LaunchRequest(target=TARGET, draft=DRAFT, profile="h200"))
    assert _findings(plan)["memory"].level == "ok" and plan.serve.flag("--max-model-len").value == "131072"


def test_context_beyond_the_draft_is_refused():
    plan = build_launch_plan(LaunchRequest(target=TARGET, draft=DRAFT, profile="h200", max_model_len=262144))
    assert _findings(plan)["max-model-len"].message == (
        "max_model_len 262144 exceeds max_position_embeddings of the draft 131072")


def test_assistant_draft_gets_method_mtp_and_keeps_the_hybrid_manager():
    plan = build_launch_plan(LaunchRequest(target="google/gemma-4-31B-it", draft="google/gemma-4-31B-it-assistant"))
    assert plan.speculative.method == "mtp"
    assert plan.serve.flag("--disable-hybrid-kv-cache-manager") is None
    assert "the draft is a Gemma 4 MTP assistant" in plan.serve.flag("--speculative-config").reason


def test_e_series_target_gets_the_e_template_variant():
    plan = build_launch_plan(LaunchRequest(target="google/gemma-4-E4B-it", draft="google/gemma-4-E2B-it"))
    assert plan.template.needed_variant == "e"


def test_a_refusing_release_gets_language_model_only_for_a_multimodal_target():
    from tools.release_trees import release_tree

    root = release_tree("0.19.0", progress=lambda line: None)
    plan = build_launch_plan(LaunchRequest(target="nvidia/Gemma-4-31B-IT-NVFP4", draft=DRAFT, vllm_root=root))
    assert plan.serve.flag("--language-model-only") is not None
    assert _findings(plan)["multimodal-target"].level == "warning"


def test_every_flag_carries_a_reason():
    plan = build_launch_plan(LaunchRequest(target=TARGET, draft=DRAFT))
    assert all(flag.reason and "\n" not in flag.reason for flag in plan.serve.flags)


def test_plan_json_is_serialisable_and_complete():
    document = build_launch_plan(LaunchRequest(target=TARGET, draft=DRAFT)).to_json_dict()
    assert json.loads(json.dumps(document))["argv"][:3] == ["vllm", "serve", TARGET]
    assert {"argv", "speculative_config", "findings", "memory", "flags"} <= set(document)


def test_a_flag_repeated_after_the_separator_replaces_the_plans_own():
    plan = build_launch_plan(LaunchRequest(target=TARGET, draft=DRAFT, extra_args=["--max-num-seqs", "8"]))
    assert plan.argv.count("--max-num-seqs") == 1 and plan.argv[-2:] == ["--max-num-seqs", "8"]
    assert any(f.check == "serve-flags" and f.message.startswith("--max-num-seqs given after -- replace the plan's")
               for f in plan.findings)


def test_draft_tensor_parallel_size_follows_the_target_unless_given():
    plan = build_launch_plan(LaunchRequest(target=TARGET, draft=DRAFT, tensor_parallel_size=2, profile="h100"))
    assert plan.speculative.draft_tensor_parallel_size == 2
    assert plan.serve.flag("--tensor-parallel-size").value == "2"
    assert {f.check: f.level for f in plan.findings}["draft-tensor-parallel"] == "ok"


def test_a_gemma4_checkpoint_without_weights_gets_its_weights_from_the_formula_and_says_so(tmp_path):
    repo = Path(__file__).resolve().parents[2]
    target = tmp_path / "target31b"
    shutil.copytree(repo / "benchmarks" / "gpu" / "configs" / "target31b", target)
    plan = build_launch_plan(LaunchRequest(target=str(target), draft=DRAFT))
    digest = plan.to_json_dict()["target"]
    assert digest["weight_bytes"] == 30_697_345_280 * 2
    assert digest["weight_bytes_basis"] == ("computed from config.json: 30,697,345,280 language-model parameters "
                                              "by the Gemma 4 formula (towers not counted) in BF16")
    assert not any(f.message.startswith("weight size unknown") for f in plan.findings)


def test_a_checkpoint_no_family_can_weigh_makes_the_memory_plan_say_it_is_optimistic(tmp_path):
    target = tmp_path / "llama"
    target.mkdir()
    (target / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 4096,
                                                    "num_attention_heads": 32, "num_hidden_layers": 32}))
    plan = build_launch_plan(LaunchRequest(target=str(target), draft=DRAFT))
    assert any(f.check == "memory" and f.level == "warning"
               and f.message.startswith(f"weight size unknown for {target}")
               for f in plan.findings)


@pytest.mark.parametrize("profile, k", [("dgx-spark", 4), ("h100", 3), ("h200", 3)])
def test_unset_k_is_the_measured_best_for_the_profile_and_says_why(profile, k):
    plan = build_launch_plan(LaunchRequest(target=TARGET, draft=DRAFT, profile=profile))
    flag = plan.serve.flag("--speculative-config")
    assert json.loads(flag.value)["num_speculative_tokens"] == k
    assert f"{k} draft tokens per step (" in flag.reason
    assert ("host-bound" in flag.reason) == (profile != "dgx-spark")


def test_a_given_k_wins_over_the_profiles():
    plan = build_launch_plan(LaunchRequest(target=TARGET, draft=DRAFT, profile="h100", num_speculative_tokens=5))
    flag = plan.serve.flag("--speculative-config")
    assert json.loads(flag.value)["num_speculative_tokens"] == 5 and "(given)" in flag.reason


MEASURED_MTP_K = ("tune's pick at alpha 0.70 from the acceptance and step costs measured on an H100 with the 31B's "
                  "MTP assistant (vLLM 0.26.0); K = 9, the longest measured, was the fastest at alpha 0.70 and 0.85 "
                  "(docs/gpu/README.md)")


@pytest.mark.parametrize("profile, k, basis", [
    ("dgx-spark", 4, "the published recipes' N for Gemma 4 MTP assistants"),
    ("h100", 8, MEASURED_MTP_K),
    ("h200", 8, MEASURED_MTP_K),
])
def test_unset_k_for_an_mtp_assistant_is_measured_on_hopper_and_the_recipes_on_dgx_spark(profile, k, basis):
    plan = build_launch_plan(LaunchRequest(target=TARGET, draft="google/gemma-4-31B-it-assistant", profile=profile))
    flag = plan.serve.flag("--speculative-config")
    assert json.loads(flag.value)["num_speculative_tokens"] == k
    assert flag.reason.startswith(f"{k} draft tokens per step ({basis}")


@pytest.mark.parametrize("target, assistant", [
    (TARGET, "google/gemma-4-31B-it-assistant"),
    ("google/gemma-4-31B-it", "google/gemma-4-31B-it-assistant"),
    ("google/gemma-4-26B-A4B-it", "google/gemma-4-26B-A4B-it-assistant"),
])
def test_a_draft_model_beside_a_gemma4_target_gets_a_tip_naming_its_mtp_assistant(target, assistant):
    plan = build_launch_plan(LaunchRequest(target=target, draft=DRAFT, profile="h100"))
    tip = _findings(plan)["mtp-assistant"]
    assert tip.level == "info" and tip.hint == f"launch --draft {assistant}"
    assert tip.message == (f"tip: --draft {assistant}, the target's MTP assistant (method mtp), decoded ~2x as fast as "
                           "an E2B draft_model pairing on an H100 (31B: 155 vs 79 tok/s at forced acceptance 0.85, "
                           "vLLM 0.26.0); specdraft applies gemma4-mtp-shares-backbone-embeddings where the serving "
                           "vLLM needs it")


def test_the_tip_finds_the_assistant_of_a_local_target_by_its_width(tmp_path):
    repo = Path(__file__).resolve().parents[2]
    target = tmp_path / "my-target"
    shutil.copytree(repo / "benchmarks" / "gpu" / "configs" / "target31b", target)
    plan = build_launch_plan(LaunchRequest(target=str(target), draft=DRAFT))
    assert _findings(plan)["mtp-assistant"].hint == "launch --draft google/gemma-4-31B-it-assistant"


@pytest.mark.parametrize("method", [None, "mtp", "draft_model"])
def test_an_assistant_draft_gets_no_mtp_tip_whatever_the_method(method):
    plan = build_launch_plan(LaunchRequest(target=TARGET, draft="google/gemma-4-31B-it-assistant", method=method))
    assert "mtp-assistant" not in _findings(plan)


def test_a_launch_request_refuses_a_draft_for_a_method_that_uses_none_and_none_for_one_that_needs_it():
    with pytest.raises(pydantic.ValidationError, match="method ngram uses no draft checkpoint"):
        LaunchRequest(target=TARGET, draft=DRAFT, method="ngram")
    with pytest.raises(pydantic.ValidationError, match="method eagle3 needs a draft checkpoint"):
        LaunchRequest(target=TARGET, method="eagle3")
    assert LaunchRequest(target=TARGET, draft=DRAFT, method="mtp").method == "mtp"
    assert LaunchRequest(target=TARGET, method="ngram").draft is None


def test_an_mtp_pairing_reads_the_hotfix_statuses_and_applies_the_mtp_hotfix_before_serving(tmp_path):
    """With the hybrid KV manager left on (an assistant shares no KV of its own), the plan must still read the
    hotfix statuses: vLLM 0.26.0 cannot start a Gemma 4 assistant without the MTP hotfix."""
    from specdraft.launch import apply_hotfixes
    from tools.release_trees import release_tree

    root = tmp_path / "site"
    shutil.copytree(release_tree("0.26.0", progress=lambda line: None), root)
    request = LaunchRequest(target="google/gemma-4-31B-it", draft="google/gemma-4-31B-it-assistant", profile="h100",
                            vllm_root=root)
    plan = build_launch_plan(request)
    assert plan.serve.flag("--disable-hybrid-kv-cache-manager") is None
    finding = _findings(plan)["hotfixes"]
    assert finding.level == "info" and "gemma4-mtp-shares-backbone-embeddings pending" in finding.message
    checked = build_launch_plan(request.model_copy(update={"hotfixes": "check"}))
    assert _findings(checked)["hotfixes"].level == "error"
    applied = apply_hotfixes(plan, progress=lambda line: None)
    statuses = {h.id: h.status for h in applied.vllm.hotfixes}
    assert statuses["gemma4-mtp-shares-backbone-embeddings"] == "applied"
    assert _findings(applied)["hotfixes"].level == "ok"


@pytest.mark.parametrize("draft, extra", [("/models/unknown-draft", []), ("google/gemma-4-31B-it-assistant",
                                                                         ["--disable-hybrid-kv-cache-manager"])])
def test_a_pair_served_with_the_hybrid_manager_off_needs_the_kv_sharing_hotfixes(tmp_path, draft, extra):
    """The plan turns the manager off for a draft it cannot read, and the user may after --: either way the
    KV-sharing hotfixes matter, and their status is read."""
    from tools.release_trees import release_tree

    root = tmp_path / "site"
    shutil.copytree(release_tree("0.26.0", progress=lambda line: None), root)
    plan = build_launch_plan(LaunchRequest(target=TARGET, draft=draft, vllm_root=root, hotfixes="check",
                                           extra_args=extra))
    finding = _findings(plan)["hotfixes"]
    assert finding.level == "error"
    assert "kv-sharing-uniform-specs, kv-uniform-catches-valueerror pending" in finding.message
