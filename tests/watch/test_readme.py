"""The README's `watch` commands parse with the real parser, and what they promise is in `watch --help`."""

import argparse
import shlex
from pathlib import Path

import pytest

from specdraft.cli import watch

README = Path(__file__).resolve().parents[2] / "README.md"


def section_commands() -> list[list[str]]:
    text = README.read_text()
    section = text[text.index("### Is speculation paying right now? (`watch`)"):]
    block = section[section.index("```bash") + len("```bash"):]
    block = block[: block.index("```")]
    return [shlex.split(line) for line in block.replace("\\\n", " ").splitlines()
            if line.strip().startswith("python -m specdraft")]


COMMANDS = section_commands()


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="specdraft")
    watch.register(root.add_subparsers(), "watch", "")
    return root


def test_the_section_shows_watch_once_and_by_interval():
    assert {argv[3] for argv in COMMANDS} == {"watch"}
    assert any("--once" in argv for argv in COMMANDS) and any("--interval" in argv for argv in COMMANDS)


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda argv: " ".join(argv[5:8]))
def test_every_command_parses_with_the_real_parser(argv):
    assert parser().parse_args(argv[3:]).run


def test_the_help_states_the_exit_codes_the_readme_promises():
    text = parser()._subparsers._group_actions[0].choices["watch"].format_help()
    promises = ("--min-acceptance", "--once", "--timeout", "--plan", "Exit codes: 0", "1 attention", "2 the server")
    for promise in promises:
        assert promise in text
