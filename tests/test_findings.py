"""One finding type: the template checker's findings are ``specdraft.findings.Finding``s the launch plan keeps."""

from specdraft.findings import Finding, worst_level
from specdraft.planning.facts.chat_template import choose_template
from specdraft.templates import check_template

# Replays every history message verbatim: earlier thoughts reach the next prompt.
LEAKY_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|turn>{{ 'model' if m.role == 'assistant' else m.role }}\n"
    "{% if m.content is string %}{{ m.content }}{% else %}{% for p in m.content or [] %}{{ p.text }}{% endfor %}"
    "{% endif %}<turn|>\n{% endfor %}{% if add_generation_prompt %}<|turn>model\n<|channel>thought\n<channel|>"
    "{% endif %}"
)


def test_a_template_finding_is_a_finding_with_its_rule_as_the_check():
    findings = check_template(LEAKY_TEMPLATE, "large")
    replayed = next(f for f in findings if f.rule == "thought-replayed")
    assert isinstance(replayed, Finding) and worst_level(findings) == "error"
    assert (replayed.check, replayed.hint) == (replayed.rule, replayed.fix)


def test_the_plan_keeps_each_leak_under_its_chat_template_check_cached_or_not(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECDRAFT_CACHE", str(tmp_path / "cache"))
    template = tmp_path / "leaky.jinja"
    template.write_text(LEAKY_TEMPLATE)
    fresh = choose_template(template, "large")
    assert list((tmp_path / "cache" / "template-checks").glob("*.json"))
    cached = choose_template(template, "large")
    assert fresh == cached and fresh.variant == "large"
    leak = next(f for f in fresh.findings if "thought-replayed" in f.message)
    assert type(leak) is Finding and leak.check == "chat-template" and leak.level == "error"
    assert leak.message.startswith("thought-replayed in scenario ") and leak.hint
