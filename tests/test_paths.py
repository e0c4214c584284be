"""A FIFO or a device given where a file is read is refused before it is opened (a FIFO waits for a writer that
never comes): one line naming it, exit 2, at once. Each command runs in-process under an alarm, so one that
opened the FIFO would be stopped and fail here rather than hang the suite."""

from __future__ import annotations

import contextlib
import io
import os
import signal
from pathlib import Path

import pytest

from specdraft.cli import main

SECONDS = 10


class _Hung(BaseException):
    pass


def _run(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()

    def hung(*_):
        raise _Hung

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(SECONDS)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(argv)
    except _Hung:
        code = -1
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return code, err.getvalue()


COMMANDS = {
    "template check": (["template", "check", "{fifo}"], "chat template {fifo} is a FIFO"),
    "template check --reference": (["template", "check", "{shipped}", "--reference", "{fifo}"],
                                   "chat template {fifo} is a FIFO"),
    "launch --chat-template": (["launch", "--dry-run", "--hotfixes", "skip", "--target", "google/gemma-4-31B-it",
                                "--draft", "google/gemma-4-E2B-it", "--chat-template", "{fifo}"],
                               "--chat-template {fifo} is a FIFO"),
    "bench --prompts": (["bench", "--base-url", "http://127.0.0.1:9", "--model", "m", "--prompts", "{fifo}"],
                        "prompt file {fifo} is a FIFO"),
    "bench --compare-results": (["bench", "--compare-results", "{fifo}", "{fifo}"], "bench result {fifo} is a FIFO"),
    "tune --from-bench": (["tune", "--from-bench", "{fifo}", "--cost-ratio", "0.1"], "bench result {fifo} is a FIFO"),
    "quantize --calib": (["quantize", "--dry-run", "--model", "{model}", "--out", "{out}", "--calib", "{fifo}"],
                         "calibration file {fifo} is not a file"),
}


@pytest.mark.parametrize("name", COMMANDS)
def test_a_fifo_given_as_a_file_is_refused_before_it_is_opened(tmp_path, name):
    from tests.planning.conftest import shipped_config, write_checkpoint

    fifo = tmp_path / "input.jsonl"
    os.mkfifo(fifo)
    model = write_checkpoint(tmp_path / "model", shipped_config("google/gemma-4-E2B-it"))
    shipped = Path(__file__).resolve().parents[1] / "chat_templates" / "gemma4-e-series.jinja"
    argv, said = COMMANDS[name]
    values = {"fifo": fifo, "model": model, "out": tmp_path / "out", "shipped": shipped}
    code, err = _run([arg.format(**values) for arg in argv])
    assert code == 2, err
    assert err.startswith(f"specdraft: error: {said.format(**values)}") and "Traceback" not in err


def test_a_device_given_as_a_template_is_refused():
    code, err = _run(["template", "check", "/dev/zero"])
    assert code == 2 and err.startswith("specdraft: error: chat template /dev/zero is a device, not a regular file")


def test_a_vllm_on_path_that_is_a_fifo_is_not_read(tmp_path, monkeypatch):
    from specdraft.patching.locate import python_behind_vllm

    os.mkfifo(tmp_path / "vllm")
    (tmp_path / "vllm").chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(_Hung()))
    signal.alarm(SECONDS)
    try:
        assert python_behind_vllm() is None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
