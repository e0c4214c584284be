"""Every compatibility check, failing, with the message a user reads."""

import json
from pathlib import Path

import pytest

from specdraft.checkpoints import published_assistant
from specdraft.patching import HotfixReport, Status, Trait, needed_hotfixes
from specdraft.planning import Finding, SpeculativeConfig, VllmFacts, inspect_checkpoint
from specdraft.planning.decisions.hybrid_kv import hybrid_kv_reason
from specdraft.planning.checks.pair import (
    PairFacts, check_chat_template, check_checkpoint, check_draft_tensor_parallel, check_hotfixes,
    check_kv_cache_manager, check_max_model_len, check_method, check_multimodal_target, check_quantization,
    check_special_tokens, check_vllm, check_vocab_size, suggest_mtp_assistant,
)
from tests.planning.conftest import gemma_tokenizer_config, shipped_config, write_checkpoint

KV_SHARING = frozenset({Trait.HYBRID_KV_CACHE_MANAGER_OFF})
MTP = frozenset({Trait.GEMMA4_MTP_ASSISTANT})


def _report(hotfix_id: str, status: Status, detail: str = "") -> HotfixReport:
    return HotfixReport(id=hotfix_id, status=status, file=None, vllm_version=None, detail=detail)


@pytest.fixture
def facts(tmp_path):
    def get(repo_id):
        return inspect_checkpoint(repo_id, hf_cache=tmp_path / "empty-hub")
    return get


def test_unequal_vocab_sizes_are_an_error(checkpoint_dir, facts):
    draft = inspect_checkpoint(str(checkpoint_dir("d", "google/gemma-4-E2B-it", text={"vocab_size": 256000})))
    finding = check_vocab_size(facts("google/gemma-4-31B-it"), draft)
    assert finding.level == "error"
    assert finding.message.startswith("draft vocab_size 256000 != target vocab_size 262144; vLLM's draft_model needs "
                                      "equal vocabularies")


SPECULATOR_CONFIG = Path(__file__).parents[2] / "benchmarks" / "gpu" / "configs" / "eagle3_31b" / "config.json"


def test_a_speculators_vocabulary_is_its_transformer_layer_configs(tmp_path, facts):
    """vLLM builds a speculators drafter's config from transformer_layer_config: that is the vocabulary compared."""
    config = json.loads(SPECULATOR_CONFIG.read_text())
    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "config.json").write_text(json.dumps(config))
    assert check_vocab_size(facts("google/gemma-4-31B-it"), inspect_checkpoint(str(tmp_path / "spec"))).level == "ok"
    config["transformer_layer_config"]["vocab_size"] = 128256
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "config.json").write_text(json.dumps(config))
    finding = check_vocab_size(facts("google/gemma-4-31B-it"), inspect_checkpoint(str(tmp_path / "other")))
    assert finding.level == "error" and finding.message.startswith("draft vocab_size 128256 != target vocab_size")


def test_different_special_token_ids_are_an_error(checkpoint_dir):
    target = inspect_checkpoint(str(checkpoint_dir("t", "google/gemma-4-31B-it",
                                                   tokenizer_config=gemma_tokenizer_config())))
    draft = inspect_checkpoint(str(checkpoint_dir("d", "google/gemma-4-E2B-it",
                                                  tokenizer_config=gemma_tokenizer_config(**{"<turn|>": 107}))))
    finding = check_special_tokens(target, draft)
    assert finding.level == "error"
    assert finding.message.startswith("special-token ids differ (<turn|>: target 106, draft 107)")


def test_different_bos_ids_in_config_are_an_error(checkpoint_dir, facts):
    draft = inspect_checkpoint(str(checkpoint_dir("d", "google/gemma-4-E2B-it", text={"bos_token_id": 5})))
    assert "bos: target 2, draft 5" in check_special_tokens(facts("google/gemma-4-31B-it"), draft).message


def test_draft_model_needs_the_targets_tensor_parallel_size():
    finding = check_draft_tensor_parallel(SpeculativeConfig(model="d", draft_tensor_parallel_size=1), 2)
    assert (finding.level, finding.message) == (
        "error",
        "draft_tensor_parallel_size=1 but tensor_parallel_size=2: vLLM's draft_model proposer needs them equal")
    assert finding.hint == "pass --draft-tensor-parallel-size 2"


def test_other_methods_allow_only_one_or_the_targets_tensor_parallel_size():
    finding = check_draft_tensor_parallel(SpeculativeConfig(method="mtp", model="d", draft_tensor_parallel_size=2), 4)
    assert finding.message == "draft_tensor_parallel_size=2 must be 1 or tensor_parallel_size (4) for method mtp"


def test_context_longer_than_the_draft_supports_is_an_error(facts):
    finding = check_max_model_len(262144, facts("google/gemma-4-31B-it"), facts("google/gemma-4-E2B-it"))
    assert (finding.level, finding.message, finding.hint) == (
        "error", "max_model_len 262144 exceeds max_position_embeddings of the draft 131072",
        "pass --max-model-len 131072")


def test_kv_sharing_draft_without_disabling_the_hybrid_manager_is_an_error(facts):
    why = hybrid_kv_reason(facts("google/gemma-4-31B-it"), facts("google/gemma-4-E2B-it"))
    finding = check_kv_cache_manager(why, disabled=False)
    assert finding.level == "error"
    assert finding.message.startswith("the draft shares KV across 20 layers and sliding windows differ (target 1024, "
                                      "draft 512): with the hybrid KV cache manager on, vLLM refuses the pair on the V1 model runner")


def test_drifted_hotfix_is_an_error_naming_the_version():
    vllm = VllmFacts(python="/v/bin/python", version="0.34.0",
                     hotfixes=(_report("kv-uniform-catches-valueerror", Status.DRIFTED, "anchor not found"),))
    finding = check_hotfixes(KV_SHARING, vllm, "apply")
    assert finding.level == "error"
    assert finding.message == ("vLLM 0.34.0: kv-uniform-catches-valueerror drifted (the code around the anchor "
                               "changed; specdraft will not patch it): anchor not found")
    assert finding.hint == "python -m specdraft patch diff --python /v/bin/python"


def test_pending_hotfix_in_check_mode_is_an_error_quoting_the_failure_it_declares():
    vllm = VllmFacts(python="/v/bin/python", version="0.32.0",
                     hotfixes=(_report("kv-sharing-uniform-specs", Status.PENDING),
                               _report("kv-uniform-catches-valueerror", Status.APPLIED)))
    failure = next(e.failure for e in needed_hotfixes(KV_SHARING) if e.id == "kv-sharing-uniform-specs")
    assert check_hotfixes(KV_SHARING, vllm, "check").message == (
        f"vLLM 0.32.0: kv-sharing-uniform-specs pending; without them {failure}")
    assert check_hotfixes(KV_SHARING, vllm, "apply").level == "info"
    assert check_hotfixes(KV_SHARING, vllm, "skip").level == "warning"


def test_unknown_hotfix_status_is_a_warning_with_the_command_to_learn_it():
    finding = check_hotfixes(KV_SHARING, VllmFacts(hotfix_note="no `vllm` on PATH"), "apply")
    assert (finding.level, finding.message) == ("warning", "hotfix status unknown: no `vllm` on PATH")


def test_multimodal_target_on_a_refusing_release_is_an_error(facts):
    vllm = VllmFacts(version="0.19.0", accepts_multimodal_target=False, multimodal_basis="table",
                     multimodal_workaround=("--language-model-only",))
    finding = check_multimodal_target(facts("google/gemma-4-31B-it"), "draft_model", vllm)
    assert finding.level == "error"
    assert finding.message.startswith("target google/gemma-4-31B-it is multimodal (Gemma4ForConditionalGeneration) and "
                                      "vLLM 0.19.0's draft_model refuses multimodal targets")
    assert finding.hint.startswith("add --language-model-only")


def test_multimodal_target_with_language_model_only_is_a_warning(facts):
    vllm = VllmFacts(version="0.19.0", accepts_multimodal_target=False, multimodal_basis="table",
                     multimodal_workaround=("--language-model-only",))
    finding = check_multimodal_target(facts("google/gemma-4-31B-it"), "draft_model", vllm,
                                      language_model_only=True)
    assert finding.level == "warning"


def test_multimodal_target_on_vllm_cpu_is_an_error_even_text_only(facts):
    from specdraft.planning import multimodal_verdict

    verdict = multimodal_verdict("0.32.0", None, "vllm-cpu")
    assert verdict.accepts is False and verdict.workaround == ()
    vllm = VllmFacts(version="0.32.0", accepts_multimodal_target=False, multimodal_basis=verdict.basis)
    finding = check_multimodal_target(facts("google/gemma-4-31B-it"), "draft_model", vllm,
                                      language_model_only=True)
    assert finding.level == "error" and "Could not import module Gemma4Processor" in finding.message


def test_shipped_table_decides_by_version_range():
    from specdraft.planning import multimodal_verdict

    refused, accepted = multimodal_verdict("0.20.1", None), multimodal_verdict("0.33.0", None)
    assert (refused.accepts, refused.workaround) == (False, ("--language-model-only",))
    assert accepted.accepts is True and accepted.basis.startswith("shipped table: >=0.21.0,<0.34.0")


def test_quantization_flag_that_contradicts_the_checkpoint_is_an_error(tmp_path):
    config = shipped_config("google/gemma-4-E4B-it")
    config["quantization_config"] = {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
                                     "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
                                         "num_bits": 4, "type": "float", "strategy": "tensor_group",
                                         "group_size": 16}}}}
    target = inspect_checkpoint(str(write_checkpoint(tmp_path / "ct", config)))
    findings = check_quantization(target, None, "modelopt", None)
    errors = [f for f in findings if f.level == "error"]
    assert errors and "compressed-tensors" in errors[0].message and "modelopt" in errors[0].message


def test_quantization_flag_for_an_unquantized_checkpoint_is_an_error(checkpoint_dir):
    target = inspect_checkpoint(str(checkpoint_dir("t", "google/gemma-4-31B-it")))
    (finding,) = check_quantization(target, None, "modelopt", None)
    assert finding.level == "error" and "no quantization metadata" in finding.message


def test_quantized_draft_without_its_quantization_is_an_error(facts):
    (finding,) = check_quantization(facts("google/gemma-4-31B-it"), facts("mikeytag/gemma-4-E2B-it-NVFP4"), None, None)
    assert finding.message == "draft checkpoint is modelopt but speculative_config.quantization is not set"


def test_eagle_like_draft_path_without_a_method_is_an_error():
    finding = check_method(SpeculativeConfig(model="/models/gemma-eagle3-draft"), None)
    assert finding.level == "error" and finding.hint == "pass --method draft_model"


def test_assistant_draft_with_draft_model_method_is_an_error(facts):
    draft = facts("google/gemma-4-31B-it-assistant")
    finding = check_method(SpeculativeConfig(method="draft_model", model=draft.ref), draft)
    assert finding.message == ("google/gemma-4-31B-it-assistant is a Gemma 4 MTP assistant; method='draft_model' "
                               "cannot drive it")


def test_vllm_older_than_gemma4_is_an_error():
    finding = check_vllm(VllmFacts(version="0.18.1", root=Path("/x")))
    assert finding.message == "vLLM 0.18.1 has no Gemma 4 model (it arrived in 0.19.0)"


def test_an_interpreter_without_vllm_is_an_error():
    finding = check_vllm(VllmFacts(python="/venv/bin/python", note="no vLLM is installed in this interpreter"))
    assert (finding.level, finding.message) == ("error", "no vLLM to serve with: no vLLM is installed in this "
                                                         "interpreter")


def test_no_vllm_at_all_is_only_a_warning_for_planning():
    assert check_vllm(VllmFacts(note="nothing")).level == "warning"


def test_unknown_checkpoint_is_an_error_with_the_download_command(facts):
    finding = check_checkpoint("draft", facts("someone/llama-7b"))
    assert finding.level == "error" and finding.hint == "download it first: hf download someone/llama-7b"


def _template_facts(facts, **kwargs) -> PairFacts:
    return PairFacts(target=facts("google/gemma-4-31B-it"), draft=None, speculative=SpeculativeConfig(model="d"),
                     method="draft_model", tensor_parallel_size=1, max_model_len=1024, target_quantization=None,
                     hybrid_kv_reason=None, hybrid_kv_cache_manager_disabled=True, hotfix_mode="apply",
                     vllm=VllmFacts(), **kwargs)


def test_leaking_template_is_an_error(facts):
    leak = Finding(level="error", check="chat-template", message="history replays 'thought\\n...'")
    finding = check_chat_template(_template_facts(facts, template_path=Path("/t.jinja"), template_variant="large",
                                                  template_findings=(leak,)))
    assert finding.level == "error"
    assert finding.message == "/t.jinja leaks the thought channel: history replays 'thought\\n...'"


def test_e_series_template_for_a_large_target_is_an_error(facts):
    finding = check_chat_template(_template_facts(facts, template_path=Path("/e.jinja"), template_variant="e"))
    assert finding.message == ("/e.jinja is the 'e' variant but target google/gemma-4-31B-it needs 'large' (the "
                               "thinking-off generation prompt differs)")


def test_an_mtp_pairing_needs_the_embedding_hotfix_whatever_the_kv_cache_manager():
    vllm = VllmFacts(python="/v/bin/python", version="0.26.0",
                     hotfixes=(_report("kv-sharing-uniform-specs", Status.APPLIED),
                               _report("gemma4-mtp-shares-backbone-embeddings", Status.PENDING)))
    finding = check_hotfixes(MTP, vllm, "check")
    assert finding.level == "error" and "gemma4-mtp-shares-backbone-embeddings pending" in finding.message
    assert "pre_projection" in finding.message and "window size" not in finding.message
    assert check_hotfixes(frozenset(), vllm, "check").level == "ok"  # a draft_model pair with the hybrid manager on
    assert check_hotfixes(KV_SHARING, vllm, "check").level == "ok"  # a draft_model pair: not its business


def test_a_gemma4_target_of_an_unpublished_width_gets_no_mtp_tip(checkpoint_dir, facts):
    target = inspect_checkpoint(str(checkpoint_dir("t", "google/gemma-4-31B-it", text={"hidden_size": 64})))
    draft = facts("google/gemma-4-E2B-it")
    assert published_assistant(target) is None
    assert suggest_mtp_assistant(target, "draft_model", draft) is None
    assert suggest_mtp_assistant(facts("google/gemma-4-31B-it"), "draft_model", draft).level == "info"


def test_the_mtp_tip_never_names_an_assistant_the_serving_release_refuses(facts):
    target, draft = facts("google/gemma-4-31B-it"), facts("google/gemma-4-E2B-it")
    # 0.19.0-0.20.x load no Gemma 4 assistant model type: the tip names the first release that does
    old = suggest_mtp_assistant(target, "draft_model", draft, "0.19.0")
    assert "vLLM 0.19.0 refuses it: it needs vLLM 0.21.0 or later" in old.message
    assert old.hint == "launch --draft google/gemma-4-31B-it-assistant with vLLM >= 0.21.0"
    served = suggest_mtp_assistant(target, "draft_model", draft, "0.26.0")
    assert "refuses" not in served.message and served.hint == "launch --draft google/gemma-4-31B-it-assistant"
    # the 12B's assistant is a gemma4_unified_assistant: 0.21.0 and 0.22.x load only gemma4_assistant
    twelve = suggest_mtp_assistant(facts("google/gemma-4-12B-it"), "draft_model", draft, "0.22.0")
    assert "google/gemma-4-12B-it-assistant" in twelve.message and "needs vLLM 0.23.0 or later" in twelve.message


# --- tensor parallelism on a release whose TP servers crashed ---


def _tp_plan(release, tensor_parallel_size):
    from specdraft.planning import LaunchRequest, build_launch_plan

    return build_launch_plan(LaunchRequest(target="google/gemma-4-31B-it", draft="google/gemma-4-31B-it-assistant",
                                           vllm_root=release("0.26.0"), profile="h200",
                                           tensor_parallel_size=tensor_parallel_size))


def test_a_tp_2_plan_on_vllm_0_26_warns_of_the_served_start_up_crash(release, empty_hub):
    finding = next(f for f in _tp_plan(release, 2).findings if f.check == "tp-start-up")
    assert finding.level == "warning"
    assert "real-stack-h200-m3/ and real-stack-h200-m4/" in finding.message and "not isolated" in finding.message
    assert "(untested)" in finding.hint and '{"pass_config": {"fuse_allreduce_rms": false}}' in finding.hint
    assert "allreduce backend: mnnvl" in finding.hint


def test_a_tp_1_plan_gets_no_tp_start_up_warning(release, empty_hub):
    assert not [f for f in _tp_plan(release, 1).findings if f.check == "tp-start-up"]


@pytest.mark.parametrize("version, flashinfer, profile, tp", [
    ("0.26.0", False, "h200", 2),    # no FlashInfer: vLLM does not fuse (the staging that served TP 2)
    ("0.27.0", None, "h200", 2),     # not served there
    ("0.26.0", None, "dgx-spark", 2),  # SM 12.1: vLLM leaves the fusion off
    ("0.26.0", True, "h100", 1),
])
def test_the_tp_start_up_warning_stays_off_where_the_crash_was_not_served(version, flashinfer, profile, tp):
    from specdraft.planning.checks.vllm_install import check_tp_start_up

    assert check_tp_start_up(VllmFacts(version=version, has_flashinfer=flashinfer), tp, profile) is None
    assert check_tp_start_up(VllmFacts(version="0.26.0", has_flashinfer=True), 2, "h100") is not None


def test_the_fusion_switch_the_hint_names_is_vllm_0_26_s(release):
    """The hint's key is a field of 0.26.0's PassConfig, which vLLM turns on at TP > 1 on SM 9.0 with FlashInfer."""
    import ast

    tree = release("0.26.0") / "vllm" / "config"
    passes = next(node for node in ast.parse((tree / "compilation.py").read_text()).body
                  if isinstance(node, ast.ClassDef) and node.name == "PassConfig")
    assert "fuse_allreduce_rms" in {node.target.id for node in passes.body if isinstance(node, ast.AnnAssign)}
    enable = next(node for node in ast.parse((tree / "vllm.py").read_text()).body
                  if isinstance(node, ast.FunctionDef) and node.name == "enable_allreduce_rms_fusion")
    source = ast.unparse(enable)
    assert "tensor_parallel_size > 1" in source and "has_flashinfer()" in source and "is_device_capability(90)" in source
