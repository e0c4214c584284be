"""--moe-backend for an NVFP4 MoE target: the shipped table against real release sources, and the plan's choice."""

import json
import os
import shutil
from importlib import resources

import pytest

from specdraft.checkpoints import inspect_checkpoint
from specdraft.planning import LaunchRequest, build_launch_plan
from specdraft.planning.decisions import moe_backend as _moe_backend
from specdraft.planning.decisions.moe_backend import choose_moe_backend, moe_backend_support
from tools.release_tables.moe_backend import read_moe_backend_support
from tools.release_tables.moe_kernels import Unreadable, _Platform, nvfp4_pick
from tests.planning.conftest import RELEASES, assert_every_release_read_once

TABLE = json.loads(resources.files("specdraft.planning").joinpath("data", "moe_backend.json").read_text())
# The releases where the pick on SM12x changes (0.21.0: Marlin by itself; 0.23.0: vLLM CUTLASS; 0.24.0: FlashInfer
# CUTLASS) and both ends; SPECDRAFT_ALL_RELEASES=1 reads all 21.
CHECKED = RELEASES if os.environ.get("SPECDRAFT_ALL_RELEASES") else ["0.19.0", "0.20.2", "0.21.0", "0.23.0", "0.24.0",
                                                                      "0.26.0", "0.33.0"]
NVFP4_MOE = "bg-digitalservices/Gemma-4-26B-A4B-it-NVFP4"
ASSISTANT = "google/gemma-4-26B-A4B-it-assistant"

pytestmark = pytest.mark.usefixtures("empty_hub")


def test_table_covers_every_release_from_0_19_to_0_33_once():
    assert_every_release_read_once(TABLE["rules"])
    assert moe_backend_support("0.18.1") is None and moe_backend_support(None) is None


@pytest.mark.parametrize("version", CHECKED)
def test_table_entry_is_what_the_release_source_says(release, version):
    assert read_moe_backend_support(release(version)) == moe_backend_support(version)


def _class_text(package, class_name: str) -> str:
    """The source of ``class_name`` in the release's fused-MoE package, up to the next top-level statement."""
    for path in (package / "model_executor" / "layers" / "fused_moe").rglob("*.py"):
        text = path.read_text()
        start = text.find(f"\nclass {class_name}(")
        if start >= 0:
            end = text.find("\nclass ", start + 1)
            return text[start:end if end > 0 else None]
    raise AssertionError(class_name)


@pytest.mark.parametrize("version, kernel", [("0.20.2", "CutlassExpertsFp4"), ("0.23.0", "CutlassExpertsFp4"),
                                             ("0.24.0", "FlashInferExperts")])
def test_a_cutlass_kernel_is_picked_where_its_source_lists_gemma4s_activation(release, version, kernel):
    """Independent of the evaluator: the pick is a CUTLASS kernel exactly where that kernel's
    ``_supports_activation`` names the activation Gemma 4's experts run, and it lists SM 12.x."""
    package = release(version) / "vllm"
    support = moe_backend_support(version)
    text = _class_text(package, kernel)
    activations = text[text.index("def _supports_activation"):].split("]")[0]
    assert f"MoEActivation.{support.gemma4_moe_activation}," in activations
    assert "is_device_capability_family(120)" in text[text.index("def _supports_current_device"):][:600]
    assert support.nvfp4_pick["sm121"] == {"CutlassExpertsFp4": "VLLM_CUTLASS", "FlashInferExperts": "FLASHINFER_CUTLASS"}[kernel]


def test_0_21_and_0_22_pick_marlin_on_sm12x_because_no_cutlass_kernel_takes_gelu_tanh(release):
    package = release("0.21.0") / "vllm"
    assert 'activation="gelu_tanh"' in (package / "model_executor" / "models" / "gemma4.py").read_text()
    for kernel in ("CutlassExpertsFp4", "FlashInferExperts"):
        text = _class_text(package, kernel)
        assert "GELU_TANH" not in text[text.index("def _supports_activation"):].split("]")[0]
    assert moe_backend_support("0.21.0").nvfp4_pick == {"sm90": "MARLIN", "sm121": "MARLIN"}
    assert moe_backend_support("0.22.1").nvfp4_pick["sm121"] == "MARLIN"


def test_every_release_has_the_flag_with_marlin_and_hopper_never_runs_a_cutlass_fp4_moe():
    for rule in TABLE["rules"]:
        assert "marlin" in rule["moe_backend_choices"], rule["versions"]
        assert rule["nvfp4_pick"]["sm90"] in ("MARLIN", "HUMMING"), rule["versions"]


def test_the_platform_model_is_vllms():
    """``is_device_capability_family(120)`` holds for GB10 (12.1); ``has_device_capability`` is >=."""
    gb10, h100 = _Platform(121), _Platform(90)
    assert gb10.call("is_device_capability_family", [120]) and not gb10.call("is_device_capability", [120])
    assert gb10.call("has_device_capability", [100]) and not h100.call("has_device_capability", [100])
    assert h100.call("has_device_capability", [(7, 5)]) and h100.call("is_device_capability", [90])
    with pytest.raises(Unreadable):
        h100.call("get_device_capability", [])


def test_a_selection_the_reader_cannot_evaluate_is_unreadable_not_guessed(release, tmp_path):
    tree = tmp_path / "vllm-edited"
    shutil.copytree(release("0.26.0"), tree)
    marlin = tree / "vllm" / "model_executor" / "layers" / "fused_moe" / "experts" / "marlin_moe.py"
    marlin.write_text(marlin.read_text().replace("return p.is_cuda() and p.has_device_capability((7, 5))",
                                                 "return p.is_cuda() and marlin_is_built_for(p)"))
    with pytest.raises(Unreadable, match="marlin_is_built_for"):
        nvfp4_pick(tree / "vllm", 90)
    assert read_moe_backend_support(tree) is None
    assert read_moe_backend_support(tmp_path / "nothing") is None


# the plan's choice


def test_an_nvfp4_moe_target_on_a_dgx_spark_gets_moe_backend_marlin_naming_the_kernel_it_avoids(release):
    plan = build_launch_plan(LaunchRequest(target=NVFP4_MOE, draft=ASSISTANT, vllm_root=release("0.26.0")))
    flag = plan.serve.flag("--moe-backend")
    assert flag is not None and flag.value == "marlin"
    assert "FLASHINFER_CUTLASS" in flag.reason and "NaN" in flag.reason
    assert "--moe-backend" in plan.argv and plan.argv[plan.argv.index("--moe-backend") + 1] == "marlin"


def test_a_release_that_picks_marlin_itself_gets_no_flag(release):
    plan = build_launch_plan(LaunchRequest(target=NVFP4_MOE, draft=ASSISTANT, vllm_root=release("0.21.0")))
    assert plan.serve.flag("--moe-backend") is None
    assert any(f.check == "moe-backend" and "MARLIN" in f.message and f.level == "ok" for f in plan.findings)


@pytest.mark.parametrize("target, profile", [(NVFP4_MOE, "h100"), (NVFP4_MOE, "h200"),
                                             ("google/gemma-4-26B-A4B-it", "dgx-spark"),
                                             ("nvidia/Gemma-4-31B-IT-NVFP4", "dgx-spark")])
def test_hopper_bf16_moe_and_dense_nvfp4_targets_get_no_flag(target, profile):
    assert choose_moe_backend(inspect_checkpoint(target), "0.26.0", profile) is None


def test_nvidias_own_nvfp4_26b_is_read_as_nvfp4_moe_from_the_shipped_table():
    choice = choose_moe_backend(inspect_checkpoint("nvidia/Gemma-4-26B-A4B-NVFP4"), "0.33.0", "dgx-spark")
    assert choice.value == "marlin" and "FLASHINFER_CUTLASS" in choice.reason


@pytest.mark.parametrize("version", [None, "0.18.1", "0.34.0"])
def test_a_release_outside_the_table_gets_marlin_with_a_warning(version):
    choice = choose_moe_backend(inspect_checkpoint(NVFP4_MOE), version, "dgx-spark")
    assert choice.value == "marlin" and choice.finding.level == "warning"
    assert "0.19.0-0.33.0" in choice.finding.message


def test_a_release_without_moe_backend_marlin_is_refused(monkeypatch):
    """A release whose own pick is a CUTLASS kernel and that has no ``marlin`` choice cannot serve correctly."""
    real = moe_backend_support("0.26.0")
    without = real.model_copy(update={"moe_backend_choices": tuple(c for c in real.moe_backend_choices if c != "marlin")})
    monkeypatch.setattr(_moe_backend, "moe_backend_support", lambda version: without)
    choice = choose_moe_backend(inspect_checkpoint(NVFP4_MOE), "0.26.0", "dgx-spark")
    assert choice.value is None and choice.finding.level == "error"
    assert "no --moe-backend marlin" in choice.finding.message and choice.finding.hint
