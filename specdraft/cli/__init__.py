"""``specdraft`` / ``python -m specdraft``: a thin layer that parses, calls the library and renders.

Each subcommand lives in its own module here and exposes ``register(subparsers)``; the module is
imported only when its command runs, so ``specdraft patch status`` never pays for transformers.
Every command returns an ``ExitCode``; ``UserError`` becomes one line on stderr, anything else
an internal error whose traceback is written to a log file.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import traceback
from typing import Sequence

from specdraft import __version__
from specdraft.errors import ExitCode, UserError

# command name -> (module, one-line help). Modules are imported lazily.
COMMANDS: dict[str, tuple[str, str]] = {
    "patch": ("specdraft.cli.patch", "apply, verify, revert or dry-run vLLM's KV-sharing hotfixes"),
    "template": ("specdraft.cli.template", "prove a chat template cannot leak the thought channel"),
    "launch": ("specdraft.cli.launch", "preflight a draft/target pair, then exec `vllm serve`"),
    "bench": ("specdraft.cli.bench", "measure tok/s and acceptance against a running server"),
    "tune": ("specdraft.cli.tune", "recommend num_speculative_tokens from measured acceptance"),
    "quantize": ("specdraft.cli.quantize", "make an NVFP4/FP8 draft with NVIDIA ModelOpt"),
    "cluster": ("specdraft.cli.cluster", "ask every node of a multi-node cluster whether its vLLM is patched"),
}


def _build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="specdraft",
        description="Speculative decoding of Gemma 4 on vLLM that works on the first try.",
    )
    parser.add_argument("--version", action="version", version=f"specdraft {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    wanted = next((a for a in argv if not a.startswith("-")), None)
    for name, (module, help_text) in COMMANDS.items():
        if name == wanted:
            importlib.import_module(module).register(sub, name, help_text)
        else:
            sub.add_parser(name, help=help_text, add_help=False)
    return parser


def _report_internal_error() -> None:
    fd, path = tempfile.mkstemp(prefix="specdraft-crash-", suffix=".log")
    with os.fdopen(fd, "w") as log:
        log.write(traceback.format_exc())
    print(f"specdraft: internal error (a bug in specdraft); traceback written to {path}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = _build_parser(argv)
        args = parser.parse_args(argv)
        if not getattr(args, "run", None):
            parser.print_help()
            return int(ExitCode.BAD_INPUT if argv else ExitCode.OK)
        return int(args.run(args))
    except UserError as err:
        print(f"specdraft: error: {err.message}", file=sys.stderr)
        if err.hint:
            print(f"specdraft: next: {err.hint}", file=sys.stderr)
        return int(err.exit_code)
    except KeyboardInterrupt:
        print("specdraft: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`specdraft tune | head -1`): not a bug; silence the flush at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return int(ExitCode.OK)
    except Exception:
        _report_internal_error()
        return int(ExitCode.INTERNAL)
