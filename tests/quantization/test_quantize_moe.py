"""The real ModelOpt on the CPU, on the testbed's tiny 26B-A4B-shaped MoE target: NVFP4 experts per expert,
in ModelOpt's layout or under ``.moe.experts.{id}.`` as community checkpoints store them."""

import json
import re

import pytest

from specdraft.checkpoints import inspect_checkpoint
from specdraft.cli import main
from specdraft.errors import UserError
from specdraft.planning.facts.moe_layout import stores_experts_apart
from specdraft.planning.decisions.moe_backend import is_nvfp4_moe_target
from specdraft.quantization import check_quantization, read_quantization
from specdraft.quantization.quantize import plan_quantization, quantize_draft
from tools.testbed.tiny_moe import MOE_TARGET_CONFIG, build_tiny_moe

from .test_quantize import tensor_dtypes

pytest.importorskip("modelopt.torch.quantization", reason="the quantize extra (nvidia-modelopt) is not installed")

EXPERT = re.compile(r"^model\.layers\.\d+\.(?P<prefix>moe\.)?experts\.(?P<id>\d+)\.(?P<proj>gate_proj|up_proj|down_proj)\.")


@pytest.fixture(scope="module")
def tiny_moe(tmp_path_factory):
    return build_tiny_moe(tmp_path_factory.mktemp("tiny-moe"))


@pytest.fixture(scope="module", params=[False, True], ids=["modelopt-layout", "moe-prefix"])
def moe_export(request, tiny_moe, tmp_path_factory):
    plan = plan_quantization(tiny_moe.fused, "nvfp4", moe_prefix=request.param)
    out = tmp_path_factory.mktemp("moe-out") / "nvfp4"
    return request.param, quantize_draft(plan, out, calib="random-tokens", samples=2, max_seq_len=32,
                                         progress=lambda _: None)


def test_every_expert_is_exported_per_expert_in_nvfp4_and_the_router_stays_bf16(moe_export):
    moe_prefix, result = moe_export
    dtypes = tensor_dtypes(result.out_dir)
    experts = {(m["id"], m["proj"]) for name in dtypes if (m := EXPERT.match(name))}
    assert len(experts) == MOE_TARGET_CONFIG["num_experts"] * 3
    prefixes = {bool(m["prefix"]) for name in dtypes if (m := EXPERT.match(name))}
    assert prefixes == {moe_prefix}
    weights = [name for name in dtypes if EXPERT.match(name) and name.endswith("_proj.weight")]
    assert weights and all(dtypes[name] == "U8" for name in weights)
    assert all(dtypes[name.replace(".weight", ".weight_scale")] == "F8_E4M3" for name in weights)
    assert not any("experts.gate_up_proj" in name for name in dtypes)
    assert all(dtype == "BF16" for name, dtype in dtypes.items() if ".router." in name)


def test_the_export_reads_back_as_an_nvfp4_moe_target_that_stores_its_experts_apart(moe_export):
    _, result = moe_export
    info = read_quantization(result.out_dir)
    assert info.vllm_quantization == "modelopt_fp4" and info.scheme == "nvfp4"
    assert not [f for f in check_quantization(info) if f.level == "error"]
    assert any(".experts.0.gate_proj" in module for module in info.quantized_modules)
    checkpoint = inspect_checkpoint(str(result.out_dir))
    assert is_nvfp4_moe_target(checkpoint) and stores_experts_apart(checkpoint)
    config = json.loads((result.out_dir / "config.json").read_text())
    assert config["enable_moe_block"] and config["num_experts"] == MOE_TARGET_CONFIG["num_experts"]


def test_a_bf16_moe_checkpoint_that_stores_its_experts_apart_is_refused(tiny_moe):
    with pytest.raises(UserError, match="stores its experts one tensor per expert"):
        plan_quantization(tiny_moe.per_expert, "nvfp4")


def test_moe_prefix_on_a_dense_model_is_refused(tmp_path, capsys):
    from specdraft.testbed.tiny import build_tiny_pair

    pair = build_tiny_pair(tmp_path / "pair")
    code = main(["quantize", "--model", str(pair.draft), "--out", str(tmp_path / "out"), "--moe-prefix", "--dry-run"])
    assert code == 2
    err = capsys.readouterr().err
    assert "--moe-prefix" in err and "no mixture-of-experts layers" in err and "Traceback" not in err


def test_dry_run_of_a_moe_target_prints_the_plan_with_the_layout(tiny_moe, tmp_path, capsys):
    code = main(["quantize", "--model", str(tiny_moe.fused), "--out", str(tmp_path / "out"), "--moe-prefix",
                 "--dry-run", "--json"])
    assert code == 0
    plan = json.loads(capsys.readouterr().out)["plan"]
    assert plan["moe_prefix"] is True and plan["architecture"] == "Gemma4ForCausalLM"
    assert not (tmp_path / "out").exists()
