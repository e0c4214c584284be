"""What a leak rule reads and what it reports: one ``Rendering`` in, ``Problem``s located in its prompt out.

The rules themselves are in ``rules.py``; ``check.py`` turns problems into findings with an excerpt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

from specdraft.families.gemma4 import TemplateVariant as Variant
from specdraft.templates.rendering import ContentFormat
from specdraft.templates.scenarios import Scenario


@dataclass(frozen=True)
class Rendering:
    prompt: str
    scenario: Scenario
    content_format: ContentFormat
    variant: Variant


@dataclass(frozen=True)
class Problem:
    message: str
    start: int
    end: int


def problems_at(prompt: str, needle: str, message: str) -> Iterator[Problem]:
    """A problem at each place ``needle`` occurs in the prompt."""
    for match in re.finditer(re.escape(needle), prompt):
        yield Problem(message, match.start(), match.end())


def problem_at_end(prompt: str, message: str) -> Problem:
    """A problem about something missing, pointed at the last character of the prompt."""
    return Problem(message, max(0, len(prompt) - 1), len(prompt))
