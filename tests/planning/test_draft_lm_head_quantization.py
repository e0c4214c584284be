"""``draft_lm_head_quantization`` (vLLM 0.33.0, Model Runner V2) quantizes a drafter's copy of the target's lm_head.
No Gemma 4 drafter shares one, so a plan given it after ``--`` is an error naming vLLM's own refusal, per method and
release; the quoted refusals are read back from the 0.33.0 source."""

import json
from pathlib import Path

import pytest

from specdraft.planning.knowledge.methods import (DRAFT_LM_HEAD_SINCE, check_draft_lm_head_quantization,
                                                  given_speculative_option)

TARGET_31B = "google/gemma-4-31B-it"
REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "benchmarks/gpu/configs"


@pytest.fixture(scope="module")
def tree():
    from tools.release_trees import release_tree

    return lambda version: release_tree(version, progress=lambda line: None)


def _error(tree, version, **fields):
    from specdraft.planning import LaunchRequest, build_launch_plan

    plan = build_launch_plan(LaunchRequest(profile="h200", vllm_root=tree(version), **fields))
    found = [f for f in plan.findings if f.check == "draft-lm-head-quantization"]
    return found[0] if found else None


GIVEN = ["--speculative-config.draft_lm_head_quantization", "fp8"]


@pytest.mark.parametrize("draft, method, refusal", [
    ("google/gemma-4-31B-it-assistant", None, "'draft_lm_head_quantization is not supported for method 'mtp''"),
    (str(CONFIGS / "eagle3_31b"), None, "'draft_lm_head_quantization needs a drafter that shares the target lm_head.'"),
    (str(CONFIGS / "dflash_31b"), None, "'draft_lm_head_quantization is not supported for method 'dflash''"),
    ("google/gemma-4-E2B-it", "draft_model", "not supported for method 'draft_model'"),
])
def test_every_gemma4_drafter_is_refused_with_vllms_own_reason(tree, draft, method, refusal):
    finding = _error(tree, "0.33.0", target=TARGET_31B, draft=draft, extra_args=GIVEN,
                     **({"method": method} if method else {}))
    assert finding.level == "error" and refusal in finding.message
    assert finding.hint.startswith("drop draft_lm_head_quantization")


def test_a_release_before_the_option_refuses_the_key(tree):
    finding = _error(tree, "0.32.0", target=TARGET_31B, draft="google/gemma-4-31B-it-assistant",
                     extra_args=["--speculative-config", json.dumps({"draft_lm_head_quantization": "nvfp4"})])
    assert "vLLM 0.32.0 has no such option (0.33.0 added it)" in finding.message


def test_a_plan_without_the_option_says_nothing_about_it(tree):
    assert _error(tree, "0.33.0", target=TARGET_31B, draft="google/gemma-4-31B-it-assistant") is None
    assert check_draft_lm_head_quantization(["--speculative-config.method", "mtp"], "0.33.0", "mtp") is None
    assert given_speculative_option(["--speculative-config", '{"draft_lm_head_quantization": 8}'],
                                    "draft_lm_head_quantization") is None


def test_the_option_and_the_quoted_refusals_are_in_the_release_sources(tree):
    config = (tree(DRAFT_LM_HEAD_SINCE) / "vllm/config/speculative.py").read_text()
    assert "draft_lm_head_quantization: Literal[\"fp8\", \"nvfp4\"] | None = None" in config
    assert "Gemma-4 MTP scores tied embedding rows directly; no lm_head to share." in config
    assert '"draft_lm_head_quantization is not supported for method "' in config
    assert "draft_lm_head_quantization" not in (tree("0.32.0") / "vllm/config/speculative.py").read_text()
    eagle = (tree(DRAFT_LM_HEAD_SINCE) / "vllm/v1/worker/gpu/spec_decode/eagle/utils.py").read_text()
    assert "draft_lm_head_quantization needs a drafter that shares the target lm_head." in eagle
    speculator = json.loads((CONFIGS / "eagle3_31b/config.json").read_text())
    assert speculator["draft_vocab_size"] == 32000 and speculator["tie_word_embeddings"] is False
