#!/usr/bin/env bash
# Build vLLM 0.26.0 for the lent GPU machine WITH the GPU kernel packages that vLLM 0.26.0 declares
# (Requires-Dist of its wheel): flashinfer-python 0.6.14, nvidia-cutlass-dsl[cu13] 4.6.0 (FA4's CuTe DSL
# compiler), quack-kernels (0.6.1: the newest that accepts cutlass-dsl 4.6.0), and their own needs; FA4's
# vllm_flash_attn/cute kept; the MoE ops kept (26B-A4B targets); the server wheels included.
# Based on ../shared/device/build_stage.sh and server_wheels.sh (the offline recipe, which strips all of these).
# Runs here (CPU machine). Usage: build_real_stage.sh OUTDIR [PART_MIB]
# Produces OUTDIR/pN/stack.partI (each under one call's 64 MiB carry limit together with the ~11 MiB repo) and
# OUTDIR/parts.sha256 (the last part also carries the zstandard wheel): the device reassembles them with install_parts.sh while the machine stays warm.
set -euo pipefail
OUT=${1:?usage: build_real_stage.sh OUTDIR [PART_MIB]}; PART=${2:-50}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/stage_lib.sh"  # CACHE, the pip options P, pack_parts
W=$CACHE/wheels; D=$CACHE/deps; K=$CACHE/kernels; SV=$CACHE/server; S=$CACHE/realstage
mkdir -p "$W" "$D" "$K" "$SV" "$OUT"
if [ -z "${REUSE_STAGE:-}" ] || [ ! -d "$S/site/vllm" ]; then  # REUSE_STAGE=1: only re-pack an earlier staging
rm -rf "$S"; mkdir -p "$S/site" "$S/sdsite"
ls "$W"/vllm-0.26.0-*.whl >/dev/null 2>&1 || python3 -m pip download -q --no-deps --only-binary=:all: vllm==0.26.0 -d "$W"
# 1. The offline recipe's pure-Python needs (build_stage.sh's list, unchanged).
# shellcheck disable=SC2086
python3 -m pip download -q $P -d "$D" pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 \
  typing-inspection==0.4.5 typing-extensions==4.16.0 cachetools==8.0.2 cbor2==6.3.0 pyzmq==27.3.0 msgspec==0.22.0 \
  pybase64==1.5.1 openai==3.57.0 httpx2==2.16.2 httpcore2==2.16.2 sniffio==1.3.1 jiter==0.19.0 openai-harmony==0.0.8 \
  partial-json-parser==0.2.1.1.post7 fastapi==0.136.3 starlette==1.10.0 llguidance==1.7.6 xgrammar==0.2.7 \
  apache-tvm-ffi==0.1.10 setproctitle==1.3.8 blake3==1.0.11 depyf==0.20.0 astor==0.8.1 dill==0.4.1 truststore==0.10.5 \
  anyio==4.16.0 idna==3.20 tokenizers==0.22.2 transformers==5.14.1
# 2. The GPU kernel packages vLLM 0.26.0 requires, and what they require that the device image lacks.
#    nvidia-cutlass-dsl also names nvidia-cutlass-dsl-libs-cu12 unconditionally: not carried (cu13 torch; the
#    cu13 libs are what [cu13] selects). No flashinfer-cubin / flashinfer-jit-cache 0.6.14 exists on PyPI
#    (cubin stops at 0.6.13, jit-cache is not on PyPI): FlashInfer JIT-compiles its kernels with nvcc there.
# shellcheck disable=SC2086
python3 -m pip download -q $P -d "$K" flashinfer-python==0.6.14 nvidia-cutlass-dsl==4.6.0 \
  nvidia-cutlass-dsl-libs-base==4.6.0 nvidia-cutlass-dsl-libs-core==4.6.0 nvidia-cutlass-dsl-libs-cu13==4.6.0 \
  quack-kernels==0.6.1 cuda-python==13.4.4 cuda-bindings==13.4.4 cuda-core==1.2.2 cuda-pathfinder==1.9.1 \
  protobuf==6.33.6 nvidia-cuda-nvdisasm==13.5.37 cuda-tile==1.7.0 nvidia-cudnn-frontend==1.25.0 \
  nvidia-ml-py==13.615.71 torch-c-dlpack-ext==0.1.5 einops==0.8.2 tabulate==0.10.0 click==8.5.1 ninja==1.13.2
# 3. The HTTP server's wheels (server_wheels.sh's list).
SHARED=${SHARED:-$HERE/../../../../shared/device}  # the read-only recipe beside the checkout
ls "$SV"/uvicorn-*.whl >/dev/null 2>&1 || bash "$SHARED/server_wheels.sh" "$SV" >/dev/null 2>&1
python3 -m pip install -q --no-compile $P --target "$S/site" "$D"/*.whl "$K"/*.whl
python3 -m pip install -q --no-compile $P --target "$S/sdsite" "$SV"/*.whl
# 4. vLLM itself: strip only what Hopper never loads (FA2: FA3/FA4 serve sm90; the Rust front end; DeepGEMM and the
#    sm100 FMHA). Kept, unlike the offline recipe: vllm_flash_attn/cute (FA4) and _moe_C (MoE targets).
unzip -q -o "$W"/vllm-0.26.0-*.whl -d "$S/site" -x 'vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so' \
  'vllm/vllm-rs' 'vllm/third_party/deep_gemm/*' 'vllm/third_party/fmha_sm100/*'
find "$S" -name __pycache__ -prune -exec rm -rf {} +
fi
du -sh "$S/site" "$S/sdsite"
# 5. Parts (stage_lib.sh).
pack_parts "$OUT" "$PART" "$S" site sdsite
ls -la "$OUT"/p*/
