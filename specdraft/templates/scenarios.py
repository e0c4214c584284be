"""The scenario matrix: chat requests that make a Gemma 4 template show whether it can leak.

Each scenario is an OpenAI chat-completions request (messages, tools, chat-template kwargs,
generation prompt) plus what a correct prompt must contain. Thought text planted in history always
carries a ``THOUGHT<n>`` word, so a replayed thought is found by that word alone; text that must
survive (user text, answers, tool calls and results) is listed in ``must_contain``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence


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


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}},
            "required": ["city"],
        },
    },
}
TIME_TOOL = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Local time in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "hour24": {"type": "boolean"}},
            "required": ["city"],
        },
    },
}
TOOLS = [WEATHER_TOOL, TIME_TOOL]
TOOL_DECLARATION = "<|tool>declaration:get_weather{"

# Every declaration shape the official templates distinguish: no description and no properties, no
# parameters at all, nested objects and arrays of objects, an enum, nullable, JSON-schema keys Google drops
# (default, minimum, minLength, additionalProperties, title), property names that sort differently with and
# without case, and a response schema (which vLLM drops before rendering; transformers passes it on).
FLIGHT_TOOL = {
    "type": "function",
    "function": {
        "name": "search_flights",
        "description": "Find flights",
        "parameters": {
            "type": "object",
            "required": ["route", "passengers"],
            "additionalProperties": False,
            "properties": {
                "route": {
                    "type": "object",
                    "description": "Where to fly",
                    "required": ["from", "to"],
                    "properties": {
                        "to": {"type": "string", "description": "IATA code", "minLength": 3},
                        "from": {"type": "string"},
                        "via": {"type": "array", "items": {"type": "string"}},
                    },
                },
                "passengers": {
                    "type": "array",
                    "description": "Who travels",
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
                    },
                },
                "cabin": {"type": "string", "enum": ["economy", "business"], "default": "economy"},
                "max_price": {"type": "number", "nullable": True, "description": "In EUR"},
                "Flexible": {"type": "boolean", "title": "Flexible dates"},
            },
        },
    },
}
PING_TOOL = {"type": "function", "function": {"name": "ping", "parameters": {"type": "object", "properties": {}}}}
NOOP_TOOL = {
    "type": "function",
    "function": {"name": "noop", "description": "Does nothing",
                 "response": {"type": "object", "description": "Nothing", "properties": {"ok": {"type": "boolean"}}}},
}
SHAPE_TOOLS = [FLIGHT_TOOL, PING_TOOL, NOOP_TOOL]
FLIGHT_ARGUMENTS = (
    '{"route": {"to": "NRT", "from": "CDG", "via": ["HEL"]}, "passengers": [{"name": "Ada", "age": 36}, '
    '{"name": "Bo", "age": null}], "cabin": "business", "max_price": 1200.5, "Flexible": true}'
)


def _user(text: Any) -> dict:
    return {"role": "user", "content": text}


def _model(content: Any, **fields: Any) -> dict:
    return {"role": "assistant", "content": content, **fields}


def _call(call_id: str, name: str, arguments: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _result(call_id: str, text: str) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def _call_text(name: str, city: str) -> str:
    return f'<|tool_call>call:{name}{{city:<|"|>{city}<|"|>}}<tool_call|>'


def _result_text(name: str, value: str) -> str:
    return f'<|tool_response>response:{name}{{value:<|"|>{value}<|"|>}}<tool_response|>'


OFF = {"enable_thinking": False}
ON = {"enable_thinking": True}
Q1 = "USER1 What is 2+2?"
Q2 = "USER2 And times 3?"


def _history(reply: dict, *, kwargs: Mapping[str, Any] = OFF, must: Sequence[str] = (), **extra: Any) -> dict:
    """A finished exchange (question, ``reply``) followed by a new question."""
    return dict(messages=[_user(Q1), reply, _user(Q2)], chat_template_kwargs=kwargs, must_contain=[Q1, Q2, *must], **extra)


def _scenarios() -> list[Scenario]:
    weather_call = _call("call_w", "get_weather", '{"city": "Paris"}')
    time_call = _call("call_t", "get_time", '{"city": "Tokyo"}')
    oslo_call = _call("call_o", "get_weather", '{"city": "Oslo"}')
    tool_texts = [_call_text("get_weather", "Paris"), _result_text("get_weather", "RESULT1 sunny")]
    two_call_texts = [
        _call_text("get_weather", "Paris"),
        _call_text("get_time", "Tokyo"),
        _result_text("get_weather", "RESULT1 sunny"),
        _result_text("get_time", "RESULT2 09:00"),
    ]
    return [
        Scenario("thinking-off", "enable_thinking=false", [_user(Q1)], chat_template_kwargs=OFF, must_contain=[Q1]),
        Scenario("thinking-on", "enable_thinking=true", [_user(Q1)], chat_template_kwargs=ON, must_contain=[Q1]),
        Scenario("thinking-omitted", "no enable_thinking kwarg (template default)", [_user(Q1)], must_contain=[Q1]),
        Scenario(
            "thinking-string-false",
            'enable_thinking="false" (a string: truthy in Jinja, must mean false)',
            [_user(Q1)],
            chat_template_kwargs={"enable_thinking": "false"},
            must_contain=[Q1],
        ),
        Scenario(
            "thinking-string-true",
            'enable_thinking="true" (a string, as clients send it through chat_template_kwargs)',
            [_user(Q1)],
            chat_template_kwargs={"enable_thinking": "true"},
            must_contain=[Q1],
        ),
        Scenario(
            "thinking-int-one",
            "enable_thinking=1 (a number, not a boolean)",
            [_user(Q1)],
            chat_template_kwargs={"enable_thinking": 1},
        ),
        Scenario(
            "system-first",
            "a system message first",
            [{"role": "system", "content": "  SYSTEM1 Answer briefly.  "}, _user(Q1)],
            chat_template_kwargs=OFF,
            must_contain=["<|turn>system\nSYSTEM1 Answer briefly.<turn|>", Q1],
        ),
        Scenario(
            "developer-first",
            "a developer message first (renders as system)",
            [{"role": "developer", "content": "DEVELOPER1 Answer in French."}, _user(Q1)],
            chat_template_kwargs=OFF,
            must_contain=["<|turn>system\nDEVELOPER1 Answer in French.<turn|>", Q1],
        ),
        Scenario(
            "system-first-thinking-on",
            "a system message with thinking on: <|think|> opens the same system turn",
            [{"role": "system", "content": "SYSTEM1 Answer briefly."}, _user(Q1)],
            chat_template_kwargs=ON,
            must_contain=["<|turn>system\n<|think|>\nSYSTEM1 Answer briefly.<turn|>", Q1],
        ),
        Scenario(
            "history-inline-thought",
            "an earlier answer carrying its thought inline",
            **_history(_model("<|channel>thought\nTHOUGHT1 add them<channel|>ANSWER1 4"), must=["ANSWER1 4"]),
        ),
        Scenario(
            "history-inline-thought-thinking-on",
            "an earlier answer carrying its thought inline, thinking on",
            **_history(_model("<|channel>thought\nTHOUGHT1 add them<channel|>ANSWER1 4"), kwargs=ON, must=["ANSWER1 4"]),
        ),
        Scenario(
            "history-bare-thought-label",
            "an earlier answer whose markers a server skipped: 'thought\\n' + reasoning + answer",
            **_history(_model("thought\nTHOUGHT2 add them4")),
        ),
        Scenario(
            "history-pipe-spelling",
            "an earlier thought written with the wrong <|channel|> spelling",
            **_history(_model("<|channel|>thought\nTHOUGHT3 add them<channel|>ANSWER3 4"), must=["ANSWER3 4"]),
        ),
        Scenario(
            "history-thought-split-over-parts",
            "an earlier thought split across two text parts",
            **_history(
                _model(
                    [
                        {"type": "text", "text": "<|channel>thought\nTHOUGHT4 some "},
                        {"type": "text", "text": "more THOUGHT5 hidden<channel|>ANSWER4 Visible"},
                    ]
                ),
                must=["ANSWER4 Visible"],
            ),
        ),
        Scenario(
            "history-several-thoughts",
            "an earlier answer with two thought blocks",
            **_history(
                _model(
                    "<|channel>thought\nTHOUGHT6 first<channel|>ANSWER6 part one "
                    "<|channel>thought\nTHOUGHT7 second<channel|>ANSWER7 part two"
                ),
                must=["ANSWER6 part one", "ANSWER7 part two"],
            ),
        ),
        Scenario(
            "history-thought-only",
            "an earlier message that is only a thought block",
            **_history(_model("<|channel>thought\nTHOUGHT8 only thinking<channel|>")),
        ),
        Scenario(
            "history-unclosed-thought",
            "an earlier message cut off inside its thought",
            **_history(_model("<|channel>thought\nTHOUGHT9 still thinking when max_tokens hit")),
        ),
        Scenario(
            "history-reasoning-field",
            "an earlier answer with a separate 'reasoning' field",
            **_history(_model("ANSWER10 4", reasoning="THOUGHT10 add them"), must=["ANSWER10 4"]),
        ),
        Scenario(
            "history-reasoning-content-field",
            "an earlier answer with a separate 'reasoning_content' field",
            **_history(_model("ANSWER11 4", reasoning_content="THOUGHT11 add them"), must=["ANSWER11 4"]),
        ),
        Scenario(
            "final-answer-reasoning-after-last-user",
            "a plain final answer with 'reasoning' after the last user message (no tool call)",
            [_user(Q1), _model("ANSWER12 4", reasoning="THOUGHT12 add them")],
            chat_template_kwargs=OFF,
            must_contain=[Q1, "ANSWER12 4"],
        ),
        Scenario(
            "final-answer-reasoning-after-last-user-no-generation-prompt",
            "the same, rendered without the generation prompt",
            [_user(Q1), _model("ANSWER12 4", reasoning="THOUGHT12 add them")],
            chat_template_kwargs=ON,
            add_generation_prompt=False,
            must_contain=[Q1, "ANSWER12 4"],
        ),
        Scenario(
            "final-answer-inline-thought-after-last-user",
            "a final answer with an inline thought after the last user message",
            [_user(Q1), _model("<|channel>thought\nTHOUGHT13 add them<channel|>ANSWER13 4")],
            chat_template_kwargs=OFF,
            add_generation_prompt=False,
            must_contain=[Q1, "ANSWER13 4"],
        ),
        Scenario(
            "tools-declared",
            "tool declarations, thinking off",
            [_user(Q1)],
            tools=TOOLS,
            chat_template_kwargs=OFF,
            must_contain=[TOOL_DECLARATION, "<|tool>declaration:get_time{", Q1],
        ),
        Scenario(
            "tools-declared-with-system-thinking-on",
            "tool declarations with a system message and thinking on",
            [{"role": "system", "content": "SYSTEM1 Use tools."}, _user(Q1)],
            tools=TOOLS,
            chat_template_kwargs=ON,
            must_contain=["<|turn>system\n<|think|>\nSYSTEM1 Use tools." + TOOL_DECLARATION, Q1],
        ),
        Scenario(
            "tool-call-and-result",
            "one tool call (arguments as a JSON string) and its result; the model continues",
            [_user(Q1), _model(None, tool_calls=[weather_call]), _result("call_w", "RESULT1 sunny")],
            tools=TOOLS,
            chat_template_kwargs=OFF,
            must_contain=[Q1, *tool_texts],
        ),
        Scenario(
            "tool-call-and-result-thinking-on",
            "one tool call and its result, thinking on",
            [_user(Q1), _model(None, tool_calls=[weather_call]), _result("call_w", "RESULT1 sunny")],
            tools=TOOLS,
            chat_template_kwargs=ON,
            must_contain=[Q1, *tool_texts],
        ),
        Scenario(
            "tool-calls-several",
            "two tool calls in one message, results in call order",
            [_user(Q1), _model("", tool_calls=[weather_call, time_call]),
             _result("call_w", "RESULT1 sunny"), _result("call_t", "RESULT2 09:00")],
            tools=TOOLS,
            chat_template_kwargs=OFF,
            must_contain=two_call_texts,
        ),
        Scenario(
            "tool-results-out-of-order",
            "two tool calls, results in reverse order, matched by tool_call_id",
            [_user(Q1), _model(None, tool_calls=[weather_call, time_call]),
             _result("call_t", "RESULT2 09:00"), _result("call_w", "RESULT1 sunny")],
            tools=TOOLS,
            chat_template_kwargs=OFF,
            must_contain=two_call_texts,
        ),
        Scenario(
            "tool-turn-in-progress-with-reasoning",
            "reasoning before a tool call in the turn in progress (may be kept)",
            [_user(Q1), _model(None, reasoning="THOUGHT14 need the weather", tool_calls=[weather_call]),
             _result("call_w", "RESULT1 sunny")],
            tools=TOOLS,
            chat_template_kwargs=ON,
            must_contain=[Q1, *tool_texts],
            kept_thoughts=frozenset({"THOUGHT14"}),
        ),
        Scenario(
            "tool-turn-finished-then-user",
            "a finished tool turn (reasoning, call, result, final answer) before a new question",
            [_user(Q1),
             _model("<|channel>thought\nTHOUGHT15 check<channel|>", reasoning="THOUGHT16 need the weather",
                    tool_calls=[weather_call]),
             _result("call_w", "RESULT1 sunny"),
             _model("ANSWER17 It is sunny.", reasoning="THOUGHT17 summarise"),
             _user(Q2)],
            tools=TOOLS,
            chat_template_kwargs=OFF,
            must_contain=[Q1, Q2, *tool_texts, "ANSWER17 It is sunny."],
        ),
        Scenario(
            "tool-turn-final-answer-with-reasoning",
            "a tool turn finished by a final answer with reasoning, no new question",
            [_user(Q1), _model(None, tool_calls=[weather_call]), _result("call_w", "RESULT1 sunny"),
             _model("ANSWER18 Sunny.", reasoning="THOUGHT18 summarise")],
            tools=TOOLS,
            chat_template_kwargs=OFF,
            must_contain=[Q1, *tool_texts, "ANSWER18 Sunny."],
        ),
        Scenario(
            "adjacent-assistant-messages",
            "two assistant messages in a row",
            [_user(Q1), _model("ANSWER19 first"), _model("<|channel>thought\nTHOUGHT19 more<channel|>ANSWER20 second"),
             _user(Q2)],
            chat_template_kwargs=OFF,
            must_contain=[Q1, Q2, "ANSWER19 first", "ANSWER20 second"],
        ),
        Scenario(
            "empty-and-null-content",
            "empty and null contents (null assistant content beside tool calls, empty user text)",
            [_user(""), _model(""), _user(Q1), _model(None, tool_calls=[weather_call]),
             _result("call_w", "RESULT1 sunny"), _model(None), _user(Q2)],
            tools=TOOLS,
            chat_template_kwargs=OFF,
            must_contain=[Q1, Q2, *tool_texts],
        ),
        Scenario(
            "no-generation-prompt",
            "a finished exchange rendered without the generation prompt",
            [_user(Q1), _model("ANSWER21 4")],
            chat_template_kwargs=OFF,
            add_generation_prompt=False,
            must_contain=[Q1, "ANSWER21 4"],
        ),
        Scenario(
            "tool-declaration-shapes",
            "declarations of every shape: nested, arrays of objects, enum, nullable, dropped keys, no parameters",
            [_user(Q1)],
            tools=SHAPE_TOOLS,
            chat_template_kwargs=OFF,
            must_contain=["<|tool>declaration:search_flights{", "<|tool>declaration:ping{",
                          "<|tool>declaration:noop{", Q1],
        ),
        Scenario(
            "tool-call-nested-arguments",
            "a call whose arguments nest objects and arrays two levels deep, then a JSON result",
            [_user(Q1), _model(None, tool_calls=[_call("call_f", "search_flights", FLIGHT_ARGUMENTS)]),
             _result("call_f", '{"flights": [{"id": "RESULT3", "price": 990}]}')],
            tools=[FLIGHT_TOOL],
            chat_template_kwargs=OFF,
            must_contain=[Q1, "<|tool>declaration:search_flights{", "<|tool_call>call:search_flights{", "NRT", "RESULT3"],
        ),
        Scenario(
            "tool-results-three",
            "three calls in one message and their three results",
            [_user(Q1), _model(None, tool_calls=[weather_call, time_call, oslo_call]),
             _result("call_w", "RESULT1 sunny"), _result("call_t", "RESULT2 09:00"), _result("call_o", "RESULT4 snow")],
            tools=TOOLS,
            chat_template_kwargs=ON,
            must_contain=[*two_call_texts[:2], _call_text("get_weather", "Oslo"),
                          _result_text("get_weather", "RESULT4 snow")],
        ),
        Scenario(
            "tool-call-with-content-then-answer",
            "a tool call with text of its own, its result, the final answer and a new question",
            [_user(Q1), _model("ANSWER22 Let me check.", tool_calls=[weather_call]), _result("call_w", "RESULT1 sunny"),
             _model("ANSWER23 Sunny."), _user(Q2)],
            tools=TOOLS,
            chat_template_kwargs=OFF,
            must_contain=[Q1, Q2, *tool_texts, "ANSWER22 Let me check.", "ANSWER23 Sunny."],
        ),
        Scenario(
            "tool-result-no-generation-prompt",
            "a tool result last, rendered without the generation prompt",
            [_user(Q1), _model(None, tool_calls=[weather_call]), _result("call_w", "RESULT1 sunny")],
            tools=TOOLS,
            chat_template_kwargs=OFF,
            add_generation_prompt=False,
            must_contain=[Q1, *tool_texts],
        ),
        Scenario(
            "multi-turn",
            "three questions and two plain answers, a system message first",
            [{"role": "system", "content": "SYSTEM1 Answer briefly."}, _user(Q1), _model("ANSWER24 4"), _user(Q2),
             _model("ANSWER25 12"), _user("USER3 And minus 5?")],
            chat_template_kwargs=OFF,
            must_contain=["SYSTEM1 Answer briefly.<turn|>", Q1, Q2, "USER3 And minus 5?", "ANSWER24 4", "ANSWER25 12"],
        ),
        Scenario(
            "no-generation-prompt-thinking-on",
            "a user message alone, no generation prompt, thinking on",
            [_user(Q1)],
            chat_template_kwargs=ON,
            add_generation_prompt=False,
            must_contain=[Q1],
        ),
    ]


SCENARIOS: tuple[Scenario, ...] = tuple(_scenarios())
"""The whole matrix; every scenario is rendered in both content formats."""
