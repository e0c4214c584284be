#!/usr/bin/env bash
# Build a newer vLLM (0.32.0 or 0.33.0) for the lent GPU machine with the torch, triton and GPU kernel packages its
# wheel pins. The image has torch 2.11.0+cu130 (CUDA 13.0 libraries as nvidia-* wheels), triton 3.6.0 and
# transformers 5.17.0; vLLM 0.32.0 pins torch 2.13.0 (triton 3.7.1), 0.33.0 torch 2.14.0 (triton 3.8.0), both cu130
# on PyPI, so torch and triton travel and most CUDA libraries are the image's (install_parts.sh links them).
# Runs here (CPU machine). Usage: build_newer_stage.sh VERSION OUTDIR [PART_MIB]
#   VERSION: a release with a stack-VERSION.lock beside this script (its whole resolved dependency set)
#   ZLEVEL: zstd level (6)
# Produces OUTDIR/pN/stack.partI and OUTDIR/parts.sha256 like build_real_stage.sh; the device unpacks them with
# install_parts.sh into /tmp/site. Prints the staged and packed sizes and the part count.
set -euo pipefail
V=${1:?usage: build_newer_stage.sh VERSION OUTDIR [PART_MIB]}; OUT=${2:?usage: build_newer_stage.sh VERSION OUTDIR [PART_MIB]}
PART=${3:-48}  # 64 MiB a call minus the repository (13 MiB on 2026-11-28) and a margin
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/stage_lib.sh"  # CACHE, the pip options P, pack_parts
LOCK=$HERE/stack-$V.lock
[ -f "$LOCK" ] || { echo "no $LOCK: resolve vllm==$V first (see the head of stack-0.33.0.lock)" >&2; exit 2; }
P="$P --platform manylinux_2_18_x86_64"  # the NCCL wheels' tag
W=$CACHE/gpu-$V/wheels; S=$CACHE/gpu-$V/stage
mkdir -p "$W" "$OUT"
# What does not travel, and why (every other pin of the lock does):
#  - the CUDA 13.0 libraries the image's torch 2.11.0 pinned at the same version (cuda-toolkit 13.0.2 against the
#    13.0.3 that torch 2.13/2.14 pin differ only in cuBLAS 13.1.0.3 vs 13.1.1.3, one soname), nvshmem 3.4.5 (same);
#  - cuDNN (9.20/9.24 pinned, 9.19 in the image: every cudnn function torch 2.14.0 imports is in 9.19's
#    libcudnn.so.9; torch's minor-version check is skipped with PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK=1, call.sh),
#    cuSPARSELt (0.8.1 pinned, 0.8.0 in the image, every imported function present). NCCL does travel (~205 MiB):
#    torch 2.14.0's libtorch_cuda.so does not load beside the image's 2.28.9 (`undefined symbol: ncclCommResume`,
#    one of 11 functions it imports that 2.28.9 lacks);
#  - humming-kernels' CUDA 13.5 compiler wheels (nvcc, crt, nvvm, cccl: the image has nvcc 13.0 in /usr/local/cuda)
#    and nvidia-cutlass-dsl-libs-cu12 (cutlass-dsl names it unconditionally; cu13 torch uses the cu13 libs);
#  - numpy, numba, llvmlite (numba 0.65.0 wants numpy < 2.5; the image has numpy 2.5.2; numba serves only the ngram
#    proposer) and transformers (the image's 5.17.0 is inside vLLM's range);
#  - tilelang + z3-solver, tokenspeed-triton (a triton fork for tokenspeed-mla's MLA kernels), PyNvVideoCodec,
#    torchcodec, opencv-python-headless: not on a Gemma 4 text path (tilelang was left out of 0.26.0's stack too).
SKIP='cuda-toolkit|nvidia-cublas|nvidia-cuda-cupti|nvidia-cuda-nvrtc|nvidia-cuda-runtime|nvidia-cufft|nvidia-cufile'
SKIP="$SKIP|nvidia-curand|nvidia-cusolver|nvidia-cusparse|nvidia-nvjitlink|nvidia-nvtx|nvidia-nvshmem-cu13"
SKIP="$SKIP|nvidia-cudnn-cu13|nvidia-cusparselt-cu13|nvidia-cuda-nvcc|nvidia-cuda-crt|nvidia-nvvm|nvidia-cuda-cccl"
SKIP="$SKIP|nvidia-cutlass-dsl-libs-cu12|numpy|numba|llvmlite|transformers|tilelang|z3-solver|tokenspeed-triton"
SKIP="$SKIP|pynvvideocodec|torchcodec|opencv-python-headless"
# Besides vLLM's set: libcst, the one package specdraft itself adds (`specdraft patch apply` on the device).
{ grep -E '^[a-z0-9]' "$LOCK" | sed 's/ .*//' | grep -v -E "^($SKIP)=="; echo libcst==1.9.0; } > "$CACHE/gpu-$V/carried.txt"
if [ -z "${REUSE_STAGE:-}" ] || [ ! -d "$S/site/vllm" ]; then  # REUSE_STAGE=1: only re-pack an earlier staging
  # shellcheck disable=SC2086
  python3 -m pip download -q $P -d "$W" -r "$CACHE/gpu-$V/carried.txt"
  rm -rf "$S"; mkdir -p "$S/site"
  grep -v "^vllm==" "$CACHE/gpu-$V/carried.txt" > "$CACHE/gpu-$V/installed.txt"
  # shellcheck disable=SC2086
  python3 -m pip install -q --no-compile --ignore-requires-python $P --no-index --find-links "$W" --target "$S/site" -r "$CACHE/gpu-$V/installed.txt"
  # vLLM: strip what Hopper never loads (FA2: FA3/FA4 serve sm90; the Rust front end, opt-in; DeepGEMM and the
  # sm100 FMHA), as for 0.26.0. Kept: vllm_flash_attn/cute (FA4) and the MoE ops.
  unzip -q -o "$W"/vllm-"$V"-*.whl -d "$S/site" -x 'vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so' \
    'vllm/vllm-rs' 'vllm/third_party/deep_gemm/*' 'vllm/third_party/fmha_sm100/*'
  # triton: ptxas-blackwell and cupti-blackwell serve sm100+ only; the static libraries link only the profiler's
  # build; the instrumentation test library is a test.
  T=$S/site/triton
  rm -rf "$T/backends/nvidia/bin/ptxas-blackwell" "$T/backends/nvidia/lib/cupti-blackwell" \
    "$T/instrumentation/libGPUInstrumentationTestLib.so"
  find "$T/backends/nvidia/lib" -name '*_static.a' -delete
  find "$S" -name __pycache__ -prune -exec rm -rf {} +
fi
echo "carried: $(wc -l < "$CACHE/gpu-$V/carried.txt") packages ($CACHE/gpu-$V/carried.txt)"
for d in site site/torch site/triton site/vllm; do du -sh "$S/$d"; done
pack_parts "$OUT" "$PART" "$S" site
n=$(cat "$OUT/parts.count")
echo "vLLM $V stack: $(du -cb "$OUT"/p*/stack.part* | tail -1 | awk '{printf "%.1f MiB", $1/1048576}') in $n parts of $PART MiB"
