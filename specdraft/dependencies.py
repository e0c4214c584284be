"""What specdraft imports from other distributions, and the one error a missing one becomes.

``pyproject.toml`` declares the distributions; ``IMPORTS`` maps the names code imports to them and to the
extra that brings them (a test holds the two together). Every place that needs a package beyond the base
install, and the CLI for any import that fails, turns the ``ImportError`` into ``missing_dependency``'s
``UserError``: which package, which interpreter lacks it, and the install command for that interpreter.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from specdraft.cache import cache_root
from specdraft.errors import UserError

# import name -> (distribution, extra that brings it; None for the base install)
IMPORTS: dict[str, tuple[str, str | None]] = {
    "libcst": ("libcst", None),
    "pydantic": ("pydantic", None),
    "pydantic_core": ("pydantic", None),
    "packaging": ("packaging", None),
    "jinja2": ("jinja2", None),
    "transformers": ("transformers", None),
    "huggingface_hub": ("huggingface_hub", None),
    "prometheus_client": ("prometheus_client", None),
    "httpx": ("httpx", None),
    "torch": ("torch", "demo"),
    "safetensors": ("safetensors", "demo"),
    "openai": ("openai", "demo"),
    "modelopt": ("nvidia-modelopt", "quantize"),
}

_CHECKOUT = Path(__file__).resolve().parent.parent
"""The repository, when specdraft runs from a source checkout (``pyproject.toml`` beside the package)."""


def install_command(extra: str | None = None) -> str:
    """The command that gives this interpreter specdraft's dependencies (and ``extra``'s)."""
    python = shlex.quote(sys.executable)
    if (_CHECKOUT / "pyproject.toml").is_file():
        target = f"{_CHECKOUT}[{extra}]" if extra else str(_CHECKOUT)
        return f"{python} -m pip install -e {shlex.quote(target)}"
    return f"{python} -m pip install {shlex.quote(f'specdraft[{extra}]' if extra else 'specdraft')}"


def missing_dependency(err: ImportError, needed_for: str = "specdraft") -> UserError | None:
    """The user error for an import of a package specdraft declares, or None (then it is specdraft's bug)."""
    top = (err.name or "").split(".", 1)[0]
    if top not in IMPORTS:
        return None
    distribution, extra = IMPORTS[top]
    brought_by = f"the '{extra}' extra" if extra else "specdraft's base install"
    hint = install_command(extra)
    if (_CHECKOUT / "Makefile").is_file() and extra in (None, "demo"):
        hint += f" (or use the interpreter `make setup` makes: {cache_root() / 'venvs' / 'dev' / 'bin' / 'python'})"
    return UserError(f"{needed_for} needs {distribution} ({brought_by}), which {sys.executable} cannot import",
                     hint=hint)
