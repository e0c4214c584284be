"""Does the Gemma-4 pair still produce the target's output when the draft is quantized? (issue 8, item 4)

Runs on the GPU machine with GPU vLLM importable (docs/gpu/README.md). Small models with real random weights
(the testbed's tiny pair), bf16, eager, greedy, ``ignore_eos``: the target alone and the pair with a BF16,
ModelOpt NVFP4 and ModelOpt FP8 draft generate the same 4 fixed token-id prompts; every token of a pair is
compared with the target alone. One vLLM engine per process: the driver spawns this script once per config
(``--one``), output to files, and the child ends with ``os._exit(0)`` (vLLM's teardown is slow).

The ``moe_*`` configs serve the tiny 26B-A4B-shaped MoE target alone (no draft): BF16 as the reference, and its
ModelOpt NVFP4 export in both per-expert layouts (``experts.{id}.`` as ModelOpt writes it, ``.moe.experts.{id}.`` as
community checkpoints ship it), with vLLM's own NVFP4 MoE backend choice and with ``moe_backend="marlin"``: does it
load, which MoE kernel ran, are the sampled tokens' logprobs finite (NaN scales show up as NaN logits) and how many
tokens agree with BF16.

usage: agree.py --models DIR --outdir DIR [--configs target,bf16,nvfp4,fp8] [--deadline-s 480]
   DIR holds the target and draft folders named in CONFIGS below (built here by agree_models.py);
   on the GPU machine agree_run.sh installs the staged vLLM, applies the hotfixes and runs this script.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import time
import traceback

from spec_counters import counter_delta, spec_counters  # beside this script (here and in .device/tools)

K = 4
NEW_TOKENS = 48
PROMPT_LENGTHS = (8, 16, 32, 64)
# config name -> (draft folder or None for the target alone, speculative_config "quantization")
CONFIGS = {
    "target": (None, None),
    "target_repeat": (None, None),
    "bf16": ("draft", None),
    "nvfp4": ("draft_nvfp4", "modelopt"),  # what a user declares; vLLM resolves it to modelopt_fp4
    "fp8": ("draft_fp8", "modelopt"),
    "nvfp4_zeroed": ("draft_nvfp4_zeroed", "modelopt"),
    "moe_bf16": (None, None),
    "moe_nvfp4": (None, None),
    "moe_nvfp4_marlin": (None, None),
    "moe_nvfp4_prefix": (None, None),
    "moe_nvfp4_prefix_marlin": (None, None),
}
# MoE config -> (target folder, moe_backend or None for vLLM's choice); the other configs serve target/.
MOE_TARGETS = {
    "moe_bf16": ("moe_bf16", None),
    "moe_nvfp4": ("moe_nvfp4", None),
    "moe_nvfp4_marlin": ("moe_nvfp4", "marlin"),
    "moe_nvfp4_prefix": ("moe_nvfp4_prefix", None),
    "moe_nvfp4_prefix_marlin": ("moe_nvfp4_prefix", "marlin"),
}


def reference_of(name: str) -> str:
    """The config whose tokens ``name`` is compared with: the BF16 MoE for the MoE configs, else the target."""
    return "moe_bf16" if name in MOE_TARGETS else "target"
KERNEL_LINE = re.compile(r"kernel|marlin|fp4|fp8|modelopt|quantiz|moe backend|\bnan\b", re.IGNORECASE)


def prompts(vocab: int) -> list[list[int]]:
    out = []
    for i, n in enumerate(PROMPT_LENGTHS):
        rng = random.Random(1000 + i)
        out.append([2] + [rng.randrange(3, vocab - 1) for _ in range(n - 1)])
    return out


def pick(delta: dict, *suffixes: str):
    return next((v for n, v in delta.items() if any(n.endswith(s) for s in suffixes)), None)


def run_one(name: str, models: str, out_path: str) -> None:
    """One engine: generate every prompt, write the record to out_path."""
    draft, quant = CONFIGS[name]
    rec = {"config": name, "draft": draft, "spec_quantization_asked": quant, "k": K if draft else 0,
           "new_tokens": NEW_TOKENS}
    t0 = time.time()
    try:
        import torch
        import vllm
        from vllm import LLM, SamplingParams
        from vllm.inputs import TokensPrompt
        rec.update(vllm=vllm.__version__, torch=torch.__version__, gpu=torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu")
        target, moe_backend = MOE_TARGETS.get(name, ("target", None))
        kw = dict(model=os.path.join(models, target), dtype="bfloat16", enforce_eager=True,
                  disable_hybrid_kv_cache_manager=True, max_model_len=1024, gpu_memory_utilization=0.3, seed=0,
                  max_num_seqs=1, skip_tokenizer_init=True, disable_log_stats=False)
        if moe_backend:
            kw["moe_backend"] = moe_backend
        rec.update(target=target, moe_backend_asked=moe_backend)
        if draft:
            spec = {"method": "draft_model", "model": os.path.join(models, draft), "num_speculative_tokens": K,
                    "draft_tensor_parallel_size": 1}
            if quant:
                spec["quantization"] = quant
            kw["speculative_config"] = spec
        llm = LLM(**kw)
        rec["init_s"] = round(time.time() - t0, 1)
        vc = llm.llm_engine.vllm_config
        rec["target_quantization"] = vc.model_config.quantization
        sc = vc.speculative_config
        if sc is not None:
            rec["draft_quantization_resolved"] = sc.draft_model_config.quantization
            rec["draft_dtype"] = str(sc.draft_model_config.dtype)
        rec["attention_backend"] = str(vc.attention_config.backend)
        vocab = llm.llm_engine.model_config.get_vocab_size()
        params = SamplingParams(temperature=0.0, max_tokens=NEW_TOKENS, ignore_eos=True, detokenize=False,
                                logprobs=0)
        # per prompt: [tokens with a logprob, of which NaN or infinite]
        rec["prompts"], rec["tokens"], rec["acceptance"], rec["non_finite_logprobs"] = [], [], [], []
        for p in prompts(vocab):
            c0 = spec_counters(llm)
            out = llm.generate([TokensPrompt(prompt_token_ids=p)], params, use_tqdm=False)
            d = counter_delta(c0, spec_counters(llm))
            rec["prompts"].append(p)
            rec["tokens"].append(list(out[0].outputs[0].token_ids))
            rec["non_finite_logprobs"].append(non_finite(out[0].outputs[0]))
            drafts = pick(d, "num_drafts", "num_drafts_total")
            acc = {"counters": d}
            if drafts:
                accepted = pick(d, "num_accepted_tokens", "num_accepted_tokens_total") or 0
                drafted = pick(d, "num_draft_tokens", "num_draft_tokens_total") or drafts * K
                acc.update(steps=drafts, accepted=accepted, drafted=drafted,
                           acceptance_rate=round(accepted / drafted, 4),
                           mean_acceptance_length=round(1 + accepted / drafts, 4))
            rec["acceptance"].append(acc)
        rec["ok"] = True
    except BaseException as exc:  # a failure is a result: record it
        rec["ok"] = False
        rec["error"] = f"{type(exc).__name__}: {exc}"[:2000]
        rec["traceback_tail"] = traceback.format_exc()[-3000:]
    rec["wall_s"] = round(time.time() - t0, 1)
    with open(out_path, "w") as f:
        json.dump(rec, f)
    print("AGREE", json.dumps({k: rec.get(k) for k in ("config", "ok", "error", "wall_s")}), flush=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def non_finite(completion) -> list[int]:
    """[sampled tokens with a logprob, those whose logprob is NaN or infinite (NaN logits)] of ``completion``."""
    chosen = [step.get(tok) for tok, step in zip(completion.token_ids, completion.logprobs or [])]
    seen = [lp.logprob for lp in chosen if lp is not None]
    return [len(seen), sum(1 for value in seen if not math.isfinite(value))]


def compare(ref: list[list[int]], got: list[list[int]]) -> dict:
    equal, prefix, first = [], [], []
    for a, b in zip(ref, got):
        equal.append(sum(x == y for x, y in zip(a, b)))
        n = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        prefix.append(n)
        first.append(None if n == len(a) == len(b) else n)
    return {"equal_per_prompt": equal, "equal_total": sum(equal), "tokens_total": sum(len(a) for a in ref),
            "matching_prefix": prefix, "first_divergence": first}


def kernel_lines(log_path: str) -> list[str]:
    try:
        lines = open(log_path, errors="replace").read().splitlines()
    except OSError:
        return []
    seen, keep = set(), []
    for line in lines:
        if KERNEL_LINE.search(line) and "with config:" not in line:
            short = re.sub(r"^.*?\] ", "", line).strip()[:300]
            if short not in seen:
                seen.add(short)
                keep.append(short)
    return keep[:40]


def run_child(command: list[str], log: str, timeout_s: float) -> int:
    """Run one engine process in its own session, output to ``log``; its whole group is killed at the timeout
    and when this driver gets SIGTERM (an engine left behind keeps GPU memory and ports)."""
    with open(log, "w") as lf:
        proc = subprocess.Popen(command, stdout=lf, stderr=subprocess.STDOUT, start_new_session=True)

        def stop(signum, frame):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            sys.exit(128 + signum)

        previous = signal.signal(signal.SIGTERM, stop)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        finally:
            signal.signal(signal.SIGTERM, previous)
    return proc.returncode


def drive(args: argparse.Namespace) -> int:
    os.makedirs(args.outdir, exist_ok=True)
    t0 = time.time()
    results = {}
    for name in args.configs.split(","):
        left = args.deadline_s - (time.time() - t0)
        if left < 40:
            results[name] = {"config": name, "ok": False, "error": f"not run: {left:.0f} s left before the deadline"}
            print(f"[{time.time() - t0:.0f}s] skip {name}: deadline", flush=True)
            continue
        log = os.path.join(args.outdir, f"{name}.log")
        rec_path = os.path.join(args.outdir, f"{name}.json")
        print(f"[{time.time() - t0:.0f}s] start {name}", flush=True)
        returncode = run_child([sys.executable, os.path.abspath(__file__), "--one", name, "--models", args.models,
                                "--outdir", args.outdir], log, min(left, args.per_config_s))
        try:
            rec = json.load(open(rec_path))
        except (OSError, ValueError):
            rec = {"config": name, "ok": False, "error": f"no record (rc {returncode}); see {name}.log"}
        rec["kernel_log_lines"] = kernel_lines(log)
        results[name] = rec
        print(f"[{time.time() - t0:.0f}s] end {name}: ok={rec.get('ok')} {str(rec.get('error', ''))[:300]}", flush=True)
    summary = {"k": K, "new_tokens": NEW_TOKENS, "prompt_lengths": list(PROMPT_LENGTHS), "configs": {}}
    for name, rec in results.items():
        row = {k: rec.get(k) for k in ("ok", "error", "init_s", "wall_s", "draft", "spec_quantization_asked",
                                       "draft_quantization_resolved", "draft_dtype", "gpu", "vllm", "target",
                                       "target_quantization", "moe_backend_asked", "non_finite_logprobs",
                                       "kernel_log_lines")}
        ref = results.get(reference_of(name), {})
        if rec.get("ok") and ref.get("ok") and name != reference_of(name):
            row["vs_target"] = compare(ref["tokens"], rec["tokens"])
        acc = [a for a in rec.get("acceptance", []) if "steps" in a]
        if acc:
            steps, accepted, drafted = (sum(a[k] for a in acc) for k in ("steps", "accepted", "drafted"))
            row["acceptance_rate"] = round(accepted / drafted, 4)
            row["mean_acceptance_length"] = round(1 + accepted / steps, 4)
            row["acceptance_rate_per_prompt"] = [a["acceptance_rate"] for a in acc]
        row["tokens"] = rec.get("tokens")
        summary["configs"][name] = row
        line = {k: row.get(k) for k in ("ok", "draft_quantization_resolved", "target_quantization", "moe_backend_asked",
                                        "non_finite_logprobs", "acceptance_rate", "mean_acceptance_length")}
        if "vs_target" in row:
            line.update({k: row["vs_target"][k] for k in ("equal_per_prompt", "equal_total", "first_divergence")})
        print("SUMMARY", name, json.dumps(line), flush=True)
    with open(os.path.join(args.outdir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    return 0


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", required=True, help="folder with target/ and the draft folders")
    p.add_argument("--outdir", required=True)
    p.add_argument("--configs", default="target,bf16,nvfp4,fp8", help=f"comma-separated, from {', '.join(CONFIGS)}")
    p.add_argument("--deadline-s", type=float, default=480, help="start no config after this many seconds")
    p.add_argument("--per-config-s", type=float, default=180, help="kill a config's engine after this long")
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        run_one(args.one, args.models, os.path.join(args.outdir, f"{args.one}.json"))
    unknown = [c for c in args.configs.split(",") if c not in CONFIGS]
    if unknown:
        p.error(f"unknown config(s) {unknown}; choose from {list(CONFIGS)}")
    return drive(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
