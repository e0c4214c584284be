"""The shipped templates render Google's official prompts byte for byte wherever no thought can leak.

The prompts in fixtures/official_prompts.json were rendered with Google's official E2B and 31B templates
(fixtures/render_official_prompts.py says where they are and how to regenerate the file).
"""

import json
from pathlib import Path

import pytest

from specdraft.templates import TemplateRenderError, render_chat, shipped_template
from tests.templates.fixtures.render_official_prompts import render

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "official_prompts.json").read_text())
CASES = FIXTURE["cases"]


def _render(variant, request, content_format, **overrides):
    request = {**request, **overrides}
    return render_chat(shipped_template(variant).read_text(), request["messages"], content_format=content_format,
                       tools=request["tools"], add_generation_prompt=request["add_generation_prompt"],
                       chat_template_kwargs=request["chat_template_kwargs"])


@pytest.mark.parametrize("case", CASES, ids=[f"{c['id']}-{c['variant']}-{c['content_format']}" for c in CASES])
def test_shipped_template_renders_the_official_prompt(case):
    request = {**case["request"], "renderer": case["renderer"]}
    ours = render(shipped_template(case["variant"]).read_text(), request, case["content_format"])
    assert ours == case["official_prompt"]


def test_the_fixture_covers_every_shape_the_format_distinguishes():
    ids = {case["id"] for case in CASES}
    assert {
        "tool-declaration-shapes",  # no description, no properties, no parameters, nested, arrays, enum, nullable
        "tool-call-nested-arguments",  # arguments two levels deep, sorted at every level
        "tool-calls-several", "tool-results-out-of-order",  # several results
        "tool-turn-in-progress-reasoning-thinking-off",  # reasoning kept before a call, newline before <channel|>
        "thinking-on", "thinking-off", "thinking-omitted",
        "system-first", "developer-first", "multi-turn",
    } <= ids
    assert {(case["variant"], case["content_format"], case["renderer"]) for case in CASES} == {
        ("e", "string", "vllm"), ("e", "openai", "vllm"), ("large", "string", "vllm"), ("large", "openai", "vllm"),
        ("e", "string", "transformers"), ("large", "string", "transformers")}
    declarations = next(c for c in CASES if c["id"] == "tool-declaration-shapes")["official_prompt"]
    # what the fixture pins: sorted keys (case-insensitively), dropped keys, the empty description, no properties:{}
    assert "properties:{cabin:{" in declarations and "Flexible:{type:" in declarations
    assert "minimum" not in declarations and "default" not in declarations and "title" not in declarations
    assert "declaration:ping{description:<|\"|><|\"|>,parameters:{type:<|\"|>OBJECT<|\"|>}}" in declarations
    assert ",response:{description:<|\"|>Nothing<|\"|>,type:<|\"|>OBJECT<|\"|>}" in declarations


@pytest.mark.parametrize("variant", ["e", "large"])
def test_a_system_text_given_as_parts_gets_no_trailing_space(variant):
    # Google's templates write "text <turn|>" for parts and "text<turn|>" for a string: ours writes the latter for both
    case = next(c for c in CASES if c["id"] == "system-first" and c["variant"] == variant)
    as_parts = {**case["request"], "messages": [
        {"role": "system", "content": [{"type": "text", "text": "  SYSTEM1 Answer briefly.  "}]},
        *case["request"]["messages"][1:]]}
    assert _render(variant, as_parts, "openai") == case["official_prompt"]
    assert "SYSTEM1 Answer briefly.<turn|>" in case["official_prompt"]


@pytest.mark.parametrize("sent,thinking", [("true", True), ("TRUE", True), ("True", True), ("false", False),
                                           ("FALSE", False), ("False", False), (True, True), (False, False)])
def test_enable_thinking_strings_true_and_false_mean_their_boolean(sent, thinking):
    on = _render("large", _single_question(), "string", chat_template_kwargs={"enable_thinking": True})
    off = _render("large", _single_question(), "string", chat_template_kwargs={"enable_thinking": False})
    assert _render("large", _single_question(), "string", chat_template_kwargs={"enable_thinking": sent}) == (
        on if thinking else off)


@pytest.mark.parametrize("sent", ["yes", "", " true", 1, 0, [True], {"on": True}])
def test_other_enable_thinking_values_are_refused_with_a_message(sent):
    with pytest.raises(TemplateRenderError) as caught:
        _render("e", _single_question(), "string", chat_template_kwargs={"enable_thinking": sent})
    assert caught.value.rejected and "enable_thinking must be true or false" in caught.value.message


def test_tool_call_arguments_that_are_not_a_mapping_are_refused():
    # vLLM always decodes arguments into a mapping; a caller that renders without vLLM gets a clear refusal
    from transformers.utils.chat_template_utils import render_jinja_template

    messages = [{"role": "user", "content": "hi"},
                {"role": "assistant", "tool_calls": [{"id": "c", "type": "function",
                                                      "function": {"name": "f", "arguments": '{"a": 1}'}}]}]
    with pytest.raises(Exception, match="must be a JSON object"):
        render_jinja_template(conversations=[messages], chat_template=shipped_template("e").read_text(),
                              bos_token="<bos>")


def _single_question():
    return {"messages": [{"role": "user", "content": "USER1 What is 2+2?"}], "tools": None,
            "add_generation_prompt": True, "chat_template_kwargs": {}}
