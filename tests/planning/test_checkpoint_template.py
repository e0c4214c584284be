"""Launch compares the template it passes with the one the target checkpoint carries (Google's, usually)."""

import json
import shutil
from pathlib import Path

import pytest

from specdraft.planning import LaunchRequest, build_launch_plan
from specdraft.templates import shipped_template

REPO = Path(__file__).resolve().parents[2]
DRAFT = "mikeytag/gemma-4-E2B-it-NVFP4"


@pytest.fixture(autouse=True)
def offline_empty_hub(tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("SPECDRAFT_CACHE", str(tmp_path / "cache"))


def _target_carrying(tmp_path: Path, template: str | None, *, as_tokenizer_config: bool = False) -> Path:
    target = tmp_path / "target31b"
    shutil.copytree(REPO / "benchmarks" / "gpu" / "configs" / "target31b", target)
    if template is not None and as_tokenizer_config:
        (target / "tokenizer_config.json").write_text(json.dumps({"chat_template": template}))
    elif template is not None:
        (target / "chat_template.jinja").write_text(template)
    return target


def _template_findings(target: Path) -> dict:
    plan = build_launch_plan(LaunchRequest(target=str(target), draft=DRAFT))
    return {f.check: f for f in plan.findings if f.check in ("template-drift", "checkpoint-template")}


def _shipped_with(old: str, new: str) -> str:
    source = shipped_template("large").read_text()
    assert old in source
    return source.replace(old, new, 1)


def test_a_checkpoint_template_that_formats_tools_otherwise_is_drift_naming_the_scenarios(tmp_path):
    unsorted = _shipped_with("(arguments if arguments is mapping else {})|dictsort",
                             "(arguments if arguments is mapping else {}).items()")
    found = _template_findings(_target_carrying(tmp_path, unsorted, as_tokenizer_config=True))
    drift = found["template-drift"]
    assert drift.level == "warning"
    assert "checkpoint's own template (tokenizer_config.json)" in drift.message
    assert drift.message.endswith("not trained on: tool-call-nested-arguments [string, openai]")
    assert "--reference" in drift.hint
    assert "checkpoint-template" not in found  # it breaks no rule


def test_the_checkpoint_templates_own_leaks_are_info(tmp_path):
    leaky = _shipped_with("{%- if calls and index > last.user and reasoning -%}", "{%- if reasoning -%}")
    found = _template_findings(_target_carrying(tmp_path, leaky))
    assert "template-drift" not in found  # where it leaks, a different prompt is the fix
    info = found["checkpoint-template"]
    assert info.level == "info" and "thought-replayed (" in info.message
    assert "gemma4-large.jinja is passed" in info.message


def test_a_checkpoint_without_a_template_is_not_compared(tmp_path):
    assert _template_findings(_target_carrying(tmp_path, None)) == {}


def test_a_hostile_checkpoint_template_is_not_compared_and_does_not_hang_the_plan(tmp_path):
    found = _template_findings(_target_carrying(tmp_path, '{{ bos_token }}{{ "x" * 10**9 }}'))
    info = found["checkpoint-template"]
    assert info.level == "info" and "not compared with the checkpoint's own template (chat_template.jinja)" in info.message
