"""Where the templates specdraft ships live, in a source checkout and in an installed wheel.

The files are kept in the top-level ``chat_templates/`` directory; ``specdraft/templates/chat_templates``
is a symbolic link to it, declared as package data, so a wheel carries real copies and an editable
install or a plain checkout reads the originals.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from specdraft.families import GEMMA4
from specdraft.templates.rules import VARIANTS, Variant


def shipped_template(variant: Variant) -> Path:
    """The path of specdraft's own template for ``"e"`` (E2B/E4B) or ``"large"`` (26B-A4B/31B)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    shipped = resources.files("specdraft.templates") / "chat_templates" / GEMMA4.template_files[variant]
    path = Path(str(shipped)).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"specdraft's {variant} template is missing from the installation: {path}")
    return path
