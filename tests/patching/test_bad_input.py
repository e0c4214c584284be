"""Bad input: one clear line (what, where, the next command), exit 2, no traceback, nothing changed."""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path

from .conftest import run_specdraft


def _digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted((root / "vllm").rglob("*")):
        if path.is_file():
            digest.update(str(path).encode() + path.read_bytes())
    return digest.hexdigest()


def _assert_one_clear_error(done, *expected: str) -> None:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("specdraft: error: ") and lines[1].startswith("specdraft: next: ")
    assert "Traceback" not in done.stderr
    for text in expected:
        assert text in done.stderr


def test_missing_path(tmp_path):
    _assert_one_clear_error(run_specdraft("patch", "status", "--vllm-root", tmp_path / "nowhere"), "does not exist", "--vllm-root")


def test_path_without_vllm(tmp_path):
    _assert_one_clear_error(run_specdraft("patch", "apply", "--vllm-root", tmp_path), "no vLLM package in", str(tmp_path))


def test_interpreter_that_does_not_exist(tmp_path):
    _assert_one_clear_error(run_specdraft("patch", "status", "--python", tmp_path / "bin" / "python"), "does not exist")


def test_unknown_hotfix_id(tree_of):
    root = tree_of("0.33.0")
    _assert_one_clear_error(run_specdraft("patch", "apply", "--vllm-root", root, "--only", "no-such-fix"),
                            "unknown hotfix id 'no-such-fix'", "specdraft patch list")


def test_read_only_target_file_is_refused_and_nothing_changes(tree_of):
    root = tree_of("0.33.0")
    target = root / "vllm/v1/worker/utils.py"
    target.chmod(0o444)
    before = _digest(root)
    _assert_one_clear_error(run_specdraft("patch", "apply", "--vllm-root", root), "read-only", str(target))
    assert _digest(root) == before
    assert stat.S_IMODE(target.stat().st_mode) == 0o444


def test_target_file_that_does_not_parse(tree_of):
    root = tree_of("0.33.0")
    target = root / "vllm/v1/worker/utils.py"
    target.write_text(target.read_text() + "\ndef broken(:\n")
    before = _digest(root)
    for action in ("status", "apply"):
        _assert_one_clear_error(run_specdraft("patch", action, "--vllm-root", root), "does not parse", str(target))
    assert _digest(root) == before


def test_unwritable_journal_directory_is_refused(tree_of):
    root = tree_of("0.33.0")
    package = root / "vllm"
    package.chmod(0o555)  # mode bits, not os.access: root may write anywhere
    try:
        before = _digest(root)
        _assert_one_clear_error(run_specdraft("patch", "apply", "--vllm-root", root), "journal directory")
        assert _digest(root) == before
    finally:
        package.chmod(0o755)
