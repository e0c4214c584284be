#!/usr/bin/env bash
# On a machine with several GPUs: one job list per GPU, all at once, so single-GPU measurements share one call.
# usage (repository root, staged folders carried as for device_run.sh):
#   bash .device/tools/lanes.sh DEADLINE_S "LANE0 JOBS" "LANE1 JOBS" ...
# A lane is device_run.sh's job list, optionally led by agree:CONFIGS:MODELS_DIR (agree_run.sh, once per machine),
# or proof:METHODS (methods_proof.py serving each method from launch's argv; needs .device/srv, the server wheels).
# Each lane has its own GPU (CUDA_VISIBLE_DEVICES), its own state and results (/tmp/gpusweep-I, see device_run.sh),
# so the engines never share a GPU; install and patch run once, before the lanes start, so they never race.
# Everything lands in $OUT/lanes.tar.gz (the device returns few files) plus laneI.jsonl, the rows of each lane.
# Lanes share the host's CPUs: compare a lane's rows with target-alone rows measured while the other lanes ran too.
set -u
T0=$(date +%s); D=${1:?usage: lanes.sh DEADLINE_S JOBS0 JOBS1 ...}; shift
TOOLS=$(cd "$(dirname "$0")" && pwd); O=${OUT:-/tmp/out}; L=/tmp/lanes; mkdir -p "$L" "$O"
PY=$(command -v python3)
# The server wheels are a superset of .device/whl; installed first, device_run.sh finds libcst and skips its own.
if [ -d .device/srv ] && [ ! -f /tmp/sdsite/.srv ]; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --target /tmp/sdsite .device/srv/*.whl && touch /tmp/sdsite/.srv
fi
OUT=$L/patch bash "$TOOLS/device_run.sh" 200 patch > "$L/patch-step.log" 2>&1 || { tail -20 "$L/patch-step.log"; exit 3; }
pack() {
  for f in "$L"/lane*/results.jsonl "$L"/lane*/rows.jsonl; do
    [ -f "$f" ] && cp "$f" "$O/$(basename "$(dirname "$f")")-$(basename "$f")"
  done
  tar -C /tmp -czf "$O/lanes.tar.gz" lanes
}
pids=()
trap 'for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done; wait; pack; exit 143' TERM INT
i=0
for jobs in "$@"; do
  (
    export CUDA_VISIBLE_DEVICES=$i CUDA_DEVICE_ORDER=PCI_BUS_ID GPUSWEEP_DIR=/tmp/gpusweep-$i
    # shellcheck disable=SC2086  # a lane's jobs are meant to split
    set -- $jobs
    export OUT=$L/lane$i
    case ${1:-} in
      agree:*)
        IFS=: read -r _ configs models <<<"$1"; shift
        [ -f "$L/agree.done" ] || { OUT=$L/agree bash "$TOOLS/agree_run.sh" 200 "$configs" "$models" && touch "$L/agree.done"; };;
      proof:*)
        left=$(( D - ($(date +%s) - T0) )); mkdir -p "$OUT"
        # methods_proof.py stops its servers at its own deadline; the outer timeout only catches a hang
        PYTHONPATH=/tmp/site:/tmp/sdsite:$PWD VLLM_USE_FLASHINFER_SAMPLER=0 VLLM_USE_V2_MODEL_RUNNER=0 \
          timeout -k 10 $(( left + 40 )) "$PY" benchmarks/gpu/methods_proof.py --out "$OUT" --methods "${1#proof:}" \
          --deadline-s "$left"
        echo "proof rc=$?"; exit;;
    esac
    left=$(( D - ($(date +%s) - T0) ))
    # device_run.sh ends its job at its own deadline and publishes the job's log; the outer timeout only catches a hang
    [ $# -gt 0 ] && exec timeout -k 10 $(( left + 40 )) bash "$TOOLS/device_run.sh" "$left" "$@"
  ) > "$L/lane$i.log" 2>&1 &
  pids+=($!); i=$((i + 1))
done
wait
i=0
for _ in "$@"; do
  echo "== lane $i"; grep -E "start|end|STOP|skip|tok_s|total|FAIL|rc=|refused|served" "$L/lane$i.log" | tail -40
  last=$(ls -t "/tmp/gpusweep-$i/logs/"*.log 2>/dev/null | head -1)
  [ -n "$last" ] && grep -q "rc=[1-9]" "$L/lane$i.log" && { echo "-- tail of $last"; tail -25 "$last" | cut -c1-300; }
  i=$((i + 1))
done
pack
echo "lanes done in $(( $(date +%s) - T0 ))s"
