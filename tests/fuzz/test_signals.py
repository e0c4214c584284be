"""Signals at random points of ``patch apply`` and ``patch revert``: never a half-applied tree.

Each run starts a real ``python -m specdraft patch apply|revert`` on its own copy of a release's hotfixed
modules and, while the run holds the install's lock (seen in ``/proc/locks``: it is inside apply or
revert), sends SIGINT or SIGTERM after a random delay, sometimes two or three times. Invariants: exit 1 (or 2), no
traceback, an end within ``SECONDS``, the tree byte for byte either as it was or as an uninterrupted run
leaves it, and the last line saying which. The seed (``SPECDRAFT_FUZZ_SEED``) and the number of runs
(``SPECDRAFT_FUZZ_SIGNAL_RUNS``) widen the search.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specdraft.patching import apply, locate

from .cases import REPO
from .patch_trees import copy_hotfixed_modules, pristine_tree

SEED = int(os.environ.get("SPECDRAFT_FUZZ_SEED", "16"))
RUNS = int(os.environ.get("SPECDRAFT_FUZZ_SIGNAL_RUNS", "8"))
SECONDS = 60.0

pytestmark = pytest.mark.skipif(not Path("/proc/locks").exists(), reason="needs Linux's /proc/locks")


def _hashes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in (root / "vllm").rglob("*.py")}


@pytest.fixture(scope="module")
def trees(tmp_path_factory) -> dict[str, Path]:
    """A pristine and a fully applied copy of the hotfixed modules (runs copy them)."""
    pristine_tree()
    base = tmp_path_factory.mktemp("signal-trees")
    pristine = copy_hotfixed_modules(base / "pristine")
    applied = base / "applied"
    shutil.copytree(pristine, applied)
    apply(locate(vllm_root=applied))
    return {"pristine": pristine, "applied": applied}


def _holds_lock(pid: int, directory: Path) -> bool:
    """Whether process ``pid`` holds an flock on ``directory`` (the install's lock)."""
    inode = f":{directory.stat().st_ino} "
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "FLOCK" in fields and str(pid) in fields and inode in line + " ":
            return True
    return False


def _runs() -> list[tuple[int, str, signal.Signals, int]]:
    rng = random.Random(SEED)
    return [(index, rng.choice(["apply", "revert"]), rng.choice([signal.SIGINT, signal.SIGTERM]), rng.randrange(2**32))
            for index in range(RUNS)]


@pytest.mark.parametrize("index, action, number, seed", [
    pytest.param(*run, id=f"{run[0]}-{run[1]}-{run[2].name}") for run in _runs()])
def test_a_signal_at_a_random_point_leaves_the_tree_whole(trees, tmp_path, index, action, number, seed):
    rng = random.Random(seed)
    start, finish = ("pristine", "applied") if action == "apply" else ("applied", "pristine")
    root = tmp_path / "tree"
    shutil.copytree(trees[start], root)
    before, after = _hashes(trees[start]), _hashes(trees[finish])
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.Popen([sys.executable, "-m", "specdraft", "patch", action, "--vllm-root", str(root)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + SECONDS
    sent = 0
    try:
        while run.poll() is None and not _holds_lock(run.pid, root / "vllm") and time.monotonic() < deadline:
            time.sleep(0.005)
        # 1 to 3 signals, each after a random pause, each while the run still holds the lock (a signal once the
        # process has answered and is exiting would only test the interpreter's own exit).
        for _ in range(rng.choice([1, 1, 2, 3])):
            time.sleep(rng.uniform(0, 1.5 if sent == 0 else 0.3))
            if run.poll() is not None or not _holds_lock(run.pid, root / "vllm"):
                break
            run.send_signal(number)
            sent += 1
        out, err = run.communicate(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        run.kill()
        run.communicate()
        pytest.fail(f"{action} still running {SECONDS:.0f}s after it started")

    tree_now = _hashes(root)
    assert "Traceback" not in out + err, err
    assert tree_now in (before, after), f"half state after {sent} {number.name}: {err}"
    if not sent:
        assert run.returncode == 0 and tree_now == after, err
        return
    assert run.returncode in (1, 2), f"exit {run.returncode} after {sent} {number.name}: {err}"
    last = err.strip().splitlines()[-1]
    if tree_now == before:
        assert f"interrupted before {action} wrote anything: nothing was changed" in last, err
    else:
        assert f"{action} finished first, so nothing is half done" in last, err


def _revert_cases() -> list[tuple[int, int]]:
    rng = random.Random(SEED)
    return [(index, rng.randrange(2**32)) for index in range(RUNS)]


@pytest.mark.parametrize("index, seed", [pytest.param(*case, id=f"revert-{case[0]}") for case in _revert_cases()])
def test_revert_after_patched_files_vanished_or_changed_restores_all_or_writes_nothing(trees, tmp_path, capsys, index,
                                                                                      seed):
    """Patched files deleted, edited or put back by hand at random, then revert (with or without --force): every
    journaled file is restored from its backup, or nothing is written and the report says why."""
    from specdraft.cli import main

    rng = random.Random(seed)
    root = tmp_path / "tree"
    shutil.copytree(trees["applied"], root)
    pristine, applied = _hashes(trees["pristine"]), _hashes(trees["applied"])
    patched = sorted(name for name in applied if applied[name] != pristine[name])
    for name in rng.sample(patched, rng.randrange(1, len(patched) + 1)):
        path = root / name
        change = rng.choice(["vanish", "edit", "pristine"])
        if change == "vanish":
            path.unlink()
        elif change == "edit":
            path.write_bytes(path.read_bytes() + b"\n# a later hand edit\n")
        else:
            shutil.copyfile(trees["pristine"] / name, path)
    before = _hashes(root)
    force = rng.random() < 0.5
    code = main(["patch", "revert", "--vllm-root", str(root), *(["--force"] if force else [])])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    now = _hashes(root)
    assert code in (0, 1), err
    if code == 0:
        assert now == pristine, "revert said done but left a patched or missing file"
    else:
        assert now == before, "a refused revert wrote something"
        assert "refused" in out and ("changed since apply" in out or "backup" in out)
