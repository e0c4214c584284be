"""What the Markdown pages show, read one way for every docs test: the pages, their fenced blocks, the
`python -m specdraft` commands in their ```bash blocks, and the output blocks that follow a command."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROGRAM = "python -m specdraft "

_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.S | re.M)


def pages() -> list[Path]:
    """Every page a reader is sent to: the README and each Markdown file under docs/."""
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def read(page: str) -> str:
    """The text of a page, named by its path from the repository root (``docs/patching.md``)."""
    return (REPO / page).read_text()


def headings(text: str) -> list[re.Match]:
    """The Markdown headings of ``text``; a shell comment inside a fenced block is not one."""
    fenced = [(b.start, b.end) for b in blocks(text)]
    return [m for m in re.finditer(r"^(#+) (.*)$", text, re.M)
            if not any(start <= m.start() < end for start, end in fenced)]


def section(text: str, heading: str) -> str:
    """From the heading that starts with ``heading`` to the next heading of the same or a higher level."""
    found = headings(text)
    start = next((i for i, m in enumerate(found) if m.group(2).startswith(heading)), None)
    if start is None:
        raise AssertionError(f"no heading {heading!r}")
    level = len(found[start].group(1))
    end = next((m.start() for m in found[start + 1:] if len(m.group(1)) <= level), len(text))
    return text[found[start].end():end]


@dataclass(frozen=True)
class Block:
    language: str
    body: str
    start: int  # offset of the opening fence in its text
    end: int  # offset just past the closing fence


def blocks(text: str, language: str | None = None) -> list[Block]:
    found = [Block(m.group(1).split(" ")[0], m.group(2), m.start(), m.end()) for m in _FENCE.finditer(text)]
    return [b for b in found if language is None or b.language == language]


def commands_in(body: str) -> list[str]:
    """The specdraft command lines of one shell block, continuation lines joined (comments kept)."""
    joined = re.sub(r"\s*\\\n\s*", " ", body)
    return [line.strip() for line in joined.splitlines() if line.strip().startswith(PROGRAM)]


def commands(text: str) -> list[str]:
    """Every specdraft command of every ```bash block of ``text`` (a page, or a section of one), in order."""
    return [command for block in blocks(text, "bash") for command in commands_in(block.body)]


@dataclass(frozen=True)
class ShownOutput:
    """A fenced `text` block right after a fenced `bash` block: what the bash block's last command prints."""
    command: str
    lines: list[str]


def shown_outputs(text: str) -> list[ShownOutput]:
    found = []
    fenced = blocks(text)
    for before, after in zip(fenced, fenced[1:]):
        between = text[before.end:after.start]
        if before.language == "bash" and after.language == "text" and not re.sub(r"<!--.*?-->", "", between, flags=re.S).strip():
            found.append(ShownOutput(commands_in(before.body)[-1], after.body.splitlines()))
    return found
