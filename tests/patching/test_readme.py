"""Every `specdraft patch` command in the README's "Patching vLLM" section runs (on a real vLLM tree)."""

from __future__ import annotations

import re
import shlex

from .conftest import REPO

PLACEHOLDER = "--python /opt/vllm-venv/bin/python"


def _documented_commands() -> list[str]:
    section = REPO.joinpath("README.md").read_text().split("## Patching vLLM", 1)[1].split("\n## ", 1)[0]
    commands = []
    for line in section.splitlines():
        found = re.search(r"python -m specdraft patch [^#`&]*", line)
        if found:
            commands.append(found.group(0).strip())
    return commands


def test_readme_documents_every_patch_action():
    actions = {command.split()[4] for command in _documented_commands()}
    assert actions == {"list", "status", "diff", "apply", "verify", "revert"}


def test_readme_patch_commands_run_in_order_on_a_real_tree(tree_of, cli):
    root = tree_of("0.33.0")
    for command in _documented_commands():
        argv = shlex.split(command.replace(PLACEHOLDER, f"--vllm-root {root}"))[4:]
        code, out, err = cli(*argv)
        assert code in (0, 1), f"{command}: exit {code}: {err}"
