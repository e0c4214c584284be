#!/usr/bin/env bash
# One device call of the real-stack runs, from the repository root, with this folder carried as TOOLS.
#   call.sh parts PART_DIR...            environment report + collect/unpack the stack parts (install_parts.sh)
#   call.sh work DEADLINE_S SCENARIO...  (parts too, when the last one is carried) checks once, patch apply once,
#                                        then served_real.py with the scenarios
#   call.sh lanes DEADLINE_S "JOBS0" "JOBS1"...  jobs of ../jobs.txt (and v2kv) on the staged stack, a lane per GPU
#   call.sh tiny DEADLINE_S              the tiny patched draft_model pair under compute-sanitizer memcheck
# Output to files under $OUT (vLLM output never through a pipe). STACK: the carried parts' folder
# (.device-gpu/stack, the 0.26.0 stack; build_newer_stage.sh's go to e.g. .device-gpu/stack-0.33.0).
set -u
TOOLS=$(cd "$(dirname "$0")" && pwd); MODE=$1; shift
O=${OUT:-/tmp/out}; mkdir -p "$O"
STACK=${STACK:-.device-gpu/stack}
# PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK: a newer stack's torch runs on the image's cuDNN 9.19 (build_newer_stage.sh
# says why); a no-op for the image's own torch.
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false CUDA_DEVICE_ORDER=PCI_BUS_ID \
  NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK=1
# nvidia-cutlass-dsl puts its `cutlass` package on sys.path through a .pth file, which a PYTHONPATH entry does not
# process: name that folder too.
SITE=/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages:/tmp/sdsite:$PWD
PY=$(command -v python3)
T0=$(date +%s)
prepare() {  # install the carried stack (once per warm machine) and check that it imports and runs its kernels
  bash "$TOOLS/install_parts.sh" "$STACK"/p* || { echo "stack not installed"; exit 3; }
  if ! grep -q "checks rc=0" /tmp/site/.checks.txt 2>/dev/null; then
    PYTHONPATH=$SITE timeout 300 python3 - > /tmp/site/.checks.txt 2>&1 <<'PY'
import time, torch, triton
print("torch", torch.__version__, "cuda", torch.version.cuda, "| cudnn", torch.backends.cudnn.version(),
      "| nccl", torch.cuda.nccl.version(), "| triton", triton.__version__, "|", torch.__file__)
t = time.time()
import vllm, flashinfer, cutlass, quack
print("vllm", vllm.__version__, "| flashinfer", flashinfer.__version__, "| cutlass-dsl", getattr(cutlass, "__version__", "?"),
      "| quack", getattr(quack, "__version__", "?"), f"| imports {time.time()-t:.1f} s")
from vllm.vllm_flash_attn.flash_attn_interface import is_fa_version_supported, fa_version_unsupported_reason
for v in (3, 4):
    print(f"FA{v} supported:", is_fa_version_supported(v), fa_version_unsupported_reason(v))
import flashinfer.jit as fj
print("flashinfer jit dir:", getattr(fj, "FLASHINFER_JIT_DIR", None) or getattr(getattr(fj, "env", None), "FLASHINFER_JIT_DIR", None))
q = torch.randn(8, 256, dtype=torch.bfloat16, device="cuda")
k = torch.randn(2048, 4, 256, dtype=torch.bfloat16, device="cuda"); v = torch.randn_like(k)
t = time.time(); o = flashinfer.single_decode_with_kv_cache(q, k, v); torch.cuda.synchronize()
print(f"flashinfer single_decode head_dim 256 bf16: first call (JIT build + run) {time.time()-t:.1f} s")
t = time.time(); o = flashinfer.single_decode_with_kv_cache(q, k, v); torch.cuda.synchronize()
print(f"  second call {time.time()-t:.3f} s")
PY
    echo "checks rc=$?" >> /tmp/site/.checks.txt
    ls -la ~/.cache/flashinfer 2>/dev/null | head -5 >> /tmp/site/.checks.txt
  fi
  cp /tmp/site/.checks.txt "$O/checks.txt"; cat /tmp/site/.checks.txt
}
case $MODE in
parts)
  if [ ! -f /root/stash/env.txt ]; then
    mkdir -p /root/stash
    { date -u; nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv
      echo "nvcc: $(command -v nvcc) $(nvcc --version 2>&1 | tail -2 | tr '\n' ' ')"; echo "CUDA_HOME=${CUDA_HOME:-unset}"
      echo "compute-sanitizer: $(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>&1)"
      python3 - <<'PY'
import importlib.metadata as m
for n in ["torch", "triton", "flashinfer-python", "flashinfer-cubin", "nvidia-cutlass-dsl", "quack-kernels",
          "cuda-python", "cuda-bindings", "cuda-core", "protobuf", "ninja", "einops", "nvidia-cudnn-frontend",
          "nvidia-ml-py", "apache-tvm-ffi", "tabulate", "click", "nvidia-cuda-nvdisasm", "cuda-tile",
          "torch-c-dlpack-ext", "transformers", "numpy"]:
    try: print(f"image has {n} {m.version(n)}")
    except m.PackageNotFoundError: print(f"image lacks {n}")
PY
      echo "image packages:"; python3 -m pip list --format=freeze 2>/dev/null | tr '\n' ' '; echo
    } > /root/stash/env.txt 2>&1
  fi
  cp /root/stash/env.txt "$O/env.txt"; cat /root/stash/env.txt
  bash "$TOOLS/install_parts.sh" "$@"; echo "parts rc=$? in $(( $(date +%s) - T0 )) s";;
work)
  DEADLINE=$1; shift
  prepare || exit 3
  if [ ! -f /tmp/site/.specdraft_patched ]; then
    { echo "\$ specdraft patch apply"; PYTHONPATH=$SITE python3 -m specdraft patch apply --python "$PY"; a=$?; echo "rc=$a"
      [ $a -eq 0 ] && touch /tmp/site/.specdraft_patched
    } > /root/stash/patch.txt 2>&1
  fi
  cp /root/stash/patch.txt "$O/patch.txt"; tail -5 /root/stash/patch.txt
  left=$(( DEADLINE - ($(date +%s) - T0) ))
  PYTHONPATH=$SITE python3 "$TOOLS/served_real.py" --out "$O" --deadline-s "$left" "$@" > "$O/driver.log" 2>&1
  echo "driver rc=$?"; grep -E "^ROW|not starting|deadline|driver done|profile" "$O/driver.log";;
lanes)
  # sweep.py jobs of jobs.txt (and v2kv) on the staged stack, one lane per GPU (lanes.sh, device_run.sh)
  DEADLINE=$1; shift
  prepare || exit 3
  STAGED_STACK=1 OUT=$O bash "$TOOLS/../lanes.sh" $(( DEADLINE - ($(date +%s) - T0) )) "$@";;
tiny)
  DEADLINE=$1; shift
  FINAL_O=$O; O=/tmp/tiny-out; rm -rf "$O"; mkdir -p "$O"
  [ -d /tmp/tiny/draft ] || { PYTHONPATH=$SITE python3 "$TOOLS/make_tiny.py" /tmp/tiny > "$O/tiny_make.log" 2>&1; PYTHONPATH=$SITE python3 "$TOOLS/fix_ckpt.py" /tmp/tiny/draft >> "$O/tiny_make.log" 2>&1; }
  CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  left=$(( DEADLINE - ($(date +%s) - T0) ))
  PYTHONPATH=$SITE VLLM_ENABLE_V1_MULTIPROCESSING=0 PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout -k 10 "$left" \
    "$CS" --tool memcheck --target-processes all --print-limit 50 --log-file "$O/memcheck.txt" \
    python3 "$TOOLS/tiny_memcheck.py" /tmp/tiny "$O/tiny.jsonl" > "$O/tiny_run.log" 2>&1
  echo "sanitizer rc=$? in $(( $(date +%s) - T0 )) s" >> "$O/tiny_run.log"
  tar -C /tmp -czf "$FINAL_O/tiny.tar.gz" tiny-out
  tail -1 "$O/tiny_run.log"; grep -hE "ERROR SUMMARY|Invalid|TINYRESULT" "$O/memcheck.txt" "$O/tiny_run.log" | head -20;;
esac
