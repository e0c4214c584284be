"""Every `specdraft patch` command of docs/patching.md runs (on a real vLLM tree)."""

from __future__ import annotations

import shlex

from tests.documented import commands, read

PAGE = "docs/patching.md"
PLACEHOLDER = "--python /opt/vllm-venv/bin/python"


def _documented_commands() -> list[str]:
    return [command for command in commands(read(PAGE)) if command.split()[3] == "patch"]


def test_the_page_documents_every_patch_action():
    actions = {command.split()[4] for command in _documented_commands()}
    assert actions == {"list", "status", "diff", "apply", "verify", "revert"}


def test_the_page_patch_commands_run_in_order_on_a_real_tree(tree_of, cli):
    root = tree_of("0.33.0")
    for command in _documented_commands():
        argv = shlex.split(command.replace(PLACEHOLDER, f"--vllm-root {root}"), comments=True)[4:]
        code, out, err = cli(*argv)
        assert code in (0, 1), f"{command}: exit {code}: {err}"
