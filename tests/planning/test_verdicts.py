"""The checks of what vLLM would reject or serve wrongly, each on the input it turns away and one it accepts."""

import pytest

from specdraft.planning.knowledge.release_support import first_release, release_support
from specdraft.planning.checks.release import (
    check_assistant_target, check_context_room, check_draft_size, check_family, check_kv_cache_dtype,
    check_num_speculative_tokens, check_release_architectures, check_release_method, check_tensor_parallel,
)
from tests.planning.conftest import shipped_config

LLAMA = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_attention_heads": 32,
         "vocab_size": 128256}


def test_a_family_specdraft_does_not_know_is_an_error_naming_it():
    finding = check_family("target", "meta-llama/Llama-3.1-8B", LLAMA, None, ["Gemma 4"])
    assert finding.level == "error" and finding.check == "target-family"
    assert finding.message.startswith("target meta-llama/Llama-3.1-8B is llama (LlamaForCausalLM); specdraft plans "
                                      "Gemma 4 only")
    assert check_family("draft", "google/gemma-4-E2B-it", {}, "Gemma 4", ["Gemma 4"]).level == "ok"


@pytest.mark.parametrize("target, assistant, difference", [
    ("google/gemma-4-26B-A4B-it", "google/gemma-4-31B-it-assistant",
     "backbone_hidden_size 5376 != target hidden_size 2816"),
    ("google/gemma-4-31B-it", "google/gemma-4-E2B-it-assistant",
     "backbone_hidden_size 1536 != target hidden_size 5376"),
])
def test_an_assistant_built_for_another_target_is_an_error(target, assistant, difference):
    finding = check_assistant_target(target, shipped_config(target), assistant, shipped_config(assistant))
    assert finding.level == "error" and difference in finding.message


@pytest.mark.parametrize("size", ["E2B", "E4B", "12B", "26B-A4B", "31B"])
def test_every_published_assistant_fits_its_own_target(size):
    target, assistant = f"google/gemma-4-{size}-it", f"google/gemma-4-{size}-it-assistant"
    assert check_assistant_target(target, shipped_config(target), assistant, shipped_config(assistant)).level == "ok"


def test_an_assistant_whose_kv_shapes_differ_is_an_error():
    assistant = shipped_config("google/gemma-4-31B-it-assistant")
    assistant["text_config"]["num_key_value_heads"] = 8
    finding = check_assistant_target("google/gemma-4-31B-it", shipped_config("google/gemma-4-31B-it"), "a", assistant)
    assert finding.level == "error" and "num_key_value_heads 8 != target's 16" in finding.message


@pytest.mark.parametrize("version", ["0.19.1", "0.20.2"])
def test_mtp_on_a_release_without_gemma4_assistants_is_an_error(version):
    finding = check_release_method("mtp", "gemma4_assistant", ["Gemma4ForConditionalGeneration"],
                                   release_support(version), version)
    assert finding.level == "error" and "cannot drive a gemma4_assistant draft with method mtp" in finding.message
    assert finding.hint.startswith("pip install 'vllm>=0.21.0'")


def test_mtp_on_a_release_with_them_and_draft_model_everywhere_are_fine():
    assert check_release_method("mtp", "gemma4_assistant", [], release_support("0.21.0"), "0.21.0").level == "ok"
    assert check_release_method("draft_model", "gemma4", ["Gemma4ForCausalLM"], release_support("0.19.0"),
                                "0.19.0").level == "ok"
    assert first_release(lambda r: "gemma4_unified_assistant" in r.gemma4_assistant_model_types) == "0.23.0"


def test_a_target_the_release_has_no_model_for_is_an_error_naming_the_first_that_has():
    unified = ["Gemma4UnifiedForConditionalGeneration"]
    finding = check_release_architectures(unified, release_support("0.22.1"), "0.22.1")
    assert finding.level == "error" and finding.hint == "pip install 'vllm>=0.23.0'"
    assert "vLLM 0.22.1 has no Gemma4UnifiedForConditionalGeneration model" in finding.message
    assert check_release_architectures(unified, release_support("0.23.0"), "0.23.0") is None
    assert check_release_method("draft_model", "gemma4", unified, release_support("0.22.1"), "0.22.1").level == "error"
    assert check_release_architectures(["Gemma4NextForCausalLM"], release_support("0.33.0"), "0.33.0").hint == \
        "serve another target"


def test_a_method_the_release_lacks_and_an_unknown_release():
    assert check_release_method("dspark", None, [], release_support("0.22.1"), "0.22.1").level == "error"
    assert check_release_method("mtp", "gemma4_assistant", [], None, "0.40.0").level == "warning"


def test_k_past_the_cuda_graph_ceiling_is_an_error():
    finding = check_num_speculative_tokens(100000, release_support("0.26.0"), "0.26.0")
    assert finding.level == "error" and "at most 512 tokens" in finding.message and "K + 1 = 100001" in finding.message
    assert check_num_speculative_tokens(511, release_support("0.26.0"), "0.26.0").level == "ok"
    assert check_num_speculative_tokens(512, release_support("0.33.0"), "0.33.0").level == "error"
    unknown = check_num_speculative_tokens(100000, None, None)
    assert unknown.level == "error" and "every vLLM release 0.19.0-0.33.0" in unknown.message


def test_a_context_without_room_for_one_step_is_an_error():
    assert check_context_room(1, 4).level == "error" and check_context_room(5, 4).level == "error"
    assert check_context_room(4096, 4) is None


def test_kv_cache_dtype_must_be_a_choice_of_the_release():
    assert check_kv_cache_dtype("garbage", release_support("0.26.0"), "0.26.0").level == "error"
    assert check_kv_cache_dtype("garbage", None, None).level == "error"
    assert check_kv_cache_dtype("nvfp4", release_support("0.19.0"), "0.19.0").level == "error"
    assert check_kv_cache_dtype("nvfp4", release_support("0.33.0"), "0.33.0").level == "ok"
    assert check_kv_cache_dtype("fp8", release_support("0.19.0"), "0.19.0").level == "ok"


def test_tensor_parallel_sizes_must_divide_the_heads_and_exist():
    target, draft = shipped_config("google/gemma-4-31B-it"), shipped_config("google/gemma-4-E2B-it")
    three = check_tensor_parallel(3, 3, target, draft, gpus=8, profile="x")
    assert three.level == "error" and "32 attention heads do not divide by its tensor-parallel size 3" in three.message
    one_gpu = check_tensor_parallel(2, 2, target, draft, gpus=1, profile="h100")
    assert one_gpu.level == "error" and "profile h100 has 1" in one_gpu.message
    both = check_tensor_parallel(3, 3, target, draft, gpus=1, profile="dgx-spark")
    assert both.message.startswith("tensor_parallel_size 3 needs 3 GPUs; profile dgx-spark has 1; the target's 32 "
                                   "attention heads do not divide") and both.hint == "pass --tensor-parallel-size 1"
    assert check_tensor_parallel(1, 1, target, draft, gpus=1, profile="h100").level == "ok"


def test_a_draft_as_large_as_its_target_is_a_warning_with_the_numbers():
    finding = check_draft_size("t", 30_700_000_000, "d", 30_700_000_000)
    assert finding.level == "warning" and "30.70B parameters, target t 30.70B" in finding.message
    assert check_draft_size("t", 30_700_000_000, "d", 5_100_000_000).level == "ok"
