"""Build the models that agree.py compares, from the testbed's tiny pair (run here, in the dev venv).

The testbed's draft has its output projections (o_proj, down_proj, per_layer_projection) set to zero so that it
proposes "repeat the last token". ModelOpt turns an all-zero weight into NaN block scales and a zero global scale
(0/0), which is not what a real draft looks like, so the BF16 reference draft here gets small random values
N(0, 2e-3) in those tensors instead; the NVFP4 and FP8 drafts are made from it with `specdraft quantize`.
`draft_nvfp4_zeroed` quantizes the untouched testbed draft, NaN scales included, as a stress case.

With `--moe` it builds the MoE set instead: the testbed's tiny 26B-A4B-shaped target in BF16 (`moe_bf16`, experts
fused as Google publishes them) and its NVFP4 export by `specdraft quantize`, once in ModelOpt's per-expert layout
(`moe_nvfp4`: `experts.{id}.`) and once with `--moe-prefix` (`moe_nvfp4_prefix`: `.moe.experts.{id}.`, the layout of
bg-digitalservices/Gemma-4-26B-A4B-it-NVFP4).

usage: python benchmarks/gpu/agree_models.py [--moe] OUT_DIR   (writes OUT_DIR/{target,draft,draft_nvfp4,draft_fp8,
       draft_nvfp4_zeroed}, or OUT_DIR/{moe_bf16,moe_nvfp4,moe_nvfp4_prefix}; needs the `quantize` extra, i.e.
       nvidia-modelopt)
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from specdraft.testbed.tiny import build_tiny_pair
from tools.testbed.tiny_moe import build_tiny_moe

FILL_STD = 2e-3
FILL_SEED = 1


def fill_zero_tensors(checkpoint: Path) -> int:
    import torch
    from safetensors.torch import load_file, save_file

    path = checkpoint / "model.safetensors"
    tensors = load_file(path)
    gen = torch.Generator().manual_seed(FILL_SEED)
    filled = 0
    for name, tensor in tensors.items():  # file order, so the fill is reproducible
        if tensor.float().abs().max() == 0:
            tensors[name] = (torch.randn(tensor.shape, generator=gen) * FILL_STD).to(tensor.dtype)
            filled += 1
    save_file(tensors, path, metadata={"format": "pt"})
    return filled


def quantize(model: Path, out: Path, scheme: str, *extra: str) -> None:
    subprocess.run([sys.executable, "-m", "specdraft", "quantize", "--model", str(model), "--out", str(out),
                    "--scheme", scheme, "--calib", "random-tokens", *extra], check=True)


def build_moe(out: Path) -> int:
    moe = build_tiny_moe(Path("~/.cache/specdraft/tiny").expanduser())
    for name in ("moe_bf16", "moe_nvfp4", "moe_nvfp4_prefix"):
        shutil.rmtree(out / name, ignore_errors=True)
    shutil.copytree(moe.fused, out / "moe_bf16")
    quantize(moe.fused, out / "moe_nvfp4", "nvfp4")
    quantize(moe.fused, out / "moe_nvfp4_prefix", "nvfp4", "--moe-prefix")
    return 0


def main(out_dir: str) -> int:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pair = build_tiny_pair(Path("~/.cache/specdraft/tiny").expanduser())
    for name in ("target", "draft", "draft_nvfp4", "draft_fp8", "draft_nvfp4_zeroed"):
        shutil.rmtree(out / name, ignore_errors=True)
    shutil.copytree(pair.target, out / "target")
    shutil.copytree(pair.draft, out / "draft")
    quantize(pair.draft, out / "draft_nvfp4_zeroed", "nvfp4")
    print(f"draft: filled {fill_zero_tensors(out / 'draft')} all-zero tensors with N(0, {FILL_STD})")
    quantize(out / "draft", out / "draft_nvfp4", "nvfp4")
    quantize(out / "draft", out / "draft_fp8", "fp8")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--moe":
        sys.exit(build_moe(Path(sys.argv[2])))
    sys.exit(main(sys.argv[1]) if len(sys.argv) == 2 else (print(__doc__), 2)[1])
