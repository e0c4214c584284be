"""``check_template``: render the whole scenario matrix in both content formats and apply every rule."""

from __future__ import annotations

from dataclasses import dataclass

from specdraft.findings import Finding, Level
from specdraft.templates.limits import LIMITS, Limits, RenderJob, SourceTooLarge, render_within_limits
from specdraft.templates.problems import Problem, Rendering
from specdraft.templates.rendering import CONTENT_FORMATS, ContentFormat, TemplateRenderError
from specdraft.templates.rules import EMPTY_THOUGHT, RENDER_ERROR_FIX, RULES, VARIANTS, Variant
from specdraft.templates.scenarios import SCENARIOS, Scenario

EXCERPT_CONTEXT = 60
WHOLE_TEMPLATE = "(template)"
"""The scenario named by a finding about the template as a whole (empty, too large)."""
RENDER_LIMIT_FIX = ("a chat template renders a prompt of a few thousand characters in milliseconds: remove what "
                    "builds huge strings or loops without end")


class TemplateFinding(Finding):
    """A rule's verdict on one rendered scenario: ``check`` is the stable rule id (e.g. ``thought-replayed``),
    ``hint`` the fix."""

    level: Level = "error"
    scenario: str
    content_format: ContentFormat | None
    """None for a finding about the template as a whole."""
    excerpt: str = ""
    """The rendered prompt around the problem, newlines shown as ``\\n``, cut ends marked with ``…``."""
    diff: str = ""
    """For ``format-drift``: a unified diff of the reference prompt and ours around the difference."""

    @property
    def rule(self) -> str:
        return self.check

    @property
    def fix(self) -> str:
        return self.hint or ""

    def to_dict(self) -> dict:
        """The ``template check --json`` form."""
        return {"rule": self.rule, "scenario": self.scenario, "content_format": self.content_format,
                "message": self.message, "excerpt": self.excerpt, "fix": self.fix, "diff": self.diff}


@dataclass(frozen=True)
class RenderedScenario:
    scenario: Scenario
    content_format: ContentFormat
    prompt: str | None
    error: TemplateRenderError | None
    limit: str | None = None
    """The limit this render hit (see ``specdraft.templates.limits``); no scenario after it was rendered."""


def excerpt(prompt: str, start: int, end: int, context: int = EXCERPT_CONTEXT) -> str:
    left, right = max(0, start - context), min(len(prompt), end + context)
    text = prompt[left:right].replace("\n", "\\n")
    return ("…" if left else "") + text + ("…" if right < len(prompt) else "")


def render_matrix(source: str, limits: Limits = LIMITS) -> list[RenderedScenario]:
    """Every scenario in both content formats, in order, within ``limits``: a render that hits one is the last.

    Raises ``TemplateSourceError`` when ``source`` does not compile, ``SourceTooLarge`` when it is too long.
    """
    cases = [(scenario, fmt) for scenario in SCENARIOS for fmt in CONTENT_FORMATS]
    jobs = [RenderJob(s.messages, fmt, s.tools, s.add_generation_prompt, s.chat_template_kwargs) for s, fmt in cases]
    outcomes = render_within_limits(source, jobs, limits)
    return [RenderedScenario(s, fmt, o.prompt, o.error, o.limit) for (s, fmt), o in zip(cases, outcomes)]


def problems_of(item: RenderedScenario, variant: Variant) -> list[tuple[str, Problem]]:
    """``(rule id, problem)`` for every rule a rendered prompt breaks."""
    rendering = Rendering(item.prompt, item.scenario, item.content_format, variant)
    return [(rule.id, problem) for rule in RULES for problem in rule.check(rendering)]


def _findings(item: RenderedScenario, variant: Variant) -> list[TemplateFinding]:
    s, fmt = item.scenario, item.content_format
    if item.limit is not None:
        return [TemplateFinding(check="render-limit", scenario=s.id, content_format=fmt, hint=RENDER_LIMIT_FIX,
                                message=f"{item.limit}; later scenarios were not rendered")]
    if item.error is not None:
        if item.error.rejected and s.thinking_may_be_refused:
            return []  # refusing a switch that is not a JSON boolean cannot leak
        return [TemplateFinding(check="render-error", scenario=s.id, content_format=fmt, hint=RENDER_ERROR_FIX,
                                message=f"rendering failed: {item.error.message}")]
    fixes = {rule.id: rule.fix for rule in RULES}
    return [
        TemplateFinding(check=rule_id, scenario=s.id, content_format=fmt, message=problem.message,
                        excerpt=excerpt(item.prompt, problem.start, problem.end), hint=fixes[rule_id])
        for rule_id, problem in problems_of(item, variant)
    ]


def findings_of(matrix: list[RenderedScenario], variant: Variant) -> list[TemplateFinding]:
    return [finding for item in matrix for finding in _findings(item, variant)]


def whole_template_finding(source: str) -> TemplateFinding | None:
    """The one finding for a template that is empty or too large to render, else None."""
    if not source.strip():
        return TemplateFinding(check="empty-template", scenario=WHOLE_TEMPLATE, content_format=None,
                               message="the template is empty (or only whitespace)",
                               hint="pass the chat template file itself (a Jinja text that starts with {{ bos_token }})")
    if len(source) > LIMITS.source_chars:
        return TemplateFinding(check="render-limit", scenario=WHOLE_TEMPLATE, content_format=None,
                               message=str(SourceTooLarge(len(source), LIMITS.source_chars)), hint=RENDER_LIMIT_FIX)
    return None


def check_template(source: str, variant: Variant) -> list[TemplateFinding]:
    """Findings for a Gemma 4 chat template: an empty list means no scenario showed a leak or a format defect.

    ``variant`` is ``"e"`` (E2B/E4B) or ``"large"`` (26B-A4B/31B): they differ only in the thinking-off
    generation prompt. Raises ``TemplateSourceError`` (with ``lineno``) when the template does not compile.
    An empty or oversized template gets one finding; a render past the limits gets ``render-limit``.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    whole = whole_template_finding(source)
    if whole is not None:
        return [whole]
    return findings_of(render_matrix(source), variant)


def detect_variant(source: str) -> Variant:
    """``"large"`` when the thinking-off generation prompt ends in an empty thought block, else ``"e"``."""
    if whole_template_finding(source) is not None:
        return "e"
    job = RenderJob([{"role": "user", "content": "Hi"}], "string", chat_template_kwargs={"enable_thinking": False})
    (outcome,) = render_within_limits(source, [job])
    return "large" if outcome.prompt is not None and outcome.prompt.endswith(EMPTY_THOUGHT) else "e"
