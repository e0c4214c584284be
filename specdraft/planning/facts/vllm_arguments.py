"""What an installed vLLM accepts, read statically from its source (vLLM is never imported).

``vllm serve`` options come from two places in every release 0.19-0.33: explicit
``add_argument("--name", ...)`` calls (``vllm/engine/arg_utils.py`` and the server's
``cli_args.py``) and the fields of the ``FrontendArgs`` dataclasses, each rendered as
``--field-name``. ``--speculative-config`` keys are the fields of ``SpeculativeConfig`` in
``vllm/config/speculative.py``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

# the server options moved over the releases: openai/ (0.19-0.32), launchers/ (0.3x), common/ (0.33)
_CLI_ARGS_FILES = ("entrypoints/openai/cli_args.py", "entrypoints/launchers/cli_args.py",
                   "entrypoints/common/cli_args.py")


@dataclass(frozen=True)
class VllmArguments:
    """The serve options and speculative-config keys one vLLM source tree defines."""

    root: Path
    serve_flags: frozenset[str]
    speculative_fields: frozenset[str]

    def knows_flag(self, name: str) -> bool:
        return name.split("=", 1)[0] in self.serve_flags


def _parse(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None


def _add_argument_options(tree: ast.Module) -> set[str]:
    options = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
            options.update(a.value for a in node.args
                           if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("-"))
    return options


def _class_fields(tree: ast.Module, is_wanted) -> set[str]:
    fields = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and is_wanted(node.name):
            fields.update(item.target.id for item in node.body
                          if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name))
    return fields


def _package_dir(vllm_root: Path) -> Path:
    """Accept either the ``vllm`` package directory or the site-packages that holds it."""
    return vllm_root if (vllm_root / "engine").is_dir() else vllm_root / "vllm"


@lru_cache(maxsize=8)
def read_vllm_arguments(vllm_root: Path) -> VllmArguments | None:
    """Serve flags and speculative-config fields of the vLLM at ``vllm_root``; None if unreadable."""
    package = _package_dir(Path(vllm_root))
    engine = _parse(package / "engine" / "arg_utils.py")
    if engine is None:
        return None
    flags = _add_argument_options(engine)
    for relative in _CLI_ARGS_FILES:
        tree = _parse(package / relative)
        if tree is None:
            continue
        flags |= _add_argument_options(tree)
        flags |= {"--" + name.replace("_", "-") for name in _class_fields(tree, lambda n: n.endswith("FrontendArgs"))}
    speculative = _parse(package / "config" / "speculative.py")
    fields = _class_fields(speculative, lambda n: n == "SpeculativeConfig") if speculative else set()
    return VllmArguments(root=package, serve_flags=frozenset(flags), speculative_fields=frozenset(fields))
