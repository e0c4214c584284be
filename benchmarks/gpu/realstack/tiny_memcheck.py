"""The tiny patched draft_model pair (make_tiny.py + fix_ckpt.py shapes: a 31B-like target, an E2B-like draft
with KV-shared layers) with 4 sequences in flight, eager, hybrid KV manager off, K = 4: run under
``compute-sanitizer --tool memcheck`` to see whether the layout the KV-sharing hotfixes produce makes a GPU
kernel read or write out of bounds. usage: tiny_memcheck.py TINY_DIR OUT_JSON
Run with PYTORCH_NO_CUDA_MEMORY_CACHING=1 so each tensor is its own allocation (memcheck sees only accesses
outside every allocation; the caching allocator's pooled blocks would hide an overrun into a neighbour) and
VLLM_ENABLE_V1_MULTIPROCESSING=0 (the engine in this process)."""
import json
import os
import sys
import time
import traceback

tiny, out = sys.argv[1], sys.argv[2]
rec = {"tag": "tiny_pair_memcheck", "seqs": 4}
t0 = time.time()
try:
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    llm = LLM(model=f"{tiny}/target", max_model_len=1024, dtype="bfloat16", enforce_eager=True, max_num_seqs=4,
              gpu_memory_utilization=0.08, seed=0, disable_hybrid_kv_cache_manager=True,
              speculative_config={"model": f"{tiny}/draft", "num_speculative_tokens": 4, "method": "draft_model",
                                  "draft_tensor_parallel_size": 1})
    vc = llm.llm_engine.vllm_config
    rec["attn_backend"] = str(vc.attention_config.backend)
    rec["flash_attn_version"] = vc.attention_config.flash_attn_version
    prompts = [TokensPrompt(prompt_token_ids=[2] + [10 + (i * 7 + j) % 400 for j in range(5 + 37 * i)])
               for i in range(4)]
    outs = llm.generate(prompts, SamplingParams(temperature=0.0, max_tokens=48, ignore_eos=True))
    rec["tokens_out"] = [len(o.outputs[0].token_ids) for o in outs]
    rec["ok"] = True
except BaseException as e:  # noqa: BLE001  (record whatever stops it)
    rec["ok"] = False
    rec["error"] = f"{type(e).__name__}: {e}"[:2000]
    rec["tb_tail"] = traceback.format_exc()[-3000:]
rec["wall_s"] = round(time.time() - t0, 1)
print("TINYRESULT", json.dumps(rec)[:1500], flush=True)
with open(out, "a") as f:
    f.write(json.dumps(rec) + "\n")
os._exit(0)
