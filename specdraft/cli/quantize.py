"""``specdraft quantize``: make an NVFP4 / FP8 Gemma 4 draft with NVIDIA ModelOpt.

The model is checked (Gemma 4, safetensors weights present, not already quantized, enough memory)
before anything is loaded; the export is written to a staging directory and moved to ``--out``
only once it reads back as the requested scheme.
"""

from __future__ import annotations

import argparse
import json
import re
import sys

from specdraft.errors import ExitCode, UserError
from specdraft.quantization.calibration import check_calibration_source
from specdraft.quantization.quantize import (SCHEME_PRESETS, check_model_dir, check_out_dir, plan_quantization,
                                             quantize_draft)


def register(subparsers: argparse._SubParsersAction, name: str, help_text: str) -> None:
    parser = subparsers.add_parser(
        name, help=help_text,
        description="Make an NVFP4 / FP8 Gemma 4 draft with NVIDIA ModelOpt (needs the quantize extra). The model is "
                    "checked before it is loaded; --out is written only once the export reads back correctly.",
    )
    # paths stay as typed (not type=Path, which drops a leading ./), so that messages show them that way
    parser.add_argument("--model", required=True, help="BF16 Gemma 4 checkpoint directory (e.g. gemma-4-E2B-it)")
    parser.add_argument("--out", required=True, help="new directory for the quantized draft")
    parser.add_argument("--scheme", choices=list(SCHEME_PRESETS), default="nvfp4",
                        help="nvfp4: FP4 weights+activations (Blackwell); nvfp4-a16: FP4 weights only; "
                             "fp8: FP8 weights+activations (Hopper/Ada/Blackwell). Default: nvfp4")
    parser.add_argument("--calib", default="builtin",
                        help="builtin (default), random-tokens (random test models), or a .txt / .jsonl file")
    parser.add_argument("--calib-samples", type=_positive_int, default=None, help="use at most this many calibration samples")
    parser.add_argument("--max-seq-len", type=_positive_int, default=512, help="truncate calibration samples (default 512 tokens)")
    parser.add_argument("--exclude", action="append", default=[], metavar="PATTERN",
                        help="also keep modules matching this ModelOpt wildcard in BF16 (repeatable), e.g. '*self_attn*'")
    parser.add_argument("--text-only", action="store_true",
                        help="export only the language model, as Gemma4ForCausalLM (drops the vision/audio towers)")
    parser.add_argument("--moe-prefix", action="store_true",
                        help="MoE targets (26B-A4B): store each expert under .moe.experts.{id}. as community "
                             "per-expert checkpoints do, instead of ModelOpt's .experts.{id}.")
    parser.add_argument("--device", default="auto", help="auto (cuda when available), cpu or cuda")
    parser.add_argument("--dry-run", action="store_true",
                        help="check the model, --out and --calib and print the plan; load nothing")
    parser.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> ExitCode:
    device = _resolve_device(args.device)
    check_out_dir(args.out)
    check_model_dir(args.model)
    check_calibration_source(args.calib, args.model)
    plan = plan_quantization(args.model, args.scheme, extra_exclusions=tuple(args.exclude), device=device,
                             text_only=args.text_only, moe_prefix=args.moe_prefix)
    plan_view = {
        "model": args.model, "architecture": plan.architecture,
        "output_architecture": plan.output_architecture, "scheme": plan.scheme,
        "parameters": plan.parameters, "required_gib": round(plan.required_bytes / 1024**3, 2),
        "available_gib": round(plan.available_bytes / 1024**3, 2), "device": plan.device,
        "kv_shared_layers": list(plan.kv_shared_layers), "exclusions": list(plan.exclusions),
        "unblockable": list(plan.unblockable), "moe_prefix": plan.moe_prefix,
    }
    if args.dry_run:
        if args.json:
            print(json.dumps({"plan": plan_view}, indent=2))
        else:
            print(f"would quantize {args.model} ({plan.architecture}, {_count(plan.parameters)} parameters) "
                  f"to a {plan.scheme} {plan.output_architecture} on {plan.device}: needs ~{plan_view['required_gib']} GiB, "
                  f"{plan_view['available_gib']} GiB available")
            print(f"kept in BF16: {', '.join(plan.exclusions)}")
            if plan.unblockable:
                print(f"({len(plan.unblockable)} of them because their input features are not a multiple of "
                      f"the {plan.scheme} weight block)")
        return ExitCode.OK
    result = quantize_draft(plan, args.out, calib=args.calib, samples=args.calib_samples, max_seq_len=args.max_seq_len)
    info = result.info
    if args.json:
        print(json.dumps({
            "plan": plan_view, "out": args.out, "modelopt_version": result.modelopt_version,
            "calibration": {"sequences": result.calibration_sequences, "tokens": result.calibration_tokens},
            "seconds": {k: round(v, 2) for k, v in result.seconds.items()},
            "quantization": info.model_dump(mode="json", exclude={"raw", "legacy_file", "quantized_modules"}),
            "findings": [f.model_dump() for f in result.findings],
            "kept_in_bf16": result.kept_in_bf16,
        }, indent=2))
    else:
        print(f"wrote {args.out}: {info.scheme} (ModelOpt {result.modelopt_version}, quant_algo {info.quant_algo}, "
              f"group {info.group_size}), {len(info.quantized_modules)} modules quantized, "
              f"{result.seconds['total']:.1f}s")
        print(f"serve it with --quantization {info.vllm_quantization} "
              f"(speculative config: \"quantization\": \"{info.vllm_quantization}\")")
        for name, why in result.kept_in_bf16.items():
            print(f"kept in BF16: {name} ({why})")
        for finding in result.findings:
            print(f"{finding.level}: {finding.message}", file=sys.stderr)
    return ExitCode.OK


def _count(parameters: int) -> str:
    return f"{parameters / 1e9:.2f}B" if parameters >= 10**8 else f"{parameters / 1e6:.1f}M"


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive number")
    return value


def _resolve_device(device: str) -> str:
    """``auto``, ``cpu``, ``cuda`` or ``cuda:N`` as a device this machine has; ``UserError`` otherwise."""
    if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", device):
        raise UserError(f"--device {device!r} is not auto, cpu, cuda or cuda:N", hint="pass --device auto")
    if device == "cpu":
        return device
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        torch = None
    has_cuda = torch is not None and torch.cuda.is_available()
    if device == "auto":
        return "cuda" if has_cuda else "cpu"
    index = int(device.partition(":")[2] or 0)
    if not has_cuda or index >= torch.cuda.device_count():
        raise UserError(f"--device {device}: this machine has no such CUDA device", hint="pass --device cpu (or auto)")
    return device
