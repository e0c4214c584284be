"""A hostile or broken template ends in one finding, within bounded time and memory, never a hang."""

import time

import pytest

from specdraft.templates import TemplateSourceError, check_template
from specdraft.templates.limits import Limits, RenderJob, render_within_limits

HI = [RenderJob([{"role": "user", "content": "hi"}], "string")]


def test_a_gigabyte_string_is_a_render_limit_finding():
    started = time.monotonic()
    findings = check_template('{{ bos_token }}{{ "x" * 10**9 }}', "e")
    assert [(f.rule, f.scenario) for f in findings] == [("render-limit", "thinking-off")]
    assert "MiB of memory" in findings[0].message
    assert time.monotonic() - started < 60  # unbounded, it took minutes


def test_a_prompt_longer_than_any_real_prompt_is_a_render_limit_finding():
    findings = check_template('{{ bos_token }}{{ "x" * 10**7 }}', "e")
    assert [f.rule for f in findings] == ["render-limit"]
    assert "10,000,005 characters long" in findings[0].message


def test_a_render_that_runs_too_long_is_stopped():
    endless = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    started = time.monotonic()
    (outcome,) = render_within_limits(endless, HI * 3, Limits(seconds_per_render=0.5))
    assert outcome.limit == "rendering took longer than 0.5 s"
    assert time.monotonic() - started < 30


def test_a_render_past_a_limit_ends_the_batch_and_earlier_renders_are_kept():
    source = "{{ 'x' * (10**6 if messages[0].content == 'big' else 1) }}"
    jobs = [HI[0], RenderJob([{"role": "user", "content": "big"}], "string"), HI[0]]
    outcomes = render_within_limits(source, jobs, Limits(prompt_chars=1000))
    assert [o.prompt for o in outcomes[:1]] == ["x"] and len(outcomes) == 2 and outcomes[1].limit


def test_endless_recursion_is_a_limit_not_a_crash():
    (outcome,) = render_within_limits("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}", HI)
    assert outcome.limit == "rendering nests deeper than Python's recursion limit"


@pytest.mark.parametrize("source", ["", "  \n\t\n"])
def test_an_empty_template_is_one_finding(source):
    findings = check_template(source, "large")
    assert [(f.rule, f.scenario, f.content_format) for f in findings] == [("empty-template", "(template)", None)]


def test_a_template_too_large_to_be_a_chat_template_is_one_finding():
    findings = check_template("{{ bos_token }}" + " " * 300_000, "e")
    assert [f.rule for f in findings] == ["render-limit"] and "over the limit of 256,000" in findings[0].message


def test_a_syntax_error_still_names_its_line():
    with pytest.raises(TemplateSourceError) as caught:
        render_within_limits("ok\n{% for %}", HI)
    assert caught.value.lineno == 2
