"""Probe a running OpenAI-compatible server for thought-channel leaks in what it returns.

``probe_server`` sends a few chat requests (thinking off, on and omitted, tools declared, history that
carries thoughts), each once without and once with streaming, and scans every answer: ``content``
must hold none of Gemma 4's markers nor a leading bare ``thought\\n`` label, and a message with tool
calls must not also carry ``call:`` text. Tool-call names and arguments must be free of markers too.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Mapping

import httpx

from specdraft.errors import UserError
from specdraft.families.gemma4 import (
    CHANNEL_CLOSE,
    CHANNEL_OPEN,
    STRING_DELIMITER,
    THINK,
    THOUGHT_LABEL,
    TOOL_CALL_CLOSE,
    TOOL_CALL_OPEN,
    TOOL_RESPONSE_CLOSE,
    TOOL_RESPONSE_OPEN,
    TURN_CLOSE,
    TURN_OPEN,
)
from specdraft.templates.scenarios import TOOLS

CONTENT_MARKERS = (
    CHANNEL_OPEN,
    CHANNEL_CLOSE,
    "<|channel|>",  # the gpt-oss spelling some recipes and parsers use by mistake
    TOOL_CALL_OPEN,
    TOOL_CALL_CLOSE,
    STRING_DELIMITER,
    TOOL_RESPONSE_OPEN,
    TOOL_RESPONSE_CLOSE,
    TURN_CLOSE,
    TURN_OPEN,
    THINK,
)

PROBE_TIMEOUT_S = 120.0
"""How long each probe request waits for the server's answer (``template probe --timeout``): a non-streamed
answer comes whole, after every token of it is generated."""


@dataclass(frozen=True)
class ProbeRequest:
    id: str
    description: str
    messages: list[dict]
    tools: list[dict] | None = None
    chat_template_kwargs: Mapping[str, Any] | None = None

    @property
    def asks_for_thinking(self) -> bool:
        """True when the request itself switches thinking on (otherwise the server's default applies)."""
        return (self.chat_template_kwargs or {}).get("enable_thinking") is True


_QUESTION = {"role": "user", "content": "What is 2+2?"}
PROBE_REQUESTS: tuple[ProbeRequest, ...] = (
    ProbeRequest("thinking-off", "a question, enable_thinking=false", [_QUESTION], None, {"enable_thinking": False}),
    ProbeRequest("thinking-on", "a question, enable_thinking=true", [_QUESTION], None, {"enable_thinking": True}),
    ProbeRequest("thinking-default", "a question, server's default thinking", [_QUESTION]),
    ProbeRequest("tools-declared", "a question with tools declared", [_QUESTION], list(TOOLS), {"enable_thinking": False}),
    ProbeRequest(
        "history-with-thoughts",
        "a follow-up after answers that carry thoughts (inline and bare label)",
        [
            _QUESTION,
            {"role": "assistant", "content": "<|channel>thought\nadd them<channel|>4"},
            {"role": "user", "content": "And times 3?"},
            {"role": "assistant", "content": "thought\nmultiply12"},
            {"role": "user", "content": "Thanks. Minus 2?"},
        ],
        None,
        {"enable_thinking": False},
    ),
)


@dataclass(frozen=True)
class Leak:
    where: str
    """``content`` or ``tool_calls[i].function.name|arguments``."""
    marker: str
    excerpt: str


@dataclass
class ProbeResult:
    request: str
    stream: bool
    content: str = ""
    reasoning: str = ""
    tool_calls: list[dict] = field(default_factory=list)
    leaks: list[Leak] = field(default_factory=list)
    error: str | None = None
    note: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and not self.leaks

    def to_dict(self) -> dict:
        return {**asdict(self), "ok": self.ok}


def _excerpt(text: str, at: int, width: int = 40) -> str:
    return text[max(0, at - width) : at + width].replace("\n", "\\n")


def scan_message(content: str | None, tool_calls: list[dict]) -> list[Leak]:
    """Leak markers in an assistant message as a client receives it."""
    content = content or ""
    leaks = [Leak("content", m, _excerpt(content, content.find(m))) for m in CONTENT_MARKERS if m in content]
    if content.lstrip().startswith(THOUGHT_LABEL):
        leaks.append(Leak("content", "leading 'thought\\n'", _excerpt(content, 0)))
    if tool_calls and "call:" in content:
        leaks.append(Leak("content", "call: beside tool_calls", _excerpt(content, content.find("call:"))))
    for index, call in enumerate(tool_calls):
        function = call.get("function") or {}
        for part in ("name", "arguments"):
            text = function.get(part) or ""
            leaks += [
                Leak(f"tool_calls[{index}].function.{part}", m, _excerpt(text, text.find(m)))
                for m in CONTENT_MARKERS
                if m in text
            ]
    return leaks


def _merge_tool_call_deltas(calls: list[dict], deltas: list[dict]) -> None:
    for delta in deltas:
        index = delta.get("index", len(calls))
        while len(calls) <= index:
            calls.append({"function": {"name": "", "arguments": ""}})
        function = delta.get("function") or {}
        calls[index]["function"]["name"] += function.get("name") or ""
        calls[index]["function"]["arguments"] += function.get("arguments") or ""


def _reasoning_of(message: Mapping[str, Any]) -> str:
    return message.get("reasoning") or message.get("reasoning_content") or ""


def _not_a_chat_completion(response: httpx.Response, text: str) -> UserError:
    return UserError(f"{response.request.url} answered with something that is not an OpenAI chat completion: "
                     f"{text[:120]!r}", hint="point --base-url at the OpenAI root of a vLLM server, e.g. "
                                             "http://localhost:8000/v1")


def _reply_json(text: str, response: httpx.Response) -> Any:
    """The reply parsed as JSON; a reply that is not JSON (a web page, a proxy's error) is a ``UserError``."""
    try:
        return json.loads(text)
    except ValueError:
        raise _not_a_chat_completion(response, text) from None


def _completion_message(data: Any) -> Mapping[str, Any]:
    try:
        message = data["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        message = None
    if not isinstance(message, dict):
        raise UserError(f"the server's reply has no choices[0].message: {json.dumps(data)[:120]}",
                        hint="point --base-url at the OpenAI root of a vLLM server, e.g. http://localhost:8000/v1")
    return message


def _send(client: httpx.Client, body: dict, result: ProbeResult) -> None:
    if not result.stream:
        response = client.post("/chat/completions", json=body)
        response.raise_for_status()
        message = _completion_message(_reply_json(response.text, response))
        result.content = message.get("content") or ""
        result.reasoning = _reasoning_of(message)
        result.tool_calls = message.get("tool_calls") or []
        return
    with client.stream("POST", "/chat/completions", json={**body, "stream": True}) as response:
        if response.status_code >= 400:
            response.read()
            response.raise_for_status()
        for line in response.iter_lines():
            if not line.startswith("data:") or line.strip() == "data: [DONE]":
                continue
            chunk = _reply_json(line[len("data:") :], response)
            if not isinstance(chunk, dict):
                raise _not_a_chat_completion(response, line)
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                result.content += delta.get("content") or ""
                result.reasoning += _reasoning_of(delta)
                _merge_tool_call_deltas(result.tool_calls, delta.get("tool_calls") or [])


def probe_server(
    base_url: str,
    model: str,
    *,
    api_key: str | None = None,
    max_tokens: int = 64,
    extra_body: Mapping[str, Any] | None = None,
    extra_body_for: Callable[[ProbeRequest], Mapping[str, Any]] | None = None,
    requests: tuple[ProbeRequest, ...] = PROBE_REQUESTS,
    timeout_s: float = PROBE_TIMEOUT_S,
    progress: Callable[[ProbeResult], None] | None = None,
) -> list[ProbeResult]:
    """Send every probe request, streaming and not, and scan each answer for leaks.

    ``base_url`` is the OpenAI root (``http://host:8000/v1``). ``extra_body`` is merged into every
    request, then ``extra_body_for(request)`` (``chat_template_kwargs`` are merged key by key, the
    probe request's own keys winning). A server without auto tool choice answers the tools request
    with HTTP 400; it is then sent again with ``tool_choice: "none"`` (the tools still reach the
    template) and the result carries a note. Raises ``httpx.TransportError`` when the server cannot
    be reached at all; other HTTP errors are recorded in their result.
    """
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    results = []
    with httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout_s) as client:
        for request in requests:
            extra = {**(extra_body or {}), **(extra_body_for(request) if extra_body_for else {})}
            body: dict[str, Any] = {"model": model, "messages": request.messages, "max_tokens": max_tokens, **extra}
            kwargs = {**(extra.get("chat_template_kwargs") or {}), **(request.chat_template_kwargs or {})}
            if kwargs:
                body["chat_template_kwargs"] = kwargs
            if request.tools:
                body["tools"] = request.tools
            for stream in (False, True):
                results.append(_probe_one(client, request, body, stream))
                if progress:
                    progress(results[-1])
    return results


def _probe_one(client: httpx.Client, request: ProbeRequest, body: dict, stream: bool) -> ProbeResult:
    result = ProbeResult(request.id, stream)
    try:
        try:
            _send(client, body, result)
        except httpx.HTTPStatusError as err:
            if not (request.tools and err.response.status_code == 400 and "tool choice" in err.response.text):
                raise
            result = ProbeResult(request.id, stream, note="no auto tool choice on the server; sent tool_choice=none")
            _send(client, {**body, "tool_choice": "none"}, result)
        result.leaks = scan_message(result.content, result.tool_calls)
    except httpx.HTTPStatusError as err:
        result.error = f"HTTP {err.response.status_code}: {err.response.text[:300]}"
    return result
