"""launch --dry-run turns away what vLLM would reject at start-up or serve wrongly: exit 1, the check named."""

import json

import pytest

from specdraft.errors import ExitCode
from tests.planning.conftest import shipped_config, write_checkpoint

TARGET, DRAFT = "google/gemma-4-31B-it", "google/gemma-4-E2B-it"
LLAMA = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 2048, "num_attention_heads": 32,
         "num_key_value_heads": 8, "num_hidden_layers": 16, "intermediate_size": 8192, "vocab_size": 128256,
         "max_position_embeddings": 131072}


@pytest.fixture(scope="module")
def tree():
    from tools.release_trees import release_tree

    return lambda version: str(release_tree(version, progress=lambda line: None))


def _plan(specdraft_cli, *args: str) -> tuple[int, dict]:
    done = specdraft_cli("launch", *args, "--dry-run", "--json")
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout)


def _errors(plan: dict) -> dict[str, str]:
    return {f["check"]: f["message"] for f in plan["findings"] if f["level"] == "error"}


def test_a_llama_pair_gets_no_gemma_plan(specdraft_cli, tmp_path):
    target = write_checkpoint(tmp_path / "llama-8b", dict(LLAMA, hidden_size=4096))
    draft = write_checkpoint(tmp_path / "llama-1b", LLAMA)
    code, plan = _plan(specdraft_cli, "--target", str(target), "--draft", str(draft))
    assert code == ExitCode.ATTENTION
    errors = _errors(plan)
    assert errors["target-family"].startswith(f"target {target} is llama (LlamaForCausalLM); specdraft plans Gemma 4")
    assert "draft-family" in errors


@pytest.mark.parametrize("target, assistant", [("google/gemma-4-26B-A4B-it", "google/gemma-4-31B-it-assistant"),
                                               ("google/gemma-4-31B-it", "google/gemma-4-E2B-it-assistant")])
def test_an_assistant_built_for_another_target_is_refused(specdraft_cli, target, assistant):
    code, plan = _plan(specdraft_cli, "--target", target, "--draft", assistant)
    assert code == ExitCode.ATTENTION and "backbone_hidden_size" in _errors(plan)["assistant-target"]


def test_the_published_assistant_passes(specdraft_cli, tree):
    code, plan = _plan(specdraft_cli, "--target", TARGET, "--draft", "google/gemma-4-31B-it-assistant",
                       "--vllm-root", tree("0.26.0"))
    assert {f["check"]: f["level"] for f in plan["findings"]}["assistant-target"] == "ok"
    assert "release-support" not in _errors(plan)


def test_mtp_on_a_release_without_gemma4_assistants_is_refused(specdraft_cli, tree):
    code, plan = _plan(specdraft_cli, "--target", TARGET, "--draft", "google/gemma-4-31B-it-assistant",
                       "--vllm-root", tree("0.19.0"))
    assert code == ExitCode.ATTENTION
    assert "vLLM 0.19.0 cannot drive a gemma4_assistant draft with method mtp" in _errors(plan)["release-support"]


@pytest.mark.parametrize("args, check, words", [
    (["--num-speculative-tokens", "100000"], "num-speculative-tokens", "K + 1 = 100001"),
    (["--max-model-len", "1"], "max-model-len", "leaves no room for a prompt"),
    (["--kv-cache-dtype", "garbage"], "kv-cache-dtype", "--kv-cache-dtype 'garbage' is not a choice of vLLM 0.26.0"),
    (["--tensor-parallel-size", "3"], "tensor-parallel", "needs 3 GPUs; profile dgx-spark has 1"),
])
def test_values_vllm_rejects_are_refused(specdraft_cli, tree, args, check, words):
    code, plan = _plan(specdraft_cli, "--target", TARGET, "--draft", DRAFT, "--vllm-root", tree("0.26.0"), *args)
    assert code == ExitCode.ATTENTION and words in _errors(plan)[check], plan["findings"]


@pytest.mark.parametrize("method, draft", [("draft_model", DRAFT), ("mtp", "google/gemma-4-31B-it-assistant")])
def test_a_draft_tensor_parallel_size_other_than_1_or_the_targets_is_refused(specdraft_cli, method, draft):
    code, plan = _plan(specdraft_cli, "--target", TARGET, "--draft", draft, "--method", method,
                       "--draft-tensor-parallel-size", "2")
    assert code == ExitCode.ATTENTION and "draft_tensor_parallel_size=2" in _errors(plan)["draft-tensor-parallel"]


def test_a_draft_as_large_as_the_target_is_a_warning(specdraft_cli):
    code, plan = _plan(specdraft_cli, "--target", TARGET, "--draft", "google/gemma-4-31B-it", "--method",
                       "draft_model")
    warning = next(f for f in plan["findings"] if f["check"] == "draft-size")
    assert warning["level"] == "warning" and "parameters, target google/gemma-4-31B-it" in warning["message"]


def test_weights_of_a_checkpoint_without_safetensors_are_computed_and_said_to_be(specdraft_cli, tmp_path):
    target = write_checkpoint(tmp_path / "t", shipped_config(TARGET))
    code, plan = _plan(specdraft_cli, "--target", str(target), "--draft", DRAFT)
    assert plan["target"]["weight_bytes"] > 50 * 2**30
    assert plan["target"]["weight_bytes_basis"].startswith("computed from config.json")
    assert not any("counted as 0" in f["message"] for f in plan["findings"])
