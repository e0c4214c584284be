"""The tiny 26B-A4B-shaped MoE target: one set of weights, experts fused and stored per expert."""

from __future__ import annotations

import pytest

from tools.testbed.tiny_moe import MOE_TARGET_CONFIG, PER_EXPERT_PREFIX, build_tiny_moe


@pytest.fixture(scope="module")
def moe(tmp_path_factory):
    return build_tiny_moe(tmp_path_factory.mktemp("tiny-moe"))


def _tensors(directory):
    from safetensors.torch import load_file

    return load_file(str(directory / "model.safetensors"))


def test_second_build_reuses_the_checkpoints_without_rewriting_them(moe):
    written = (moe.per_expert / "model.safetensors").stat().st_mtime_ns
    assert build_tiny_moe(moe.fused.parent.parent) == moe
    assert (moe.per_expert / "model.safetensors").stat().st_mtime_ns == written


def test_target_is_shaped_like_the_26b_a4b():
    assert MOE_TARGET_CONFIG["enable_moe_block"] and MOE_TARGET_CONFIG["attention_k_eq_v"]
    assert MOE_TARGET_CONFIG["top_k_experts"] < MOE_TARGET_CONFIG["num_experts"]
    assert MOE_TARGET_CONFIG["layer_types"] == ["sliding_attention"] * 5 + ["full_attention"]


def test_per_expert_layout_holds_the_fused_weights_one_expert_at_a_time(moe):
    fused, per_expert = _tensors(moe.fused), _tensors(moe.per_expert)
    experts, moe_width = MOE_TARGET_CONFIG["num_experts"], MOE_TARGET_CONFIG["moe_intermediate_size"]
    layers = MOE_TARGET_CONFIG["num_hidden_layers"]
    assert not [name for name in per_expert if ".experts.gate_up_proj" in name or ".experts.down_proj" in name]
    assert len(per_expert) == len(fused) - 2 * layers + 3 * experts * layers
    for layer in range(layers):
        gate_up, down = (fused[f"model.layers.{layer}.experts.{proj}"] for proj in ("gate_up_proj", "down_proj"))
        for expert in range(experts):
            prefix = f"model.layers.{layer}{PER_EXPERT_PREFIX}{expert}."
            assert per_expert[prefix + "gate_proj.weight"].equal(gate_up[expert, :moe_width])
            assert per_expert[prefix + "up_proj.weight"].equal(gate_up[expert, moe_width:])
            assert per_expert[prefix + "down_proj.weight"].equal(down[expert])
    shared = set(fused) & set(per_expert)
    assert all(fused[name].equal(per_expert[name]) for name in shared) and "model.layers.0.router.proj.weight" in shared
