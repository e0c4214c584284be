"""compare_to_reference: drift from a reference is reported where no leak explains it, never where one does."""

import json

import pytest

from specdraft.templates import shipped_template
from specdraft.templates.reference import (
    ReferenceSourceError,
    compare_to_checkpoint,
    compare_to_reference,
    find_checkpoint_template,
)


def _shipped(variant="large"):
    return shipped_template(variant).read_text()


def _edited(source, old, new):
    assert old in source, f"the shipped template no longer contains {old!r}"
    return source.replace(old, new, 1)


def test_a_template_is_no_drift_from_itself():
    comparison = compare_to_reference(_shipped(), _shipped(), "large")
    assert comparison.drift == [] and comparison.ours == [] and comparison.reference == []


def test_unsorted_call_arguments_are_drift_with_scenario_format_excerpts_and_a_diff():
    unsorted = _edited(_shipped(), "(arguments if arguments is mapping else {})|dictsort",
                       "(arguments if arguments is mapping else {}).items()")
    comparison = compare_to_reference(unsorted, _shipped(), "large")
    assert comparison.ours == []  # no leak rule can see key order: only the comparison can
    drifted = {(f.scenario, f.content_format) for f in comparison.drift}
    assert drifted == {("tool-call-nested-arguments", "string"), ("tool-call-nested-arguments", "openai")}
    finding = comparison.drift[0]
    assert finding.rule == "format-drift"
    assert finding.excerpt.startswith("reference: …") and "  ours: …" in finding.excerpt
    assert "--- reference\n+++ ours\n" in finding.diff
    assert "-<|tool_call>call:search_flights{cabin:" in finding.diff
    assert "+<|tool_call>call:search_flights{route:" in finding.diff


def test_where_the_reference_leaks_a_different_prompt_is_the_fix_not_drift():
    # a reference that, like Google's, takes the string "false" for thinking on and replays every reasoning field
    leaky = _edited(_shipped(), "{%- set thinking = switch is sameas true -%}",
                    "{%- set thinking = enable_thinking is defined and enable_thinking -%}")
    leaky = _edited(leaky, "switch is not none and switch is not boolean", "false")
    leaky = _edited(leaky, "{%- if calls and index > last.user and reasoning -%}", "{%- if reasoning -%}")
    comparison = compare_to_reference(_shipped(), leaky, "large")
    assert comparison.drift == []
    assert {"think-switch", "thought-replayed"} <= {f.rule for f in comparison.reference}


def test_a_request_the_reference_renders_and_ours_fails_is_drift():
    failing = _edited(_shipped(), "{{- '<|tool_call>call:'",
                      "{{- raise_exception('no calls') -}}{{- '<|tool_call>call:'")
    comparison = compare_to_reference(failing, _shipped(), "large")
    assert any(f.scenario == "tool-call-and-result" and "ours fails: no calls" in f.message for f in comparison.drift)


def test_a_reference_that_does_not_compile_is_named_as_the_reference():
    with pytest.raises(ReferenceSourceError) as caught:
        compare_to_reference(_shipped(), "{{ bos_token }}\n{% if %}", "large")
    assert caught.value.lineno == 2


def test_the_checkpoint_template_is_found_where_transformers_looks(tmp_path):
    assert find_checkpoint_template(tmp_path) is None
    (tmp_path / "processor_config.json").write_text(json.dumps({"chat_template": "from processor"}))
    assert find_checkpoint_template(tmp_path) == (tmp_path / "processor_config.json", "from processor")
    named = [{"name": "tool_use", "template": "tools"}, {"name": "default", "template": "named default"}]
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": named}))
    assert find_checkpoint_template(tmp_path)[1] == "named default"
    (tmp_path / "chat_template.jinja").write_text("from the jinja file")
    assert find_checkpoint_template(tmp_path) == (tmp_path / "chat_template.jinja", "from the jinja file")


def test_unreadable_or_templateless_configs_are_skipped(tmp_path):
    (tmp_path / "tokenizer_config.json").write_text("not json")
    (tmp_path / "processor_config.json").write_text(json.dumps(["a list"]))
    (tmp_path / "chat_template.json").write_text(json.dumps({"chat_template": 3}))
    assert find_checkpoint_template(tmp_path) is None


def test_a_checkpoint_is_compared_with_the_template_it_carries(tmp_path):
    assert compare_to_checkpoint(_shipped(), tmp_path, "large") is None
    leaky = _edited(_shipped(), "{%- if calls and index > last.user and reasoning -%}", "{%- if reasoning -%}")
    leaky = _edited(leaky, "|dictsort -%}\n                {{- (',' if not loop.first) ~ key ~ ':' ~ literal(value)",
                    ".items() -%}\n                {{- (',' if not loop.first) ~ key ~ ':' ~ literal(value)")
    (tmp_path / "chat_template.jinja").write_text(leaky)
    verdict = compare_to_checkpoint(_shipped(), tmp_path, "large")
    assert verdict.reference_file == str(tmp_path / "chat_template.jinja") and verdict.error == ""
    assert verdict.drift == ["tool-call-nested-arguments [string, openai]"]
    assert verdict.reference_rules["thought-replayed"] > 0


def test_a_checkpoint_template_that_does_not_compile_is_said_so(tmp_path):
    (tmp_path / "chat_template.jinja").write_text("{% if %}")
    verdict = compare_to_checkpoint(_shipped(), tmp_path, "large")
    assert verdict.error.startswith("its template does not compile (line 1)")
