"""``check_template``: render the whole scenario matrix in both content formats and apply every rule."""

from __future__ import annotations

from dataclasses import dataclass

from specdraft.findings import Finding, Level
from specdraft.templates.rendering import (
    CONTENT_FORMATS,
    ContentFormat,
    TemplateRenderError,
    compile_template,
    render_chat,
)
from specdraft.templates.rules import EMPTY_THOUGHT, RENDER_ERROR_FIX, RULES, VARIANTS, Rendering, Variant
from specdraft.templates.scenarios import SCENARIOS, Scenario

EXCERPT_CONTEXT = 60


class TemplateFinding(Finding):
    """A leak rule's verdict on one rendered scenario: ``check`` is the stable rule id (e.g.
    ``thought-replayed``), ``hint`` the fix."""

    level: Level = "error"
    scenario: str
    content_format: ContentFormat
    excerpt: str
    """The rendered prompt around the problem, newlines shown as ``\\n``, cut ends marked with ``…``."""

    @property
    def rule(self) -> str:
        return self.check

    @property
    def fix(self) -> str:
        return self.hint or ""

    def to_dict(self) -> dict:
        """The ``template check --json`` form."""
        return {"rule": self.rule, "scenario": self.scenario, "content_format": self.content_format,
                "message": self.message, "excerpt": self.excerpt, "fix": self.fix}


@dataclass(frozen=True)
class RenderedScenario:
    scenario: Scenario
    content_format: ContentFormat
    prompt: str | None
    error: TemplateRenderError | None


def excerpt(prompt: str, start: int, end: int, context: int = EXCERPT_CONTEXT) -> str:
    left, right = max(0, start - context), min(len(prompt), end + context)
    text = prompt[left:right].replace("\n", "\\n")
    return ("…" if left else "") + text + ("…" if right < len(prompt) else "")


def render_matrix(source: str) -> list[RenderedScenario]:
    """Every scenario in both content formats; raises ``TemplateSourceError`` when ``source`` does not compile."""
    compile_template(source)
    rendered = []
    for scenario in SCENARIOS:
        for content_format in CONTENT_FORMATS:
            try:
                prompt = render_chat(
                    source,
                    scenario.messages,
                    content_format=content_format,
                    tools=scenario.tools,
                    add_generation_prompt=scenario.add_generation_prompt,
                    chat_template_kwargs=scenario.chat_template_kwargs,
                )
                rendered.append(RenderedScenario(scenario, content_format, prompt, None))
            except TemplateRenderError as err:
                rendered.append(RenderedScenario(scenario, content_format, None, err))
    return rendered


def _findings(item: RenderedScenario, variant: Variant) -> list[TemplateFinding]:
    s, fmt = item.scenario, item.content_format
    if item.error is not None:
        if item.error.rejected and s.thinking_is_malformed:
            return []  # refusing a non-boolean enable_thinking is the right answer
        return [TemplateFinding(check="render-error", scenario=s.id, content_format=fmt, excerpt="",
                                message=f"rendering failed: {item.error.message}", hint=RENDER_ERROR_FIX)]
    rendering = Rendering(item.prompt, s, fmt, variant)
    return [
        TemplateFinding(check=rule.id, scenario=s.id, content_format=fmt, message=problem.message,
                        excerpt=excerpt(item.prompt, problem.start, problem.end), hint=rule.fix)
        for rule in RULES
        for problem in rule.check(rendering)
    ]


def check_template(source: str, variant: Variant) -> list[TemplateFinding]:
    """Findings for a Gemma 4 chat template: an empty list means no scenario showed a leak or a format defect.

    ``variant`` is ``"e"`` (E2B/E4B) or ``"large"`` (26B-A4B/31B): they differ only in the thinking-off
    generation prompt. Raises ``TemplateSourceError`` (with ``lineno``) when the template does not compile.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    return [finding for item in render_matrix(source) for finding in _findings(item, variant)]


def detect_variant(source: str) -> Variant:
    """``"large"`` when the thinking-off generation prompt ends in an empty thought block, else ``"e"``."""
    compile_template(source)
    try:
        prompt = render_chat(
            source,
            [{"role": "user", "content": "Hi"}],
            content_format="string",
            chat_template_kwargs={"enable_thinking": False},
        )
    except TemplateRenderError:
        return "e"
    return "large" if prompt.endswith(EMPTY_THOUGHT) else "e"
