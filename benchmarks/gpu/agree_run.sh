#!/usr/bin/env bash
# benchmarks/gpu/agree_run.sh, carried as .device/tools/agree_run.sh with agree.py.
# Usage: agree_run.sh DEADLINE_S [CONFIGS [MODELS_DIR]]   (MODELS_DIR default .device/tinyq)
# On the GPU machine (from the repo root, stage1 installed by an earlier call): install stage2 + wheels, apply and
# verify both specdraft hotfixes, then agree.py over the tiny pair. Everything goes to files under $OUT.
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"; T0=$(date +%s)
bash .device/tools/install.sh "" .device/stage2 > "$O/driver.log" 2>&1 || { cat "$O/driver.log"; exit 3; }
# a MoE target needs vLLM's MoE ops, which stage 2 strips: an earlier call stashed them (docs/gpu/README.md section 6)
[ -f /tmp/site/vllm/_moe_C_stable_libtorch.abi3.so ] || [ ! -f /root/stash/_moe_C_stable_libtorch.abi3.so ] \
  || cp /root/stash/_moe_C_stable_libtorch.abi3.so /tmp/site/vllm/
[ -d /tmp/sdsite/libcst ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/sdsite .device/whl/*.whl >> "$O/driver.log" 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:/tmp/sdsite VLLM_USE_V2_MODEL_RUNNER=0 VLLM_USE_FLASHINFER_SAMPLER=0 \
  TOKENIZERS_PARALLELISM=false VLLM_ENABLE_V1_MULTIPROCESSING=0
PY=$(command -v python3)
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  $PY -c "import torch, vllm, transformers; print('torch', torch.__version__, '| vllm', vllm.__version__, '| transformers', transformers.__version__)"
} > "$O/gpu.txt" 2>&1; cat "$O/gpu.txt"
{ echo "\$ python -m specdraft patch apply --python $PY"; $PY -m specdraft patch apply --python "$PY"; echo "rc=$?"
  echo "\$ python -m specdraft patch verify --probe --python $PY"; $PY -m specdraft patch verify --probe --python "$PY"; echo "rc=$?"
} > "$O/patch.log" 2>&1; cat "$O/patch.log"
left=$(( ${1:-500} - ($(date +%s) - T0) ))
$PY .device/tools/agree.py --models "${3:-.device/tinyq}" --outdir /tmp/agree --configs "${2:-target,bf16,nvfp4,fp8}" \
  --deadline-s "$left" >> "$O/driver.log" 2>&1
cat "$O/driver.log" | grep -v "^\s*$" | tail -40
cp /tmp/agree/summary.json "$O/" 2>/dev/null
tar -C /tmp -cJf "$O/logs.tar.xz" agree
echo "total $(( $(date +%s) - T0 ))s"
