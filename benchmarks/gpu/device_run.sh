#!/usr/bin/env bash
# On the GPU machine: the GPU proof of the KV-sharing hotfixes and the num_speculative_tokens sweep.
# usage (from the repository root, with the staged folders carried, see docs/gpu/README.md):
#   bash .device/tools/device_run.sh DEADLINE_S JOB...
# Jobs run in the order given, one vLLM engine per process; a job already done on this machine (while it
# stays warm, /tmp survives between calls) is skipped, and a job that would not finish before DEADLINE_S
# seconds is left for the next call. Results accumulate in /tmp/gpusweep/results.jsonl and are copied to
# $OUT after every job, so a call cut short still returns what it measured.
# Two lanes on a two-GPU machine: run `device_run.sh D patch` first (it installs and patches once), then one
# device_run.sh per GPU with CUDA_VISIBLE_DEVICES=I and GPUSWEEP_DIR=/tmp/gpusweep-I (state, results and the
# GPU-memory wait are per lane; CUDA_DEVICE_ORDER=PCI_BUS_ID makes CUDA's index nvidia-smi's).
# Jobs: unpatched | patch | k0 | k0_hybrid | draft | draft_fp8 | draft_nvfp4 | k<N> | k<N>@<alphas>
#       | k<N>_fp8draft | k<N>_nvfp4draft | any TAG listed in jobs.txt beside this script ("TAG SWEEP-ARGS...")
set -u
T0=$(date +%s)
DEADLINE=${1:?usage: device_run.sh DEADLINE_S JOB...}; shift
TOOLS=$(cd "$(dirname "$0")" && pwd)
S=${GPUSWEEP_DIR:-/tmp/gpusweep}; R=$S/results.jsonl; O=${OUT:-/tmp/out}
mkdir -p "$S/logs" "$S/done" "$O"
touch "$R"
# The dsl_packages entry and the cuDNN check matter only when /tmp/site holds a real stack (realstack/call.sh says why).
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages:/tmp/sdsite \
  VLLM_USE_V2_MODEL_RUNNER=0 VLLM_USE_FLASHINFER_SAMPLER=0 PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK=1 \
  TOKENIZERS_PARALLELISM=false VLLM_ENABLE_V1_MULTIPROCESSING=0 REAL=/tmp/real CUDA_DEVICE_ORDER=PCI_BUS_ID
GPU=${CUDA_VISIBLE_DEVICES:-0}; GPU=${GPU%%,*}
PY=$(command -v python3)

log() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$S/driver.log"; }
publish() {
  cp "$R" "$O/results.jsonl"; cp "$S/driver.log" "$O/driver.log" 2>/dev/null
  [ -f "$S/patch.log" ] && cp "$S/patch.log" "$O/patch.log"
  ls "$S"/traces/*.gz >/dev/null 2>&1 && { mkdir -p "$O/traces"; cp "$S"/traces/*.gz "$O/traces/"; }
  tar -C "$S" -cJf "$O/logs.tar.xz" logs 2>/dev/null
}

# STAGED_STACK=1: /tmp/site already holds a whole vLLM stack (realstack/call.sh lanes installed it), nothing to install
if [ -z "${STAGED_STACK:-}" ]; then
  bash "$TOOLS/install.sh" "" .device/stage2 || { log "INSTALL FAILED (a cold machine needs stage1 first)"; exit 3; }
  # MoE targets need vLLM's MoE ops, which the recipe's stage 2 strips; they travel alone (40 MiB, see docs/gpu/README.md)
  [ -f /tmp/site/vllm/_moe_C_stable_libtorch.abi3.so ] || [ ! -f /root/stash/_moe_C_stable_libtorch.abi3.so ] \
    || cp /root/stash/_moe_C_stable_libtorch.abi3.so /tmp/site/vllm/
  [ -d /tmp/sdsite/libcst ] && [ -d /tmp/sdsite/compressed_tensors ] || "$PY" -m pip install -q --no-index --no-deps --no-compile --target /tmp/sdsite .device/whl/*.whl
fi
mkdir -p /tmp/real && cp -r "$TOOLS/configs/." /tmp/real/
[ -f "$S/gpu.txt" ] || {
  nvidia-smi -i "$GPU" --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv > "$S/gpu.txt"
  "$PY" -c "import torch, vllm, transformers; print('torch', torch.__version__, '| vllm', vllm.__version__, '| transformers', transformers.__version__)" >> "$S/gpu.txt" 2>&1
}
cp "$S/gpu.txt" "$O/gpu.txt"; cat "$S/gpu.txt"

# Seconds a job is expected to take; a pair's estimate is the longest pair seen on this machine so far.
estimate() {
  case $1 in
    unpatched) echo 90;; patch) echo 90;;
    k0|k0_hybrid|draft*) [ -f "$S/done/k0" ] && echo 110 || echo 170;;
    *) [ -f "$S/pair_max_s" ] && echo $(( $(cat "$S/pair_max_s") + 15 )) || echo 240;;
  esac
}

note_pair_time() {  # the longest successful pair job so far sets the estimate for the next one (uses $t, $rc)
  local d=$(( $(date +%s) - t )) m
  m=$(cat "$S/pair_max_s" 2>/dev/null || echo 0)
  [ "$rc" -eq 0 ] && [ "$d" -gt "$m" ] && echo "$d" > "$S/pair_max_s"
}

ensure_patched() {
  [ -f /tmp/site/.specdraft_patched ] && return 0
  "$PY" -m specdraft patch apply --python "$PY" >> "$S/patch.log" 2>&1 && touch /tmp/site/.specdraft_patched
}

run_sweep() {  # TAG LIMIT_S ARGS...
  local tag=$1 limit=$2; shift 2
  # SWEEP_ARGS (optional) goes to every engine run, e.g. "--reps 8 --warmup-full"
  timeout -k 10 "$limit" "$PY" "$TOOLS/sweep.py" --tag "$tag" --out "$R" --trace-dir "$S/traces" ${SWEEP_ARGS:-} "$@" \
    > "$S/logs/$tag.log" 2>&1
}

for job in "$@"; do
  [ -f "$S/done/$job" ] && { log "skip $job (done)"; continue; }
  now=$(( $(date +%s) - T0 )); left=$(( DEADLINE - now )); need=$(estimate "$job")
  if [ "$left" -lt "$need" ]; then log "STOP before $job: ${left}s left, needs ~${need}s"; break; fi
  # wait for the previous engine's GPU memory to be released
  for _ in $(seq 20); do
    used=$(nvidia-smi -i "$GPU" --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
    [ "${used:-0}" -lt 2048 ] && break; sleep 1
  done
  log "start $job (limit ${left}s)"
  t=$(date +%s); rc=0
  line=$(grep -E "^$job( |$)" "$TOOLS/jobs.txt" 2>/dev/null | head -1)
  listed_tag=${line:+$job}  # empty unless listed
  listed=$(cut -s -d' ' -f2- <<<"$line")
  case $job in
    "$listed_tag")  # a job from jobs.txt: TAG SWEEP-ARGS...
      if ensure_patched; then
        # shellcheck disable=SC2086  # the listed arguments are meant to split
        run_sweep "$job" "$left" $listed || rc=$?
        note_pair_time
      else log "patch apply failed: listed jobs cannot run"; rc=9; fi;;
    unpatched)
      rm -f /tmp/site/.specdraft_patched
      run_sweep unpatched_pair "$left" --k 4 --alphas 0.85 --eager --expect-error "same window size" || rc=$?;;
    patch)
      {
        echo "\$ python -m specdraft patch status --python $PY"; "$PY" -m specdraft patch status --python "$PY"; echo "rc=$?"
        echo "\$ python -m specdraft patch apply --python $PY"; "$PY" -m specdraft patch apply --python "$PY"; a=$?; echo "rc=$a"
        echo "\$ python -m specdraft patch verify --probe --python $PY"; "$PY" -m specdraft patch verify --probe --python "$PY"; echo "rc=$?"
        [ $a -eq 0 ] && touch /tmp/site/.specdraft_patched
      } >> "$S/patch.log" 2>&1 || rc=$?
      tail -n 40 "$S/patch.log";;
    k0) run_sweep k0 "$left" --k 0 || rc=$?;;
    # Model Runner V2 and KV sharing: the tiny pair's six engines of v2_kv_sharing.sh, on a throwaway copy of the
    # installed vLLM (it patches and reverts in place; the other lanes' engines keep the shared install)
    v2kv)
      mkdir -p "$S/v2kv"
      [ -d /tmp/tiny/draft ] || { "$PY" "$TOOLS/realstack/make_tiny.py" /tmp/tiny && "$PY" "$TOOLS/realstack/fix_ckpt.py" /tmp/tiny/draft; } \
        > "$S/logs/v2kv-make.log" 2>&1
      rm -rf /tmp/v2kv-site; mkdir -p /tmp/v2kv-site; cp -a /tmp/site/vllm /tmp/v2kv-site/
      printf '#!/bin/sh\nPYTHONPATH=/tmp/v2kv-site:$PYTHONPATH exec %s "$@"\n' "$PY" > /tmp/v2kv-python; chmod +x /tmp/v2kv-python
      SPECDRAFT_PYTHON=$PY timeout -k 10 "$left" bash "$TOOLS/v2_kv_sharing.sh" /tmp/v2kv-python /tmp/tiny \
        "$S/v2kv/v2_kv_sharing.jsonl" > "$S/logs/v2kv.log" 2>&1 || rc=$?
      cp "$S"/v2kv/* "$O/" 2>/dev/null; cat "$S/logs/v2kv.log";;
    k0_hybrid) run_sweep k0_hybrid "$left" --k 0 --hybrid-kv on || rc=$?;;
    # The E2B shape alone runs with the hybrid KV manager on (vLLM's default): with it off, unpatched vLLM 0.26
    # dies on the draft's own KV-shared layers (KeyError, the bug hotfix kv-sharing-uniform-specs fixes).
    draft) run_sweep draft "$left" --k 0 --model draft --hybrid-kv on || rc=$?;;
    draft_fp8) run_sweep draft_fp8 "$left" --k 0 --model draft --hybrid-kv on --quant fp8 || rc=$?;;
    draft_nvfp4) run_sweep draft_nvfp4 "$left" --k 0 --model draft --hybrid-kv on --draft-dir draftE2B_nvfp4 || rc=$?;;
    k*)
      spec=${job#k}; alphas=0.85,0.70; variant=()
      case $spec in *_fp8draft) spec=${spec%_fp8draft}; variant=(--draft-quant fp8);;
                    *_nvfp4draft) spec=${spec%_nvfp4draft}; variant=(--draft-dir draftE2B_nvfp4);; esac
      case $spec in *@*) alphas=${spec#*@}; spec=${spec%@*};; esac
      if ensure_patched; then run_sweep "$job" "$left" --k "$spec" --alphas "$alphas" "${variant[@]}" || rc=$?
      else log "patch apply failed: pair jobs cannot run"; rc=9; fi
      note_pair_time;;
    *) log "unknown job $job"; rc=2;;
  esac
  d=$(( $(date +%s) - t ))
  [ "$rc" -eq 0 ] && touch "$S/done/$job"
  log "end $job rc=$rc ${d}s"
  tag=$job; [ "$job" = unpatched ] && tag=unpatched_pair
  "$PY" - "$R" "$tag" <<'PYEOF'
import json, sys
keys = ("alpha", "decode_tok_s", "step_ms", "mean_acceptance_length", "init_s", "error_seen", "error")
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("tag") == sys.argv[2]:
        print("   ", {k: (str(r[k])[:200] if k == "error" else r[k]) for k in keys if k in r})
PYEOF
  publish
done
log "driver done"
publish
