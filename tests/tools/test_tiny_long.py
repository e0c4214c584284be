"""The long-window pair: its draft is the target's own layers behind silenced KV-shared ones."""

from __future__ import annotations

import json

import pytest

from tools.testbed.tiny_long import DRAFT_WINDOW, TARGET_WINDOW, build_long_pair


@pytest.fixture(scope="module")
def tensors(tmp_path_factory):
    from safetensors.torch import load_file

    pair = build_long_pair(tmp_path_factory.mktemp("long"))
    configs = {side: json.loads((path / "config.json").read_text()) for side, path in
               (("target", pair.target), ("draft", pair.draft))}
    return configs, {side: load_file(str(path / "model.safetensors")) for side, path in
                     (("target", pair.target), ("draft", pair.draft))}


def test_the_draft_window_is_smaller_and_its_tail_shares_kv(tensors):
    configs, _ = tensors
    assert (configs["target"]["sliding_window"], configs["draft"]["sliding_window"]) == (TARGET_WINDOW, DRAFT_WINDOW)
    assert DRAFT_WINDOW < TARGET_WINDOW
    assert configs["draft"]["num_kv_shared_layers"] == configs["target"]["num_hidden_layers"] > 0


def test_the_draft_holds_every_target_tensor_unchanged(tensors):
    _, weights = tensors
    for name, tensor in weights["target"].items():
        assert weights["draft"][name].equal(tensor), name


def test_only_the_target_layers_write_into_the_drafts_residual_stream(tensors):
    configs, weights = tensors
    first_shared = configs["draft"]["num_hidden_layers"] - configs["draft"]["num_kv_shared_layers"]
    for name, tensor in weights["draft"].items():
        shared = name.startswith("model.layers.") and int(name.split(".")[2]) >= first_shared
        if name.endswith("per_layer_projection.weight") or (
                shared and name.endswith(("self_attn.o_proj.weight", "mlp.down_proj.weight"))):
            assert not tensor.any(), name
