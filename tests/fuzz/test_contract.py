"""Every command against generated bad input keeps the contract: exit 0, 1 or 2, never a traceback, an
error as one ``error:`` line, bounded time, and no file outside the case's own directory changed.

The cases come from ``cases.generate`` with a fixed seed (``SPECDRAFT_FUZZ_SEED`` and
``SPECDRAFT_FUZZ_CASES`` widen the search). They run in-process (fast); every ``SUBPROCESS_EVERY``-th case
also runs as ``python -m specdraft`` to see what a user sees. A breach listed in ``KNOWN_BREACHES`` (in a
command another change owns) is an ``xfail`` with its reason, so it is listed, not hidden; any other fails.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import pytest

from specdraft.cli import main

from .cases import REPO, Case, generate
from .conftest import OUTCOMES, RUN
from .patch_trees import pristine_tree

SEED = int(os.environ.get("SPECDRAFT_FUZZ_SEED", "16"))
PER_COMMAND = int(os.environ.get("SPECDRAFT_FUZZ_CASES", "20"))
SECONDS = 10.0
SUBPROCESS_EVERY = 25
CASES = generate(SEED, PER_COMMAND)
RUN.update(seed=SEED, per_command=PER_COMMAND)

# Breaches found in commands other helpers own, not fixed yet: (does it match this case and breach?, the
# reason, naming the owner). A matching case is an xfail with that reason; any other breach fails.
KNOWN_BREACHES: list[tuple[Callable[[Case, str], bool], str]] = [
]


class _Overtime(BaseException):
    """Raised in the main thread when a case runs past its time (not an Exception: commands must not catch it)."""


@pytest.fixture(scope="module")
def outside(tmp_path_factory) -> Path:
    """Files that generated paths point at (or link to) and that no command may change."""
    pristine_tree()  # resolved before each case points the cache elsewhere
    directory = tmp_path_factory.mktemp("outside")
    (directory / "keep.txt").write_text("a file no command may change\n")
    (directory / "sub").mkdir()
    (directory / "sub" / "config.json").write_text("{}")
    return directory


def _checkout_state() -> str:
    done = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], capture_output=True,
                          text=True, cwd=REPO)
    return done.stdout


@pytest.fixture(scope="module")
def checkout_before() -> str:
    return _checkout_state()


def _digest(directory: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(directory.rglob("*")):
        digest.update(str(path).encode())
        if path.is_file() and not path.is_symlink():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _run_in_process(argv: list[str]) -> tuple[int, str, str, float]:
    out, err = io.StringIO(), io.StringIO()

    def overtime(*_):
        raise _Overtime

    previous = signal.signal(signal.SIGALRM, overtime)
    signal.setitimer(signal.ITIMER_REAL, SECONDS)
    started = time.perf_counter()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exit_:  # argparse refuses a value this way
                code = exit_.code if isinstance(exit_.code, int) else 2
    except _Overtime:
        code = "overtime"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return code, out.getvalue(), err.getvalue(), time.perf_counter() - started


def _not_json(out: str) -> str | None:
    """Why ``out`` is not one strict JSON document (Python's json writes NaN and Infinity, which JSON lacks)."""
    def refuse(constant: str):
        raise ValueError(f"{constant} is not JSON")

    try:
        json.loads(out, parse_constant=refuse)
    except ValueError as err:
        return str(err)[:200]
    return None


def _breach(code, out: str, err: str, crash_logs: list[Path], argv: list[str] = ()) -> str | None:
    if code == "overtime":
        return f"still running after {SECONDS:.0f}s"
    if code == 3 or crash_logs:
        last = crash_logs[0].read_text().strip().splitlines()[-1] if crash_logs else err.strip()[-200:]
        return f"internal error: {last}"
    if code not in (0, 1, 2):
        return f"exit {code}"
    if "Traceback (most recent call last)" in out + err:
        return "traceback on the screen"
    if code == 2 and "error:" not in err:
        return f"exit 2 without an error line: {err.strip()[-200:]!r}"
    if "--json" in argv and code in (0, 1) and out.strip() and _not_json(out):
        return f"--json printed what is not JSON: {_not_json(out)}"
    return None


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id) for case in CASES])
def test_generated_bad_input_keeps_the_contract(case: Case, outside: Path, checkout_before: str, tmp_path: Path,
                                               monkeypatch):
    for variable, value in {"SPECDRAFT_CACHE": tmp_path / "cache", "HF_HOME": tmp_path / "hf",
                            "HF_HUB_CACHE": tmp_path / "hf" / "hub", "HF_HUB_OFFLINE": "1", "TMPDIR": tmp_path,
                            "PATH": "/usr/bin:/bin"}.items():
        monkeypatch.setenv(variable, str(value))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    work = tmp_path / "case"
    work.mkdir()
    argv = case.build(work, outside)
    before = _digest(outside)

    code, out, err, seconds = _run_in_process(argv)
    breach = _breach(code, out, err, sorted(tmp_path.glob("specdraft-crash-*.log")), argv)
    if breach is None and _digest(outside) != before:
        breach = f"changed a file outside its directory ({outside})"
    if breach is None and CASES.index(case) % SUBPROCESS_EVERY == 0:
        breach = _subprocess_breach(argv, tmp_path, code)
    known = next((reason for matches, reason in KNOWN_BREACHES if breach and matches(case, breach)), None)
    OUTCOMES.append({"id": case.id, "command": case.command, "kind": case.kind, "code": code, "seconds": seconds,
                     "breach": breach, "known": known, "said": (err.strip().splitlines() or [""])[0][:150]})
    if known:
        pytest.xfail(known)
    assert breach is None, f"{case.kind}: specdraft {' '.join(argv)}"


def _subprocess_breach(argv: list[str], cwd: Path, in_process_code) -> str | None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    try:
        done = subprocess.run([sys.executable, "-m", "specdraft", *argv], capture_output=True, text=True, cwd=cwd,
                              env=env, timeout=SECONDS + 20)
    except subprocess.TimeoutExpired:
        return "still running as a subprocess"
    if done.returncode != in_process_code:
        return f"exit {done.returncode} as a subprocess, {in_process_code} in-process"
    return _breach(done.returncode, done.stdout, done.stderr, [], argv)


def test_the_checkout_is_left_as_it_was(checkout_before):
    # Runs after the generated cases (pytest keeps file order): none wrote into the repository.
    assert _checkout_state() == checkout_before
