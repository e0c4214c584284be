"""The `watch` commands of docs/bench-and-tune.md parse with the real parser, and what they promise is in
`watch --help`."""

import argparse
import shlex

import pytest

from specdraft.cli import watch
from tests.documented import commands, read, section

PAGE = "docs/bench-and-tune.md"


def section_commands() -> list[list[str]]:
    found = [shlex.split(line, comments=True)
             for line in commands(section(read(PAGE), "Is speculation paying right now? (`watch`)"))]
    return [argv for argv in found if "--help" not in argv]  # the help excerpt is checked in tests/test_docs.py


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


def test_the_help_states_the_exit_codes_the_page_promises():
    text = parser()._subparsers._group_actions[0].choices["watch"].format_help()
    promises = ("--min-acceptance", "--once", "--timeout", "--plan", "Exit codes: 0", "1 attention", "2 the server")
    for promise in promises:
        assert promise in text
