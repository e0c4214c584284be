"""The dispatcher's contract shared by every command: help, exit codes, clean failures."""

import os
import subprocess
import sys
from pathlib import Path

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
