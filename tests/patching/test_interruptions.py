"""apply and revert are all or nothing under a signal, a failed write, or a patched file that vanished.

Signals go to a real ``python -m specdraft`` (held at the install's lock, so the signal surely lands before
the first write) or, to land one while files are being written, to the CLI run in this process from its
own write step. The tree is then compared byte for byte with the pristine or the fully applied one.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specdraft.patching import Outcome, Status, apply, journal, locate, revert, status
from specdraft.patching.interruptions import Interrupted
from tools.release_trees import copy_tree, release_tree

from .conftest import REPO, py_hashes

RELEASE = "0.26.0"  # four hotfixes pending, in four files


@pytest.fixture
def tree(tmp_path) -> Path:
    return copy_tree(release_tree(RELEASE), tmp_path / "vllm-tree")


@pytest.fixture(scope="module")
def applied_hashes(tmp_path_factory) -> dict[str, str]:
    """The .py hashes of a fully applied tree, from an uninterrupted apply."""
    root = copy_tree(release_tree(RELEASE), tmp_path_factory.mktemp("reference") / "tree")
    apply(locate(vllm_root=root))
    return py_hashes(root)


@pytest.fixture(scope="module")
def pending_count() -> int:
    """How many hotfixes apply changes on the release: what a whole apply or revert reports as changed."""
    return sum(r.status is Status.PENDING for r in status(locate(vllm_root=release_tree(RELEASE))))


def _changed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {name for name in after if before.get(name) != after[name]}


def _start(action: str, root: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "specdraft", "patch", action, "--vllm-root", str(root)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _wait_until_it_holds_open(run: subprocess.Popen, directory: Path, timeout_s: float = 120) -> None:
    """Wait until ``run`` has opened ``directory`` (the lock it then waits on): it is inside the command, its signal
    handling set up, before its first write. Polled instead of slept, so a loaded machine cannot send the signal
    while the interpreter is still importing."""
    fds, wanted = Path(f"/proc/{run.pid}/fd"), str(directory.resolve())
    end, seen = time.monotonic() + timeout_s, 0
    while time.monotonic() < end:
        assert run.poll() is None, run.communicate()
        try:
            held = any(os.path.realpath(fd) == wanted for fd in fds.iterdir())
        except OSError:  # a descriptor closed while it was read
            held = False
        seen = seen + 1 if held else 0
        if seen == 4:  # held across 150 ms: the lock's wait, not a directory listing's brief open
            return
        time.sleep(0.05)
    run.kill()
    raise AssertionError(f"{run.args} did not reach the lock on {directory} in {timeout_s:g} s")


def _signal_while_it_waits_for_the_lock(action: str, root: Path, number: int) -> subprocess.CompletedProcess:
    gate = os.open(root / "vllm", os.O_RDONLY)
    fcntl.flock(gate, fcntl.LOCK_EX)
    try:
        run = _start(action, root)
        _wait_until_it_holds_open(run, root / "vllm")
        run.send_signal(number)
        out, err = run.communicate(timeout=60)
    finally:
        os.close(gate)
    return subprocess.CompletedProcess(run.args, run.returncode, out, err)


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_before_the_first_write_stops_apply_and_changes_nothing(tree, number):
    pristine = py_hashes(tree)
    done = _signal_while_it_waits_for_the_lock("apply", tree, number)
    assert done.returncode == 1, done.stderr
    assert "interrupted before apply wrote anything: nothing was changed" in done.stderr
    assert "Traceback" not in done.stderr
    assert py_hashes(tree) == pristine
    assert not (tree / "vllm/.specdraft").exists()


def test_a_signal_before_the_first_write_stops_revert_and_changes_nothing(tree, applied_hashes):
    apply(locate(vllm_root=tree))
    journal_before = (tree / "vllm/.specdraft/journal.json").read_bytes()
    done = _signal_while_it_waits_for_the_lock("revert", tree, signal.SIGTERM)
    assert done.returncode == 1 and "interrupted before revert wrote anything: nothing was changed" in done.stderr
    assert py_hashes(tree) == applied_hashes
    assert (tree / "vllm/.specdraft/journal.json").read_bytes() == journal_before


def _signal_at_the_first_write(monkeypatch, number: int) -> None:
    """Send ``number`` to this process as the operation writes its first file (then write as usual)."""
    real_write = journal.write_atomically
    sent = []

    def write_then_signal(path, data, **kwargs):
        if not sent:
            sent.append(path)
            os.kill(os.getpid(), number)
        real_write(path, data, **kwargs)

    monkeypatch.setattr(journal, "write_atomically", write_then_signal)


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_apply_writes_lets_it_finish_and_says_so(tree, cli, monkeypatch, applied_hashes, number,
                                                               pending_count):
    _signal_at_the_first_write(monkeypatch, number)
    code, out, err = cli("apply", "--vllm-root", tree)
    name = signal.Signals(number).name
    assert code == 1
    assert f"{name} came once apply had begun writing; apply finished first, so nothing is half done" in err
    assert "kv-sharing-uniform-specs changed" in err
    assert py_hashes(tree) == applied_hashes
    assert out.count("changed: patched") == pending_count


def test_a_signal_while_revert_writes_lets_it_finish_and_says_so(tree, cli, monkeypatch):
    pristine = py_hashes(tree)
    apply(locate(vllm_root=tree))
    _signal_at_the_first_write(monkeypatch, signal.SIGINT)
    code, _, err = cli("revert", "--vllm-root", tree)
    assert code == 1 and "SIGINT came once revert had begun writing; revert finished first" in err
    assert py_hashes(tree) == pristine
    assert json.loads((tree / "vllm/.specdraft/journal.json").read_text()) == {"files": {}}


def test_the_library_raises_interrupted_once_apply_has_finished(tree, monkeypatch, applied_hashes):
    _signal_at_the_first_write(monkeypatch, signal.SIGTERM)
    with pytest.raises(Interrupted) as stopped:
        apply(locate(vllm_root=tree))
    assert stopped.value.finished and "apply finished first" in stopped.value.message
    assert py_hashes(tree) == applied_hashes


def _fail_at_write(monkeypatch, failing: int) -> None:
    """The ``failing``-th file write of the operation fails as a full disk would."""
    real_write = journal.write_atomically
    writes = []

    def write_or_fail(path, data, **kwargs):
        writes.append(path)
        if len(writes) == failing:
            raise OSError(28, "No space left on device", str(path))
        real_write(path, data, **kwargs)

    monkeypatch.setattr(journal, "write_atomically", write_or_fail)


@pytest.mark.parametrize("failing", [1, 5, 9])
def test_a_write_failing_midway_through_apply_puts_every_file_back(tree, cli, monkeypatch, failing):
    # Per patched file: its backup, the journal, then the file; the 9th write is the third patched file.
    pristine = py_hashes(tree)
    _fail_at_write(monkeypatch, failing)
    code, _, err = cli("apply", "--vllm-root", tree)
    assert code == 2 and "No space left on device" in err
    assert "and was rolled back: every file is as it was before" in err
    assert py_hashes(tree) == pristine
    assert not (tree / "vllm/.specdraft").exists()


def test_a_write_failing_midway_through_revert_puts_every_file_back(tree, cli, monkeypatch, applied_hashes,
                                                                   pending_count):
    apply(locate(vllm_root=tree))
    backups = sorted((tree / "vllm/.specdraft/backups").iterdir())
    _fail_at_write(monkeypatch, 3)
    code, _, err = cli("revert", "--vllm-root", tree)
    assert code == 2 and "and was rolled back" in err
    assert py_hashes(tree) == applied_hashes
    assert sorted((tree / "vllm/.specdraft/backups").iterdir()) == backups
    assert [r.outcome for r in revert(locate(vllm_root=tree)) if r.status is Status.PENDING] == [Outcome.CHANGED] * pending_count


def test_revert_restores_a_patched_file_that_vanished_and_says_so(tree, cli):
    pristine = py_hashes(tree)
    apply(locate(vllm_root=tree))
    vanished = tree / "vllm/v1/worker/utils.py"
    vanished.unlink()

    code, out, _ = cli("revert", "--vllm-root", tree)
    assert code == 0
    assert "vllm/v1/worker/utils.py was missing; original bytes restored from the journal's backup" in out
    assert py_hashes(tree) == pristine
    assert {r.status for r in status(locate(vllm_root=tree)) if r.id.startswith("kv-")} == {Status.PENDING}


def test_revert_force_restores_every_file_when_one_vanished_and_another_changed(tree, cli):
    pristine = py_hashes(tree)
    apply(locate(vllm_root=tree))
    (tree / "vllm/v1/worker/utils.py").unlink()
    edited = tree / "vllm/v1/core/kv_cache_utils.py"
    edited.write_bytes(edited.read_bytes() + b"\n# a later hand edit\n")

    code, out, _ = cli("revert", "--vllm-root", tree)
    assert code == 1 and "changed since apply" in out
    assert not (tree / "vllm/v1/worker/utils.py").exists()  # refused: nothing written, the missing file too

    code, out, _ = cli("revert", "--vllm-root", tree, "--force")
    assert code == 0 and "was missing" in out and "change made since apply is discarded" in out
    assert py_hashes(tree) == pristine


def test_revert_writes_nothing_when_a_vanished_files_backup_is_gone(tree, cli, applied_hashes):
    apply(locate(vllm_root=tree))
    record = json.loads((tree / "vllm/.specdraft/journal.json").read_text())["files"]["vllm/v1/worker/utils.py"]
    (tree / "vllm/.specdraft/backups" / record["backup"]).unlink()
    (tree / "vllm/v1/worker/utils.py").unlink()
    expected = {name: digest for name, digest in applied_hashes.items() if name != "vllm/v1/worker/utils.py"}

    code, out, _ = cli("revert", "--vllm-root", tree, "--force")
    assert code == 1 and "backup of vllm/v1/worker/utils.py" in out and "is missing or does not match its hash" in out
    assert py_hashes(tree) == expected


def test_revert_refuses_a_journal_that_names_a_file_outside_the_package(tree, cli, tmp_path):
    apply(locate(vllm_root=tree))
    path = tree / "vllm/.specdraft/journal.json"
    document = json.loads(path.read_text())
    document["files"]["../outside.py"] = document["files"].pop("vllm/v1/worker/utils.py")
    path.write_text(json.dumps(document))

    code, out, _ = cli("revert", "--vllm-root", tree, "--force")
    assert code == 1 and "'../outside.py', which is not a file of the vllm package" in out
    assert not (tree.parent / "outside.py").exists()
