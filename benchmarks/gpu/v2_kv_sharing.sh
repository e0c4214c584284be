#!/usr/bin/env bash
# The tiny Gemma 4 pair (31B-shaped target, E2B-shaped KV-sharing draft_model) on a GPU vLLM, per model runner and
# KV cache manager, unpatched and patched: the GPU half of docs/patching.md "Per runner and release".
#
#   bash benchmarks/gpu/v2_kv_sharing.sh PYTHON PAIR_DIR [OUT]
#
# PYTHON: the interpreter of the vLLM to test (0.31.0-0.33.0; its install is patched and reverted in place, so use
# a throwaway one); PAIR_DIR: the folder holding target/ and draft/ (specdraft.testbed.build_tiny_pair, e.g.
# ~/.cache/specdraft/tiny/tiny-gemma4-c47b23e9ebff, carried). Run from the repository root; one engine per line of
# OUT (default v2_kv_sharing.jsonl; each engine's stderr beside it, OUT-STATE.log); SPECDRAFT_PYTHON: an
# interpreter with specdraft's needs (libcst, pydantic; default python3). Expected from the sources, and seen
# on an H200 with vLLM 0.33.0 (benchmarks/gpu/raw/stack-0.33.0-h200x4/call1, lane 3):
#   v2-hybrid-on            ok, speculates, no hotfix (V2's drafter takes several KV cache groups)
#   v1-hybrid-on            AssertionError: All drafting layers should belong to the same kv cache group
#   v2-flag-unpatched       ValueError: All attention layers in the same KV cache group must have the same window size.
#   v2-flag-kv-uniform      KeyError: 'draft_model.model.layers.3.self_attn.attn', a KV-shared layer (vllm/v1/worker/gpu/attn_utils.py)
#   v2-flag-both-kv         ok, speculates (drafter-attention-groups-per-spec not applied: V1 code only)
#   target-alone            ok: the tokens both serving V2 engines give too (random tiny weights: no draft token
#                           is accepted, so the speculative engines' output must equal this one's)
set -u
PY=$1 PAIR=$2 OUT=${3:-v2_kv_sharing.jsonl}
: > "$OUT"
patch() { PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} "${SPECDRAFT_PYTHON:-python3}" -m specdraft patch "$@" --python "$(command -v "$PY" || echo "$PY")" >&2; }

engine() {  # engine NAME RUNNER(0|1) DISABLE_HYBRID(true|false) [DRAFT(true|false)]
  local draft=null
  [ "${4:-true}" = true ] && draft="\"$PAIR/draft\""
  local spec="{\"target\": \"$PAIR/target\", \"draft\": $draft, \"disable_hybrid\": $3, \"dtype\": \"bfloat16\",
    \"prompts\": [[2, 10, 11, 12], [2, 105, 365, 107, 475, 438, 106, 107, 105, 369, 107], [2, 300, 301, 302, 303]],
    \"max_tokens\": 16, \"kv_cache_layout\": true}"
  local line
  line=$(VLLM_USE_V2_MODEL_RUNNER=$2 timeout 900 "$PY" tests/e2e/engine_run.py "$spec" 2>"${OUT%.jsonl}-$1.log" | grep '^RESULT ' | tail -1)
  echo "{\"state\": \"$1\", \"runner_env\": \"$2\", \"result\": ${line#RESULT }}" >> "$OUT"
  echo "$1: ${line:0:300}"
}

patch revert
engine v2-hybrid-on 1 false
engine target-alone 1 false false
engine v1-hybrid-on 0 false
engine v2-flag-unpatched 1 true
patch apply --only kv-uniform-catches-valueerror
engine v2-flag-kv-uniform 1 true
patch apply --only kv-uniform-catches-valueerror kv-sharing-uniform-specs
engine v2-flag-both-kv 1 true
patch revert
