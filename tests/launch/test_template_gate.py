"""Launch checks the chat template it passes and refuses a leaking or wrong-variant one."""

import json

TARGET, DRAFT = "LilaRest/gemma-4-31B-it-NVFP4-turbo", "mikeytag/gemma-4-E2B-it-NVFP4"
# Replays every history message verbatim: earlier thoughts reach the next prompt.
LEAKY_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|turn>{{ 'model' if m.role == 'assistant' else m.role }}\n"
    "{% if m.content is string %}{{ m.content }}{% else %}{% for p in m.content or [] %}{{ p.text }}{% endfor %}"
    "{% endif %}<turn|>\n{% endfor %}{% if add_generation_prompt %}<|turn>model\n<|channel>thought\n<channel|>"
    "{% endif %}"
)


def _plan(specdraft_cli, *args):
    done = specdraft_cli("launch", "--target", TARGET, "--draft", DRAFT, "--dry-run", "--json", *args)
    return done.returncode, json.loads(done.stdout)


def _template_finding(plan):
    return next(f for f in plan["findings"] if f["check"] == "chat-template")


def test_shipped_template_passes_the_check(specdraft_cli):
    code, plan = _plan(specdraft_cli)
    assert code == 0 and _template_finding(plan)["level"] == "ok"


def test_leaking_template_is_refused(specdraft_cli, tmp_path):
    template = tmp_path / "leaky template.jinja"
    template.write_text(LEAKY_TEMPLATE)
    code, plan = _plan(specdraft_cli, "--chat-template", str(template))
    finding = _template_finding(plan)
    assert code == 1 and finding["level"] == "error"
    assert finding["message"].startswith(f"{template} leaks the thought channel: ")


def test_leaking_template_is_allowed_only_when_asked(specdraft_cli, tmp_path):
    template = tmp_path / "leaky.jinja"
    template.write_text(LEAKY_TEMPLATE)
    code, plan = _plan(specdraft_cli, "--chat-template", str(template), "--allow-leaky-template")
    assert code == 0
    assert _template_finding(plan)["level"] == "warning"
    assert "(allowed by --allow-leaky-template)" in _template_finding(plan)["message"]


def test_e_series_template_for_a_large_target_is_refused(specdraft_cli):
    from specdraft.templates import shipped_template

    code, plan = _plan(specdraft_cli, "--chat-template", str(shipped_template("e")))
    assert code == 1
    assert _template_finding(plan)["message"].endswith("is the 'e' variant but target "
                                                       f"{TARGET} needs 'large' (the thinking-off generation prompt "
                                                       "differs)")
