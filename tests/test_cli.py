"""The dispatcher's contract shared by every command: help, exit codes, clean failures."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def run(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "specdraft", *args], capture_output=True, text=True, cwd=REPO, **kwargs)


def test_no_command_prints_help_and_lists_every_command():
    done = run()
    assert done.returncode == 0
    for command in ("patch", "template", "launch", "bench", "tune", "watch", "quantize", "cluster"):
        assert command in done.stdout


def test_an_unknown_command_is_bad_input_without_a_traceback():
    done = run("no-such-command")
    assert done.returncode == 2 and "Traceback" not in done.stderr


def test_a_reader_that_goes_away_is_not_an_internal_error():
    read_end, write_end = os.pipe()
    os.close(read_end)  # like `specdraft tune ... | head -0`: nobody reads
    done = subprocess.run([sys.executable, "-m", "specdraft", "tune", "--per-position-acceptance", "0.8,0.6",
                           "--cost-ratio", "0.1"], stdout=write_end, stderr=subprocess.PIPE, text=True, cwd=REPO)
    os.close(write_end)
    assert done.returncode == 0, done.stderr
    assert "internal error" not in done.stderr


def test_the_crash_log_names_the_versions_a_bug_report_needs(tmp_path, monkeypatch, capsys):
    import importlib.metadata
    import platform
    import tempfile

    from specdraft import __version__
    from specdraft.cli import _report_internal_error

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    try:
        raise RuntimeError("a bug")
    except RuntimeError:
        _report_internal_error(["quantize", "--model", "my model"])
    (log,) = tmp_path.glob("specdraft-crash-*.log")
    text = log.read_text()
    assert str(log) in capsys.readouterr().err
    assert f"specdraft {__version__}" in text and f"Python {platform.python_version()}" in text
    assert f"transformers {importlib.metadata.version('transformers')}" in text
    assert f"nvidia-modelopt {importlib.metadata.version('nvidia-modelopt')}" in text
    assert "vllm not installed" in text or f"vllm {importlib.metadata.version('vllm')}" in text
    assert "command: specdraft quantize --model 'my model'" in text
    assert text.rstrip().endswith("RuntimeError: a bug")


def _every_parser():
    """(words, parser) for every command and action of the real CLI, as ``specdraft WORDS --help`` reaches it."""
    import argparse

    from specdraft.cli import COMMANDS, _build_parser

    def walk(parser, words):
        yield words, parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from walk(sub, (*words, name))

    for command in COMMANDS:
        (subparsers,) = [a for a in _build_parser([command])._actions if isinstance(a, argparse._SubParsersAction)]
        yield from walk(subparsers.choices[command], (command,))


def test_every_command_and_action_has_a_description():
    assert [" ".join(words) for words, parser in _every_parser() if not (parser.description or "").strip()] == []


def test_help_speaks_of_every_hotfix_without_markdown():
    for words, _ in _every_parser():
        done = run(*words, "--help")
        assert done.returncode == 0, (words, done.stderr)
        assert "`" not in done.stdout, words
        assert "KV-sharing hotfixes" not in done.stdout, words


def test_launch_patch_and_cluster_share_one_python_default():
    from specdraft.patching.locate import DEFAULT_INTERPRETER

    said = DEFAULT_INTERPRETER.replace("`", "")
    for words in (("launch",), ("patch", "status"), ("patch", "apply"), ("cluster", "report")):
        assert said in " ".join(run(*words, "--help").stdout.split()), words


LAUNCH = ["launch", "--dry-run", "--target", "google/gemma-4-31B-it", "--draft", "google/gemma-4-E2B-it"]


@pytest.mark.parametrize("argv, said", [
    (["bench", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--prompts", "./missing.jsonl"],
     "prompt file ./missing.jsonl does not exist"),
    (["bench", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--out", "./a-dir"], "--out ./a-dir is a directory"),
    (["bench", "--compare-results", "./a.json", "./b.json"], "bench result ./a.json does not exist"),
    (["tune", "--from-bench", "./missing.json"], "bench result ./missing.json does not exist"),
    (["tune", "--per-position-acceptance", "0.8", "--step-times", "./draft.json", "./target.json"],
     "bench result ./draft.json does not exist"),
    (["tune", "--per-position-acceptance", "0.8", "--fit-steps", "./k2.json", "./k4.json", "--target-bench",
      "./target.json"], "bench result ./target.json does not exist"),
    (["watch", "--base-url", "http://127.0.0.1:9", "--plan", "./missing.json"], "--plan ./missing.json does not exist"),
    (["template", "check", "./missing.jinja"], "cannot read ./missing.jinja: No such file or directory"),
    (["template", "check", "./a-dir"], "chat template ./a-dir is a directory, not a file"),
    (["patch", "status", "--vllm-root", "./missing"], "path ./missing does not exist"),
    ([*LAUNCH, "--chat-template", "./missing.jinja"], "--chat-template ./missing.jinja: no such file"),
    ([*LAUNCH, "--from-bench", "./missing.json"], "bench result ./missing.json does not exist"),
], ids=["bench --prompts", "bench --out", "bench --compare-results", "tune --from-bench", "tune --step-times",
        "tune --target-bench", "watch --plan", "template check", "template check of a directory",
        "patch --vllm-root", "launch --chat-template", "launch --from-bench"])
def test_a_path_argument_is_named_as_typed(tmp_path, monkeypatch, capsys, argv, said):
    # argparse's type=Path would turn ./x into x: the user could not find what the message names
    from specdraft.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-dir").mkdir()
    assert main(argv) == 2
    assert capsys.readouterr().err.splitlines()[0] == f"specdraft: error: {said}"
