"""Compare a template with a reference one (Google's official template, usually from the checkpoint).

Both are rendered over the scenario matrix. Where the prompts differ, each differing stretch is either a
leak fix (it touches a spot where the rules find a problem in the reference's prompt: a replayed thought,
a thinking switch read wrongly, an open thought channel, an added space) or drift: a prompt the model was
not trained on. Drift is reported as ``format-drift`` with both excerpts and a short unified diff.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from specdraft.templates.check import (
    RenderedScenario,
    TemplateFinding,
    excerpt,
    findings_of,
    problems_of,
    render_matrix,
    whole_template_finding,
)
from specdraft.templates.rendering import TemplateSourceError
from specdraft.templates.rules import Variant

DRIFT_FIX = ("render what the reference renders here (see the diff); a deliberate difference belongs only where "
             "the reference leaks")
DIFF_LINES = 24
"""At most this many lines of unified diff per finding."""
_TOKEN = re.compile(r"<\|?[\w\"]*\|?>|\s+|[^\s<]+|<")
"""Markers, whitespace runs and words: the units the prompts are compared in."""
_DISPLAY_BREAK = re.compile(r"(?<=\n)|(?=<\|(?:turn|tool|tool_call|tool_response|channel)>)|(?<=\},)")


@dataclass(frozen=True)
class Comparison:
    ours: list[TemplateFinding]
    """The rules' findings on our template."""
    drift: list[TemplateFinding]
    """``format-drift``: where our prompt differs from the reference outside the leak fixes."""
    reference: list[TemplateFinding]
    """The rules' findings on the reference: its leaks, which are why a template of our own is used."""


class ReferenceSourceError(TemplateSourceError):
    """The reference template does not compile (``TemplateSourceError`` for the reference)."""


def compare_to_reference(ours: str, reference: str, variant: Variant) -> Comparison:
    """Render both templates over the matrix once each.

    Raises ``TemplateSourceError`` when ours does not compile, ``ReferenceSourceError`` for the reference.
    """
    whole_ours, whole_reference = whole_template_finding(ours), whole_template_finding(reference)
    ours_matrix = [] if whole_ours else render_matrix(ours)
    try:
        reference_matrix = [] if whole_reference else render_matrix(reference)
    except TemplateSourceError as err:
        raise ReferenceSourceError(err.message, err.lineno) from None
    return Comparison(
        ours=[whole_ours] if whole_ours else findings_of(ours_matrix, variant),
        drift=drift_between(ours_matrix, reference_matrix, variant),
        reference=[whole_reference] if whole_reference else findings_of(reference_matrix, variant),
    )


def drift_between(
    ours: list[RenderedScenario], reference: list[RenderedScenario], variant: Variant
) -> list[TemplateFinding]:
    """One ``format-drift`` finding per scenario and content format whose prompts differ outside the leak fixes."""
    drift = []
    for mine, theirs in zip(ours, reference):  # same matrix order; a render limit ends either list early
        s, fmt = mine.scenario, mine.content_format
        if mine.limit or theirs.limit or theirs.error is not None:
            continue  # a limit is reported by the checks; a reference that cannot render sets no standard
        if mine.error is not None:
            if not (mine.error.rejected and s.thinking_may_be_refused):
                drift.append(TemplateFinding(
                    level="warning", check="format-drift", scenario=s.id, content_format=fmt, hint=DRIFT_FIX,
                    message=f"the reference renders this request, ours fails: {mine.error.message}"))
            continue
        if mine.prompt != theirs.prompt and _has_unexplained_change(mine.prompt, theirs, variant):
            drift.append(_drift_finding(mine.prompt, theirs.prompt, s.id, fmt))
    return drift


def _has_unexplained_change(prompt: str, reference: RenderedScenario, variant: Variant) -> bool:
    leaks = [(problem.start, problem.end) for _, problem in problems_of(reference, variant)]
    ours_tokens, theirs_tokens = _TOKEN.findall(prompt), _TOKEN.findall(reference.prompt)
    offsets = [0]
    for token in theirs_tokens:
        offsets.append(offsets[-1] + len(token))
    matcher = difflib.SequenceMatcher(None, theirs_tokens, ours_tokens, autojunk=False)
    for op, i1, i2, _, _ in matcher.get_opcodes():
        if op == "equal":
            continue
        start, end = offsets[i1], offsets[i2]
        if not any(start <= leak_end and leak_start <= end for leak_start, leak_end in leaks):
            return True
    return False


def _drift_finding(prompt: str, reference: str, scenario: str, content_format: str) -> TemplateFinding:
    at = next((i for i, (a, b) in enumerate(zip(prompt, reference)) if a != b), min(len(prompt), len(reference)))
    message = f"our prompt differs from the reference's at character {at}"
    excerpts = f"reference: {excerpt(reference, at, at + 1, 40)}  ours: {excerpt(prompt, at, at + 1, 40)}"
    diff = _unified_diff(reference, prompt)
    return TemplateFinding(level="warning", check="format-drift", scenario=scenario, content_format=content_format,
                           message=message, excerpt=excerpts, hint=DRIFT_FIX, diff=diff)


def _unified_diff(reference: str, prompt: str) -> str:
    def lines(text: str) -> list[str]:
        return [part.replace("\n", "\\n") for part in _DISPLAY_BREAK.split(text) if part]

    diff = list(difflib.unified_diff(lines(reference), lines(prompt), "reference", "ours", n=1, lineterm=""))
    if len(diff) > DIFF_LINES:
        diff = diff[:DIFF_LINES] + [f"… {len(diff) - DIFF_LINES} more diff lines"]
    return "\n".join(diff)


CHECKPOINT_TEMPLATE_FILES = ("chat_template.jinja", "tokenizer_config.json", "processor_config.json",
                             "chat_template.json")


def find_checkpoint_template(checkpoint: str | Path) -> tuple[Path, str] | None:
    """The chat template a checkpoint directory carries, and the file it came from; None when it has none.

    Read in the order transformers prefers: ``chat_template.jinja``, then the ``chat_template`` entry of
    ``tokenizer_config.json``, ``processor_config.json`` or ``chat_template.json`` (a string, or a list of
    named templates of which ``default`` is the one used). Unreadable files are skipped.
    """
    directory = Path(checkpoint)
    for name in CHECKPOINT_TEMPLATE_FILES:
        path = directory / name
        if not path.is_file():  # a FIFO among a checkpoint's files would wait for a writer
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        template = text if name.endswith(".jinja") else _template_entry(text)
        if template:
            return path, template
    return None


def _template_entry(text: str) -> str | None:
    try:
        entry = json.loads(text).get("chat_template")
    except (ValueError, AttributeError):
        return None
    if isinstance(entry, list):
        named = {item.get("name"): item.get("template") for item in entry if isinstance(item, dict)}
        entry = named.get("default")
    return entry if isinstance(entry, str) else None


@dataclass(frozen=True)
class CheckpointVerdict:
    """How a template compares with the one a checkpoint carries (plain data: it is cached as JSON)."""

    reference_file: str
    drift: list[str]
    """Every scenario with format-drift, once, with the content formats it drifts in: ``scenario [string, openai]``."""
    reference_rules: dict[str, int]
    """Rule id -> how many of the reference's own renders break it (its leaks)."""
    error: str = ""
    """Why the comparison could not be made (the reference does not compile, or hit a limit); else empty."""


def compare_to_checkpoint(source: str, checkpoint: str | Path, variant: Variant) -> CheckpointVerdict | None:
    """Compare ``source`` with the chat template ``checkpoint`` carries; None when it carries none."""
    found = find_checkpoint_template(checkpoint)
    if found is None:
        return None
    path, reference = found
    try:
        comparison = compare_to_reference(source, reference, variant)
    except TemplateSourceError as err:
        which = "its template" if isinstance(err, ReferenceSourceError) else "the template passed"
        error = f"{which} does not compile (line {err.lineno or '?'}): {err.message}"
        return CheckpointVerdict(str(path), [], {}, error)
    limits = [f for f in comparison.reference if f.rule in ("render-limit", "empty-template")]
    rules: dict[str, int] = {}
    for finding in comparison.reference:
        rules[finding.rule] = rules.get(finding.rule, 0) + 1
    formats: dict[str, list[str]] = {}
    for finding in comparison.drift:
        formats.setdefault(finding.scenario, []).append(finding.content_format)
    return CheckpointVerdict(
        reference_file=str(path),
        drift=[f"{scenario} [{', '.join(found)}]" for scenario, found in formats.items()],
        reference_rules=rules,
        error=limits[0].message if limits else "",
    )
