"""check_template: shipped templates pass everything; official-like templates show the known leaks;
every rule catches the defect it is named after (each shown on a mutated copy of a shipped template)."""

from pathlib import Path

import pytest

from specdraft.templates import RULES, SCENARIOS, TemplateSourceError, check_template, shipped_template
from specdraft.templates.check import detect_variant

FIXTURES = Path(__file__).parent / "fixtures"


def _rules_by_case(findings):
    return {(f.rule, f.scenario, f.content_format) for f in findings}


@pytest.mark.parametrize("variant", ["e", "large"])
def test_shipped_template_has_no_finding_on_any_scenario_in_either_format(variant):
    assert check_template(shipped_template(variant).read_text(), variant) == []


EMPTY_BLOCK = """\
    {%- if not thinking -%}
        {#- the large models emit a thought block even with thinking off: give them an empty, closed one -#}
        {{- '<|channel>thought\\n<channel|>' -}}
    {%- endif -%}
"""


def test_shipped_templates_differ_only_in_the_thinking_off_generation_prompt():
    e_header, e_body = shipped_template("e").read_text().split("\n", 1)
    large_header, large_body = shipped_template("large").read_text().split("\n", 1)
    assert "E2B / E4B" in e_header and "26B-A4B / 31B" in large_header
    assert large_body.count(EMPTY_BLOCK) == 1
    assert large_body.replace(EMPTY_BLOCK, "") == e_body


def test_shipped_template_for_one_size_fails_the_other():
    e_on_large = {f.rule for f in check_template(shipped_template("e").read_text(), "large")}
    large_on_e = {f.rule for f in check_template(shipped_template("large").read_text(), "e")}
    assert e_on_large == {"empty-thought-block"} and large_on_e == {"empty-thought-block"}


@pytest.mark.parametrize("variant", ["e", "large"])
def test_the_official_templates_leak_cases_are_reported(variant):
    found = _rules_by_case(check_template((FIXTURES / f"official_like_{variant}.jinja").read_text(), variant))
    for fmt in ("string", "openai"):
        assert ("thought-replayed", "history-bare-thought-label", fmt) in found
        assert ("thought-replayed", "history-pipe-spelling", fmt) in found
        assert ("wrong-marker-spelling", "history-pipe-spelling", fmt) in found
        assert ("thought-replayed", "final-answer-reasoning-after-last-user", fmt) in found
        assert ("think-switch", "thinking-string-false", fmt) in found
    # a thought split over text parts only exists in the openai content format
    assert ("thought-replayed", "history-thought-split-over-parts", "openai") in found
    assert ("thought-replayed", "history-thought-split-over-parts", "string") not in found
    # what the official templates get right is not reported
    assert not any(rule in {"thought-replayed"} and s == "history-inline-thought" for rule, s, _ in found)


def test_a_finding_names_rule_scenario_format_excerpt_and_fix():
    findings = check_template((FIXTURES / "official_like_e.jinja").read_text(), "e")
    finding = next(f for f in findings if f.scenario == "history-bare-thought-label")
    assert finding.rule == "thought-replayed" and finding.content_format == "string"
    assert "<|turn>model\\nthought\\nTHOUGHT2" in finding.excerpt
    assert finding.fix and finding.message
    assert set(finding.to_dict()) == {"rule", "scenario", "content_format", "message", "excerpt", "fix", "diff"}


def test_the_variant_is_detected_from_the_thinking_off_generation_prompt():
    assert detect_variant(shipped_template("e").read_text()) == "e"
    assert detect_variant(shipped_template("large").read_text()) == "large"


def test_a_broken_template_raises_with_its_line_number():
    with pytest.raises(TemplateSourceError) as caught:
        check_template("{{ bos_token }}\n{% if %}", "e")
    assert caught.value.lineno == 2


# (rule, variant, [(text in the shipped template, replacement, occurrence: 1 = first, -1 = last), ...])
MUTATIONS = [
    ("missing-bos", "e", [("{{- bos_token -}}", "", 1)]),
    ("thought-replayed", "e", [("answer(m['content']) if role == 'model'", "plain(m['content']) if role == 'model'", 1)]),
    ("open-thought-channel", "large", [("{{- '<|channel>thought\\n<channel|>' -}}", "{{- '<|channel>thought\\n' -}}", 1)]),
    ("empty-thought-block", "large", [("{{- '<|channel>thought\\n<channel|>' -}}", "", 1)]),
    ("generation-prompt", "e", [("{{- '<|turn>model\\n' -}}", "", -1)]),
    ("wrong-marker-spelling", "e",
     [("{{- '<|channel>thought\\n' ~ reasoning", "{{- '<|channel|>thought\\n' ~ reasoning", 1)]),
    ("python-repr", "e", [("else plain(m['content'])", "else m['content']|string", 1)]),
    ("python-repr", "e", [("'' if function['description'] is none else function['description']",
                           "function['description']", 1)]),
    ("think-switch", "e",
     [("switch is not none and switch is not boolean", "false", 1),
      ("{%- set thinking = switch is sameas true -%}", "{%- set thinking = enable_thinking is defined and enable_thinking -%}", 1)]),
    ("tool-result-turn", "e",
     [("{{- '<|tool_response>response:' ~ name ~ '{value:'", "{{- '<turn|>\\n<|turn>tool\\n<|tool_response>response:' ~ name ~ '{value:'", 1)]),
    ("tool-args-json-string", "e",
     [("'<|tool_call>call:' ~ function['name'] ~ '{'", "'<|tool_call>call:' ~ function['name'] ~ '{' ~ arguments|tojson", 1)]),
    ("unbalanced-markers", "e", [("{{- '<turn|>\\n' -}}", "", -1)]),
    ("role-names", "e", [("{{- '<|turn>' ~ role ~ '\\n' -}}", "{{- '<|turn>' ~ m['role'] ~ '\\n' -}}", 1)]),
    ("system-turn", "e", [("{%- if thinking or tools or has_system -%}", "{%- if has_system -%}", 1)]),
    ("content-dropped", "e", [("{{- content -}}", "", 1)]),
    ("whitespace-changed", "e", [("{{- (' ' if not loop.first) ~ part['text']|trim -}}", "{{- part['text']|trim ~ ' ' -}}", 1)]),
    ("render-error", "e", [("{{- bos_token -}}", "{{- bos_token -}}{{- messages[0].content.missing() -}}", 1)]),
]


def _mutate(source: str, old: str, new: str, occurrence: int) -> str:
    assert old in source, f"the shipped template no longer contains {old!r}; update this mutation"
    if occurrence == -1:
        head, _, tail = source.rpartition(old)
        return head + new + tail
    return source.replace(old, new, 1)


@pytest.mark.parametrize("rule,variant,edits", MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_each_rule_catches_its_defect(rule, variant, edits):
    source = shipped_template(variant).read_text()
    for old, new, occurrence in edits:
        source = _mutate(source, old, new, occurrence)
    assert rule in {f.rule for f in check_template(source, variant)}


def test_every_rule_has_a_mutation_test():
    assert {r.id for r in RULES} | {"render-error"} == {m[0] for m in MUTATIONS}


def test_scenario_ids_are_unique_and_cover_both_thinking_kwargs_shapes():
    ids = [s.id for s in SCENARIOS]
    assert len(ids) == len(set(ids))
    shapes = {type(s.chat_template_kwargs.get("enable_thinking")) for s in SCENARIOS}
    assert {bool, str, int, type(None)} <= shapes


def test_a_template_may_refuse_a_thinking_switch_given_as_a_string():
    strict = shipped_template("e").read_text()
    strings_read = "{%- if switch is string and switch|lower in ['true', 'false'] -%}"
    assert strings_read in strict
    assert check_template(strict.replace(strings_read, "{%- if false -%}", 1), "e") == []


def test_a_template_that_reads_the_string_false_as_thinking_on_is_caught():
    source = shipped_template("e").read_text()
    source = source.replace("switch|lower == 'true'", "switch|length > 0", 1)  # any non-empty string means on
    found = {(f.rule, f.scenario) for f in check_template(source, "e")}
    assert ("think-switch", "thinking-string-false") in found
