"""The renderer hands templates exactly what vLLM's chat endpoint hands them."""

import pytest
import transformers.utils.chat_template_utils as hf_chat

from specdraft.templates.rendering import (
    TemplateRenderError,
    TemplateSourceError,
    compile_template,
    render_chat,
    to_vllm_conversation,
    to_vllm_tools,
)

ECHO = "{{ messages | tojson }}"


def test_openai_format_turns_a_string_into_one_text_part_and_null_into_an_empty_list():
    conversation = to_vllm_conversation(
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None}], "openai",
        template_names_developer=True,
    )
    assert conversation[0]["content"] == [{"type": "text", "text": "hi"}]
    assert conversation[1]["content"] == []


def test_string_format_joins_text_parts_with_newlines_and_null_becomes_empty():
    conversation = to_vllm_conversation(
        [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
         {"role": "assistant", "content": None}],
        "string",
        template_names_developer=True,
    )
    assert conversation[0]["content"] == "a\nb"
    assert conversation[1]["content"] == ""


def test_tool_messages_are_strings_in_both_formats():
    message = {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "x"}, {"type": "text", "text": "y"}]}
    for content_format in ("string", "openai"):
        assert to_vllm_conversation([message], content_format, template_names_developer=True)[0]["content"] == "x\ny"


def test_tool_call_arguments_are_decoded_to_mappings_and_bad_json_becomes_empty():
    calls = [
        {"id": "a", "type": "function", "function": {"name": "f", "arguments": '{"city": "Paris"}'}},
        {"id": "b", "type": "function", "function": {"name": "g", "arguments": "not json"}},
        {"id": "c", "type": "function", "function": {"name": "h", "arguments": "[1, 2]"}},
        {"id": "d", "type": "function", "function": {"name": "i", "arguments": ""}},
    ]
    conversation = to_vllm_conversation(
        [{"role": "assistant", "content": None, "tool_calls": calls}], "string", template_names_developer=True
    )
    assert [c["function"]["arguments"] for c in conversation[0]["tool_calls"]] == [{"city": "Paris"}, {}, {}, {}]


def test_reasoning_content_is_renamed_to_reasoning_and_both_reach_the_template():
    conversation = to_vllm_conversation(
        [{"role": "assistant", "content": "a", "reasoning_content": "r"}], "string", template_names_developer=True
    )
    assert conversation[0]["reasoning"] == "r" and conversation[0]["reasoning_content"] == "r"


def test_developer_becomes_system_only_when_the_template_never_names_it():
    messages = [{"role": "developer", "content": "d"}, {"role": "user", "content": "u"}]
    assert to_vllm_conversation(messages, "string", template_names_developer=False)[0]["role"] == "system"
    assert to_vllm_conversation(messages, "string", template_names_developer=True)[0]["role"] == "developer"


def test_empty_tool_call_lists_are_dropped():
    conversation = to_vllm_conversation(
        [{"role": "assistant", "content": "a", "tool_calls": []}], "string", template_names_developer=True
    )
    assert "tool_calls" not in conversation[0]


def test_rendering_uses_transformers_environment_trim_and_lstrip_blocks():
    source = "{% for m in messages %}\n    {% if true %}\n{{ m.role }}|{% endif %}\n{% endfor %}"
    assert render_chat(source, [{"role": "user", "content": "x"}], content_format="string") == "user|"


def test_rendering_passes_gemma4_special_tokens_and_chat_template_kwargs():
    source = "{{ bos_token }}{{ eos_token }}{{ enable_thinking }}{{ add_generation_prompt }}"
    prompt = render_chat(source, [{"role": "user", "content": "x"}], content_format="string",
                         chat_template_kwargs={"enable_thinking": True}, add_generation_prompt=False)
    assert prompt == "<bos><eos>TrueFalse"


@pytest.mark.skipif(
    not hasattr(hf_chat, "_normalize_chat_messages"), reason="this transformers passes null values through"
)
def test_keys_with_null_values_are_dropped_before_rendering():
    source = "{{ 'name' in messages[0] }}"
    assert render_chat(source, [{"role": "user", "content": "x", "name": None}], content_format="string") == "False"


def test_the_sandbox_refuses_attribute_escapes():
    with pytest.raises(TemplateRenderError) as caught:
        render_chat("{{ ''.__class__.__mro__ }}", [{"role": "user", "content": "x"}], content_format="string")
    assert not caught.value.rejected


def test_raise_exception_is_reported_as_a_rejection():
    with pytest.raises(TemplateRenderError) as caught:
        render_chat("{{ raise_exception('no') }}", [{"role": "user", "content": "x"}], content_format="string")
    assert caught.value.rejected and caught.value.message == "no"


def test_a_syntax_error_names_its_line():
    with pytest.raises(TemplateSourceError) as caught:
        compile_template("line one\n{% if x %}\n{% for %}\n")
    assert caught.value.lineno == 3


def test_the_generation_tag_of_transformers_templates_compiles():
    source = "{% for m in messages %}{% generation %}{{ m.content }}{% endgeneration %}{% endfor %}"
    assert render_chat(source, [{"role": "assistant", "content": "x"}], content_format="string") == "x"


def test_tools_reach_the_template_as_vllm_dumps_its_request_model():
    tools = [{"type": "function", "function": {"name": "f", "response": {"type": "object"}, "title": "x"}},
             {"type": "function", "defer_loading": True,
              "function": {"name": "g", "description": "d", "parameters": {"type": "object"}, "strict": True}}]
    assert to_vllm_tools(tools) == [
        {"type": "function", "function": {"name": "f", "description": None, "parameters": None}},
        {"type": "function", "function": {"name": "g", "description": "d", "parameters": {"type": "object"},
                                          "strict": True, "defer_loading": True}},
    ]
    assert render_chat("{{ tools | tojson }}", [{"role": "user", "content": "x"}], content_format="string",
                       tools=tools[:1]) == '[{"type": "function", "function": {"name": "f", "description": null, "parameters": null}}]'
