"""The scenario matrix: chat requests that make a Gemma 4 template show whether it can leak.

Each scenario is an OpenAI chat-completions request (messages, tools, chat-template kwargs,
generation prompt) plus what a correct prompt must contain. Thought text planted in history always
carries a ``THOUGHT<n>`` word, so a replayed thought is found by that word alone; text that must
survive (user text, answers, tool calls and results) is listed in ``must_contain``. The matrix is data,
``data/scenarios.json``: tools declared once by name, then the scenarios naming them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, Literal, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field


@dataclass(frozen=True)
class Scenario:
    id: str
    """Stable name used in findings, e.g. ``history-bare-thought-label``."""
    description: str
    messages: Sequence[Mapping[str, Any]]
    tools: Sequence[Mapping[str, Any]] | None = None
    chat_template_kwargs: Mapping[str, Any] = field(default_factory=dict)
    add_generation_prompt: bool = True
    must_contain: Sequence[str] = ()
    """Exact strings a correct prompt contains (visible text, tool calls, tool results)."""
    kept_thoughts: frozenset[str] = frozenset()
    """``THOUGHT<n>`` words that may appear: reasoning before the tool calls of the turn in progress."""

    @property
    def thinking(self) -> bool:
        """True when thinking was switched on: the boolean true, or the string "true" in any case."""
        value = self.chat_template_kwargs.get("enable_thinking")
        return value is True or (isinstance(value, str) and value.lower() == "true")

    @property
    def thinking_may_be_refused(self) -> bool:
        """A template may refuse a switch that is not a JSON boolean (refusing cannot leak)."""
        value = self.chat_template_kwargs.get("enable_thinking")
        return value is not None and not isinstance(value, bool)

    @property
    def ends_after_tool_results(self) -> bool:
        return bool(self.messages) and self.messages[-1]["role"] == "tool"

    @property
    def first_role(self) -> str:
        return self.messages[0]["role"]


class _Message(BaseModel):
    """An OpenAI chat message as the file spells it; only the role is checked, the rest goes to the template."""

    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool"]


class _ScenarioEntry(BaseModel):
    """One scenario of ``data/scenarios.json``; ``tools`` names declarations of the file's ``tools`` table."""

    model_config = ConfigDict(extra="forbid")

    id: str
    description: str
    messages: list[_Message] = Field(min_length=1)
    tools: list[str] | None = None
    chat_template_kwargs: dict[str, Any] = {}
    add_generation_prompt: bool = True
    must_contain: list[str] = []
    kept_thoughts: list[str] = []


class _ScenarioFile(BaseModel):
    """``data/scenarios.json``; keys starting with ``_`` are notes."""

    model_config = ConfigDict(extra="forbid")

    tools: dict[str, dict[str, Any]]
    scenarios: list[_ScenarioEntry]


def scenarios_from(document: Mapping[str, Any]) -> tuple[tuple[Scenario, ...], dict[str, dict]]:
    """The scenarios and the tool table of a scenario file; ValueError names a tool or id that does not fit."""
    parsed = _ScenarioFile.model_validate({key: value for key, value in document.items() if not key.startswith("_")})
    for name, tool in parsed.tools.items():
        if tool.get("function", {}).get("name") != name:
            raise ValueError(f"scenario tool {name!r} declares function {tool.get('function', {}).get('name')!r}")
    seen: set[str] = set()
    scenarios = []
    for entry in parsed.scenarios:
        if entry.id in seen:
            raise ValueError(f"scenario {entry.id!r} appears twice")
        seen.add(entry.id)
        unknown = [name for name in entry.tools or () if name not in parsed.tools]
        if unknown:
            raise ValueError(f"scenario {entry.id!r} names undeclared tools {unknown}")
        scenarios.append(Scenario(
            entry.id, entry.description, [message.model_dump() for message in entry.messages],
            tools=None if entry.tools is None else [parsed.tools[name] for name in entry.tools],
            chat_template_kwargs=entry.chat_template_kwargs, add_generation_prompt=entry.add_generation_prompt,
            must_contain=tuple(entry.must_contain), kept_thoughts=frozenset(entry.kept_thoughts)))
    return tuple(scenarios), parsed.tools


@cache
def _shipped() -> tuple[tuple[Scenario, ...], dict[str, dict]]:
    text = resources.files("specdraft.templates").joinpath("data", "scenarios.json").read_text(encoding="utf-8")
    return scenarios_from(json.loads(text))


SCENARIOS: tuple[Scenario, ...] = _shipped()[0]
"""The whole matrix; every scenario is rendered in both content formats."""
TOOLS = [_shipped()[1][name] for name in ("get_weather", "get_time")]
"""The weather and time tools most scenarios declare."""
SHAPE_TOOLS = [_shipped()[1][name] for name in ("search_flights", "ping", "noop")]
"""Declarations of every shape the official templates distinguish (the file's ``_tool_shapes`` says which)."""
