"""The `specdraft patch` commands: exit codes, --json, human lines, and the catalog shipped in a wheel."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile

from .conftest import REPO


def test_status_check_fails_while_pending_and_passes_once_applied(tree_of, cli):
    root = tree_of("0.33.0")
    assert cli("status", "--vllm-root", root)[0] == 0
    code, out, _ = cli("status", "--check", "--vllm-root", root)
    assert code == 1 and "2 pending" in out and f"next: specdraft patch apply --vllm-root {root}" in out
    assert cli("apply", "--vllm-root", root)[0] == 0
    assert cli("status", "--check", "--vllm-root", root)[0] == 0
    code, out, _ = cli("diff", "--vllm-root", root)
    assert (code, out) == (0, "")


def test_json_reports_carry_id_status_file_and_version(tree_of, cli):
    root = tree_of("0.22.1")
    code, out, _ = cli("status", "--json", "--vllm-root", root)
    reports = json.loads(out)
    assert code == 0 and [r["id"] for r in reports] == ["kv-sharing-uniform-specs", "kv-uniform-catches-valueerror"]
    for report in reports:
        assert report["status"] == "pending" and report["vllm_version"] == "0.22.1"
        assert report["file"].startswith(str(root)) and report["detail"]


def test_only_selects_hotfixes(tree_of, cli):
    root = tree_of("0.22.1")
    code, out, _ = cli("apply", "--json", "--vllm-root", root, "--only", "kv-uniform-catches-valueerror")
    assert code == 0 and [(r["id"], r["status"]) for r in json.loads(out)] == [("kv-uniform-catches-valueerror", "applied")]
    statuses = {r["id"]: r["status"] for r in json.loads(cli("status", "--json", "--vllm-root", root)[1])}
    assert statuses == {"kv-uniform-catches-valueerror": "applied", "kv-sharing-uniform-specs": "pending"}


def test_one_line_per_hotfix_then_a_summary(tree_of, cli):
    code, out, _ = cli("status", "--vllm-root", tree_of("0.18.1"))
    lines = out.splitlines()
    assert code == 0 and len(lines) == 3
    assert lines[0].startswith("kv-sharing-uniform-specs") and "not-applicable" in lines[0]
    assert lines[2].endswith("2 not-applicable")


def test_status_answered_from_memo_equals_a_fresh_decision(tree_of, cli, monkeypatch, tmp_path):
    root = tree_of("0.31.0")
    monkeypatch.setenv("SPECDRAFT_CACHE", str(tmp_path / "cache"))
    fresh = json.loads(cli("status", "--json", "--vllm-root", root)[1])
    assert (tmp_path / "cache/patch-status.json").exists()
    assert json.loads(cli("status", "--json", "--vllm-root", root)[1]) == fresh
    cli("apply", "--vllm-root", root, "--only", "kv-sharing-uniform-specs")
    after = {r["id"]: r["status"] for r in json.loads(cli("status", "--json", "--vllm-root", root)[1])}
    assert after == {"kv-sharing-uniform-specs": "applied", "kv-uniform-catches-valueerror": "pending"}


def test_built_wheel_ships_the_hotfix_catalog(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "-w", str(tmp_path / "dist"), str(REPO)], check=True, capture_output=True)
    (wheel,) = (tmp_path / "dist").glob("specdraft-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(tmp_path / "site")
    listed = subprocess.run([sys.executable, "-m", "specdraft", "patch", "list", "--json"], capture_output=True,
                            text=True, cwd=tmp_path, env={"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"})
    assert listed.returncode == 0, listed.stderr
    assert [h["id"] for h in json.loads(listed.stdout)] == ["kv-sharing-uniform-specs", "kv-uniform-catches-valueerror"]
    assert (tmp_path / "site/specdraft/hotfixes/kv_uniform_catches_valueerror.py").is_file()
