"""The `bench` and `tune` commands of docs/bench-and-tune.md and the README: every one parses, and those that
need no server run."""

import argparse
import importlib
import shlex

import pytest

from specdraft.cli import main
from tests.documented import commands, read

PAGES = ("docs/bench-and-tune.md", "README.md")


def section_commands() -> list[list[str]]:
    """bench and tune wherever shown, and the baseline's launch on the bench page."""
    found = [(page, shlex.split(line, comments=True)) for page in PAGES for line in commands(read(page))]
    return [argv for page, argv in found
            if argv[3] in ("bench", "tune") or (argv[3] == "launch" and page == PAGES[0])]


COMMANDS = section_commands()


def test_the_pages_show_bench_and_tune_and_the_baseline_they_compare_against():
    assert {argv[3] for argv in COMMANDS} == {"bench", "tune", "launch"}
    assert next(argv for argv in COMMANDS if argv[3] == "launch")[4:] == [
        "--target", "google/gemma-4-31B-it", "--method", "none", "--profile", "h100", "--", "--port", "8001"]


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda argv: " ".join(argv[3:6]))
def test_every_command_parses_with_the_real_parser(argv):
    parser = argparse.ArgumentParser(prog="specdraft")
    sub = parser.add_subparsers()
    importlib.import_module(f"specdraft.cli.{argv[3]}").register(sub, argv[3], "")
    assert parser.parse_args(argv[3:]).run


@pytest.mark.parametrize("argv", [a for a in COMMANDS if "--per-position-acceptance" in a],
                         ids=lambda argv: " ".join(argv[5:]))
def test_commands_that_need_no_server_run(argv, capsys):
    assert main(argv[3:]) == 0
    assert "recommended" in capsys.readouterr().out
