"""Start a real vLLM engine on the tiny pair, generate greedily, print one `RESULT {json}` line.

Run by the vLLM venv's python (not specdraft's), as `python engine_run.py '<json spec>'`. The engine
core and the worker run in this process (VLLM_ENABLE_V1_MULTIPROCESSING=0), so a start-up failure
surfaces here with its own type and message, and the KV cache layout can be read off both the
scheduler and the worker. Spec keys: target, draft (or null), disable_hybrid (bool), dtype,
prompts (token id lists), max_tokens, num_speculative_tokens, method (`draft_model`, the default,
or `mtp` with a Gemma 4 assistant as the draft), load_format (`auto`, or `dummy`: random weights),
kv_cache_layout (default true: report the KV cache layout), and optionally max_num_seqs (default 4),
block_size, enable_prefix_caching, and rounds: lists of prompt indices generated one `generate` call
after another in the same engine (the concurrency of each call is its length); with rounds the result
has `rounds` instead of `tokens` (per round: tokens, and per prompt the accepted draft count of each verify step).
draft_attention (default false: report, per draft layer, its own attention shape beside the spec its
attention metadata was built from).
"""

import json
import os
import sys
import time
import traceback

os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"


def kv_cache_layout(llm):
    """Blocks and page sizes as the scheduler planned them and as the worker holds them."""
    core = llm.llm_engine.engine_core.engine_core
    planned = core.scheduler.kv_cache_config
    worker_config = llm.llm_engine.collective_rpc(lambda self: self.model_runner.kv_cache_config)[0]

    def groups(config):
        out = []
        for group in config.kv_cache_groups:
            spec = group.kv_cache_spec
            per_layer = getattr(spec, "kv_cache_specs", None)
            out.append({
                "spec": type(spec).__name__,
                "layers": len(group.layer_names),
                "layers_with_spec": len(per_layer) if per_layer is not None else None,
                "page_size_bytes": spec.page_size_bytes,
                "block_size": spec.block_size,
            })
        return out

    return {
        "num_blocks": planned.num_blocks,
        "num_gpu_blocks": llm.llm_engine.vllm_config.cache_config.num_gpu_blocks,
        # Every KVCacheTensor places its layers in one backing allocation; its size is the total.
        "backing_bytes": sorted({tensor.size for tensor in planned.kv_cache_tensors}),
        "layers_with_memory": sum(len(tensor.layers) for tensor in planned.kv_cache_tensors),
        "scheduler_groups": groups(planned),
        "worker_groups": groups(worker_config),
        "worker_backing_bytes": sorted({tensor.size for tensor in worker_config.kv_cache_tensors}),
    }


def draft_attention(llm):
    """Per draft layer: its head size, KV heads and window, and those of the spec its metadata builder got."""
    def layers_and_groups(self):
        drafter = self.model_runner.drafter
        layers = self.vllm_config.compilation_config.static_forward_context
        rows = []
        for group in drafter.draft_attn_groups:
            spec = group.kv_cache_spec
            for name in group.layer_names:
                impl = layers[name].impl
                window = impl.sliding_window if impl.sliding_window not in (-1, (-1, -1)) else None
                rows.append({"layer": name, "shape": [impl.head_size, impl.num_kv_heads, window],
                             "builder_spec": [spec.head_size, spec.num_kv_heads, spec.sliding_window]})
        return rows

    return llm.llm_engine.collective_rpc(layers_and_groups)[0]


def generate_round(llm, prompts, indices, params):
    """One `generate` call over the prompts at `indices`: their tokens and per-step accepted draft counts."""
    from vllm.inputs import TokensPrompt

    outputs = llm.generate([TokensPrompt(prompt_token_ids=prompts[i]) for i in indices], params, use_tqdm=False)
    metrics = [output.outputs[0].spec_decode_metrics for output in outputs]
    return {
        "indices": list(indices),
        "tokens": [list(output.outputs[0].token_ids) for output in outputs],
        "accepted_per_step": [list(m.per_step_accepted) if m is not None else None for m in metrics],
        "drafted_per_step": [list(m.per_step_drafted) if m is not None else None for m in metrics],
    }


def main():
    spec = json.loads(sys.argv[1])
    result = {"ok": False}
    started = time.time()
    try:
        from vllm import LLM, SamplingParams
        from vllm.inputs import TokensPrompt

        options = {}
        if spec.get("draft"):
            method = spec.get("method", "draft_model")
            options["speculative_config"] = {
                "method": method,
                "model": spec["draft"],
                "num_speculative_tokens": spec.get("num_speculative_tokens", 4),
                **({"draft_tensor_parallel_size": 1} if method == "draft_model" else {}),
            }
        llm = LLM(
            model=spec["target"],
            dtype=spec.get("dtype", "bfloat16"),
            max_model_len=spec.get("max_model_len", 2048),
            max_num_seqs=spec.get("max_num_seqs", 4),
            enforce_eager=True,
            seed=0,
            disable_log_stats=False,
            disable_hybrid_kv_cache_manager=spec.get("disable_hybrid", True),
            load_format=spec.get("load_format", "auto"),
            **{key: spec[key] for key in ("block_size", "enable_prefix_caching") if key in spec},
            **({"per_request_spec_decode_metrics": "detailed"} if "rounds" in spec and spec.get("draft") else {}),
            **options,
        )
        result["startup_s"] = round(time.time() - started, 1)
        params = SamplingParams(temperature=0.0, max_tokens=spec.get("max_tokens", 32), ignore_eos=True)
        if "rounds" in spec:
            result["rounds"] = [generate_round(llm, spec["prompts"], indices, params) for indices in spec["rounds"]]
        else:
            outputs = llm.generate([TokensPrompt(prompt_token_ids=ids) for ids in spec["prompts"]], params,
                                   use_tqdm=False)
            result["tokens"] = [list(output.outputs[0].token_ids) for output in outputs]
        if spec.get("kv_cache_layout", True):  # read through internals older releases name differently
            result["kv_cache"] = kv_cache_layout(llm)
        if spec.get("draft_attention", False):
            result["draft_attention"] = draft_attention(llm)
        result["spec_decode"] = {
            metric.name.removeprefix("vllm:spec_decode_").removesuffix("_total"): metric.value
            for metric in llm.get_metrics()
            if metric.name.startswith("vllm:spec_decode_num_") and hasattr(metric, "value")
        }
        result["ok"] = True
    except BaseException as error:  # the error itself is the result
        result["error_type"] = type(error).__name__
        result["error"] = str(error)[:2000]
        result["traceback_tail"] = traceback.format_exc()[-3000:]
    result["wall_s"] = round(time.time() - started, 1)
    print("RESULT " + json.dumps(result), flush=True)
    os._exit(0)  # skip vLLM's slow, sometimes hanging teardown


if __name__ == "__main__":
    main()
