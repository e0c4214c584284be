"""Render templates that may be hostile or broken, within limits, so a check cannot hang ``launch`` or CI.

A template is code: ``{{ "x" * 10**9 }}`` allocates a gigabyte in one step (Jinja even does it while
compiling, folding constants), nested loops run for hours, and the Jinja sandbox limits neither. So a
template is compiled and rendered in a forked child process (it inherits the imported renderer, so starting
it costs milliseconds) with a cap on its address space; the parent gives each step a time limit and kills
the child when it is exceeded, and the child refuses a prompt longer than any real prompt. The first render
that hits a limit ends the batch. Only specdraft's own templates are compiled in the parent, once.
"""

from __future__ import annotations

import multiprocessing
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping, Sequence

from specdraft.templates.rendering import (
    ContentFormat,
    TemplateRenderError,
    TemplateSourceError,
    compile_template,
    render_chat,
)
from specdraft.templates.rules import VARIANTS


@dataclass(frozen=True)
class Limits:
    source_chars: int = 256_000
    """Longest template accepted (Google's official Gemma 4 templates are under 19,000 characters)."""
    prompt_chars: int = 200_000
    """Longest prompt one scenario may render (the matrix prompts are under 5,000)."""
    seconds_per_render: float = 5.0
    """Wall time one render may take (a render of the shipped templates takes about a millisecond)."""
    memory_bytes: int = 256 << 20
    """Address space the rendering child may add to what it inherits."""


LIMITS = Limits()


@dataclass(frozen=True)
class RenderJob:
    messages: Sequence[Mapping[str, Any]]
    content_format: ContentFormat
    tools: Sequence[Mapping[str, Any]] | None = None
    add_generation_prompt: bool = True
    chat_template_kwargs: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class RenderOutcome:
    prompt: str | None = None
    error: TemplateRenderError | None = None
    limit: str | None = None
    """What limit the render hit; it is then the last outcome of its batch."""


class SourceTooLarge(Exception):
    def __init__(self, size: int, limit: int):
        super().__init__(f"the template is {size:,} characters long, over the limit of {limit:,}")
        self.message = str(self)


def check_source_size(source: str, limits: Limits = LIMITS) -> None:
    """Raises ``SourceTooLarge`` before anything compiles a template too large to be a chat template."""
    if len(source) > limits.source_chars:
        raise SourceTooLarge(len(source), limits.source_chars)


def render_within_limits(source: str, jobs: Sequence[RenderJob], limits: Limits = LIMITS) -> list[RenderOutcome]:
    """One outcome per job, in order, ending early at the first job that hits a limit.

    Raises ``SourceTooLarge`` or ``TemplateSourceError`` (syntax) before rendering anything.
    """
    check_source_size(source, limits)
    if source in _shipped_sources():
        compile_template(source)  # our own templates compile here once, and every child inherits them
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_render_jobs, args=(sender, source, jobs, limits), daemon=True)
    child.start()
    sender.close()
    outcomes: list[RenderOutcome] = []
    try:
        # any other template compiles in the child: Jinja folds constant expressions such as "x" * 10**9 while
        # compiling, so compiling is as unbounded as rendering (and cannot be cached here)
        compiled = _next_outcome(receiver, child, limits, "compiling")
        if isinstance(compiled, TemplateSourceError):
            raise compiled
        if compiled.limit:
            return [compiled]
        while len(outcomes) < len(jobs):
            outcome = _next_outcome(receiver, child, limits, "rendering")
            outcomes.append(outcome)
            if outcome.limit:
                break
    finally:
        receiver.close()
        if child.is_alive():
            child.kill()
        child.join()
    return outcomes


@lru_cache(maxsize=1)
def _shipped_sources() -> frozenset[str]:
    from specdraft.templates.shipped import shipped_template

    return frozenset(shipped_template(variant).read_text(encoding="utf-8") for variant in VARIANTS)


def _next_outcome(receiver, child, limits: Limits, step: str) -> RenderOutcome | TemplateSourceError:
    if not receiver.poll(limits.seconds_per_render):
        return RenderOutcome(limit=f"{step} took longer than {limits.seconds_per_render:g} s")
    try:
        return receiver.recv()
    except EOFError:
        child.join(1)
        return RenderOutcome(limit=f"the rendering process died (exit code {child.exitcode})")


def _render_jobs(sender, source: str, jobs: Sequence[RenderJob], limits: Limits) -> None:
    _cap_address_space(limits.memory_bytes)
    try:
        compile_template(source)
        sender.send(RenderOutcome())
    except TemplateSourceError as err:
        sender.send(err)
        return
    except (MemoryError, RecursionError) as err:
        sender.send(RenderOutcome(limit=_exhausted("compiling", err, limits)))
        return
    for job in jobs:
        outcome = _render_one(source, job, limits)
        sender.send(outcome)
        if outcome.limit:
            break
    sender.close()


def _render_one(source: str, job: RenderJob, limits: Limits) -> RenderOutcome:
    try:
        prompt = render_chat(
            source, job.messages, content_format=job.content_format, tools=job.tools,
            add_generation_prompt=job.add_generation_prompt, chat_template_kwargs=job.chat_template_kwargs,
        )
    except TemplateRenderError as err:
        return RenderOutcome(error=err)
    except (MemoryError, RecursionError) as err:
        return RenderOutcome(limit=_exhausted("rendering", err, limits))
    if len(prompt) > limits.prompt_chars:
        return RenderOutcome(limit=f"the prompt is {len(prompt):,} characters long, over the limit of "
                                   f"{limits.prompt_chars:,}")
    return RenderOutcome(prompt=prompt)


def _exhausted(step: str, err: BaseException, limits: Limits) -> str:
    if isinstance(err, MemoryError):
        return f"{step} needed more than {limits.memory_bytes >> 20:,} MiB of memory"
    return f"{step} nests deeper than Python's recursion limit"


def _cap_address_space(extra_bytes: int) -> None:
    try:
        import resource

        with open("/proc/self/statm") as statm:
            current = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        wanted = current + extra_bytes
        resource.setrlimit(resource.RLIMIT_AS, (wanted if hard == resource.RLIM_INFINITY else min(wanted, hard), hard))
    except (ImportError, OSError, ValueError):
        pass  # no /proc or no rlimits: the time limit still holds
