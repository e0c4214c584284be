"""Which chat template the plan passes, and what specdraft.templates says about it.

The check renders a whole scenario matrix through transformers' renderer (about a second), so
its verdict is kept under ``$SPECDRAFT_CACHE/template-checks/``, keyed by the template's bytes,
the variant and the checker's own source: a changed template or a changed rule is re-checked.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from specdraft.cache import cache_root
from specdraft.errors import UserError
from specdraft.families import DEFAULT_FAMILY, ModelFamily
from specdraft.findings import Finding
from specdraft.paths import expand_user, refuse_special_file

if TYPE_CHECKING:
    from specdraft.templates import TemplateFinding


class CheckpointComparison(BaseModel):
    """How the template passed compares with the one the target checkpoint carries (Google's, usually)."""

    model_config = ConfigDict(frozen=True)

    reference_file: str
    drift: tuple[str, ...] = ()
    """``scenario [content formats]`` where the prompts differ outside the leak fixes."""
    reference_rules: dict[str, int] = {}
    """The checkpoint template's own rule findings: rule id -> how many renders break it."""
    error: str = ""
    """Why the two could not be compared; empty when they were."""


class TemplateChoice(BaseModel):
    """The chat template the plan passes, the variant it is and the one the target needs."""

    model_config = ConfigDict(frozen=True)

    path: Path | None
    variant: str | None
    """The variant the template is (detected for a user's template), None when unknown."""
    needed_variant: str
    """The variant the target checkpoint needs."""
    findings: tuple[Finding, ...] = ()
    """The template checker's verdicts: an ``error`` is a thought-channel leak."""
    checkpoint_template: CheckpointComparison | None = None
    """The comparison with the target checkpoint's own template; None when it carries none (or is not local)."""
    note: str = ""
    source: str | None = None
    """The template's text as read here: a plan over several nodes ships it to the node that serves the API."""

    def summary(self) -> dict:
        """The ``template`` object of ``launch --dry-run --json``."""
        return {"path": str(self.path) if self.path else None, "variant": self.variant,
                "needed_variant": self.needed_variant, "note": self.note}


def _cache_dir() -> Path:
    return cache_root() / "template-checks"


def _checker_fingerprint(templates_package: Path) -> str:
    digest = hashlib.sha256()
    for file in sorted(templates_package.glob("*.py")):
        digest.update(file.name.encode() + file.read_bytes())
    return digest.hexdigest()


def _cache_file(*parts: str) -> Path:
    import specdraft.templates as templates

    fingerprint = _checker_fingerprint(Path(templates.__file__).parent)
    return _cache_dir() / f"{hashlib.sha256(chr(0).join([*parts, fingerprint]).encode()).hexdigest()}.json"


def _store(cached: Path, verdict: dict) -> None:
    cached.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=cached.parent, delete=False, suffix=".tmp") as handle:
        json.dump(verdict, handle)
    os.replace(handle.name, cached)


def _check(source: str, variant: str, detect: bool) -> tuple[str | None, tuple[Finding, ...]]:
    """The template's variant and the launch plan's findings about it, from the cache or a fresh check."""
    import specdraft.templates as templates

    cached = _cache_file(source, variant, str(detect))
    try:
        verdict = json.loads(cached.read_text())
        return verdict["variant"], tuple(Finding.model_validate(f) for f in verdict["findings"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    from specdraft.templates.check import detect_variant

    try:
        findings = tuple(_as_plan_finding(f) for f in templates.check_template(source, variant))
        found_variant = detect_variant(source) if detect else variant
    except templates.TemplateSourceError as err:
        findings = (Finding(level="error", check="chat-template", message=f"does not compile: {err}"),)
        found_variant = None
    _store(cached, {"variant": found_variant, "findings": [f.model_dump() for f in findings]})
    return found_variant, findings


def _compare_with_checkpoint(source: str, variant: str, checkpoint: Path) -> CheckpointComparison | None:
    """The template against the one ``checkpoint`` carries, from the cache or a fresh comparison."""
    import specdraft.templates as templates

    found = templates.find_checkpoint_template(checkpoint)
    if found is None:
        return None
    reference_file, reference = found
    cached = _cache_file(source, reference, variant, "checkpoint")
    try:
        return CheckpointComparison.model_validate_json(cached.read_text())
    except (OSError, ValueError):
        pass
    verdict = templates.compare_to_checkpoint(source, checkpoint, variant)
    comparison = CheckpointComparison(reference_file=str(reference_file), drift=tuple(verdict.drift),
                                      reference_rules=verdict.reference_rules, error=verdict.error)
    _store(cached, comparison.model_dump())
    return comparison


def _as_plan_finding(finding: TemplateFinding) -> Finding:
    """A leak rule's finding under the plan's one ``chat-template`` check, naming the rule and scenario."""
    where = (f"in scenario {finding.scenario} ({finding.content_format})" if finding.content_format
             else "in the template")
    return Finding(level=finding.level, check="chat-template", hint=finding.hint or None,
                   message=f"{finding.check} {where}: {finding.message}")


def choose_template(requested: str | Path | None, variant: str, checkpoint: Path | None = None,
                    family: ModelFamily = DEFAULT_FAMILY) -> TemplateChoice:
    """The user's template (checked, its variant detected) or the target ``family``'s own for ``variant``, compared
    with the template the target ``checkpoint`` directory carries, if any. A family whose chat format the leak rules
    do not know (``has_template_rules``) gets its template passed unchecked, with a warning that says so."""
    try:
        import specdraft.templates as templates
    except ImportError:
        templates = None
    if requested is not None:
        path = expand_user(requested, option="--chat-template")
        refuse_special_file(path, what="--chat-template", hint="pass the path of a Jinja chat template")
        if not path.is_file():
            raise UserError(f"--chat-template {requested}: no such file",
                            hint="pass an existing template, or drop --chat-template to use specdraft's own")
    elif family is not DEFAULT_FAMILY:
        path = family.template_path(variant)
        if not path.is_file():
            raise UserError(f"{family.display_name}'s {variant!r} template {path} is missing",
                            hint="reinstall the family's files, or pass --chat-template PATH")
    elif templates is not None:
        path = Path(templates.shipped_template(variant))
    else:
        return TemplateChoice(path=None, variant=None, needed_variant=variant,
                              note="specdraft.templates is not in this build")
    source = _read_template(path)
    if not family.has_template_rules:
        return TemplateChoice(path=path, variant=None, needed_variant=variant, source=source, findings=(Finding(
            level="warning", check="chat-template",
            message=f"{path} not checked: specdraft's leak rules know {DEFAULT_FAMILY.display_name}'s chat format, "
                    f"not {family.display_name}'s"),))
    if templates is None:
        return TemplateChoice(path=path, variant=None, needed_variant=variant, source=source, findings=(Finding(
            level="warning", check="chat-template",
            message=f"{path} not checked: specdraft.templates is not in this build"),))
    found_variant, findings = _check(source, variant, detect=requested is not None)
    compared = _compare_with_checkpoint(source, variant, checkpoint) if checkpoint is not None else None
    return TemplateChoice(path=path, variant=found_variant, needed_variant=variant, findings=findings,
                          checkpoint_template=compared, source=source)


def _read_template(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise UserError(f"--chat-template {path}: not UTF-8 text (byte {err.start})",
                        hint="pass a Jinja chat template saved as UTF-8") from None
