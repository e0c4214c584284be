"""The `specdraft patch` commands: exit codes, --json and human lines (the wheel is tested in tests/test_wheel.py)."""

from __future__ import annotations

import json

from specdraft.patching import list_hotfixes

from .conftest import py_hashes

# The hotfixes these tests look at; others the catalog holds are not counted.
KNOWN = ("gemma4-mtp-shares-backbone-embeddings", "kv-sharing-uniform-specs", "kv-uniform-catches-valueerror")


def test_status_check_fails_while_pending_and_passes_once_applied(tree_of, cli):
    root = tree_of("0.33.0")
    assert cli("status", "--vllm-root", root)[0] == 0
    pending = sum(r["status"] == "pending" for r in json.loads(cli("status", "--json", "--vllm-root", root)[1]))
    code, out, _ = cli("status", "--check", "--vllm-root", root)
    assert code == 1 and pending >= 2 and f"{pending} pending" in out
    assert f"next: specdraft patch apply --vllm-root {root}" in out
    assert cli("apply", "--vllm-root", root)[0] == 0
    assert cli("status", "--check", "--vllm-root", root)[0] == 0
    code, out, _ = cli("diff", "--vllm-root", root)
    assert (code, out) == (0, "")


def test_json_reports_carry_id_status_file_and_version(tree_of, cli):
    root = tree_of("0.26.0")
    code, out, _ = cli("status", "--json", "--vllm-root", root)
    reports = [r for r in json.loads(out) if r["id"] in KNOWN]
    assert code == 0 and [r["id"] for r in reports] == [
        "gemma4-mtp-shares-backbone-embeddings", "kv-sharing-uniform-specs", "kv-uniform-catches-valueerror"]
    for report in reports:
        assert report["status"] == "pending" and report["vllm_version"] == "0.26.0"
        assert report["file"].startswith(str(root)) and report["detail"]


def test_only_selects_hotfixes(tree_of, cli):
    root = tree_of("0.22.1")
    code, out, _ = cli("apply", "--json", "--vllm-root", root, "--only", "kv-uniform-catches-valueerror")
    assert code == 0 and [(r["id"], r["status"]) for r in json.loads(out)] == [("kv-uniform-catches-valueerror", "applied")]
    statuses = {r["id"]: r["status"] for r in json.loads(cli("status", "--json", "--vllm-root", root)[1])}
    assert {id: statuses[id] for id in KNOWN} == {"kv-uniform-catches-valueerror": "applied",
                                                  "kv-sharing-uniform-specs": "pending",
                                                  "gemma4-mtp-shares-backbone-embeddings": "not-applicable"}


def test_one_line_per_hotfix_then_a_summary(tree_of, cli):
    code, out, _ = cli("status", "--vllm-root", tree_of("0.18.1"))
    lines = out.splitlines()
    hotfixes = len(list_hotfixes())
    assert code == 0 and len(lines) == hotfixes + 1
    assert all("not-applicable" in line for line in lines[:-1])
    assert lines[-1].endswith(f"{hotfixes} not-applicable")


def test_status_answered_from_memo_equals_a_fresh_decision(tree_of, cli, monkeypatch, tmp_path):
    root = tree_of("0.31.0")
    monkeypatch.setenv("SPECDRAFT_CACHE", str(tmp_path / "cache"))
    fresh = json.loads(cli("status", "--json", "--vllm-root", root)[1])
    assert (tmp_path / "cache/patch-status.json").exists()
    assert json.loads(cli("status", "--json", "--vllm-root", root)[1]) == fresh
    cli("apply", "--vllm-root", root, "--only", "kv-sharing-uniform-specs")
    after = {r["id"]: r["status"] for r in json.loads(cli("status", "--json", "--vllm-root", root)[1])}
    assert {id: after[id] for id in KNOWN} == {"kv-sharing-uniform-specs": "applied",
                                               "kv-uniform-catches-valueerror": "pending",
                                               "gemma4-mtp-shares-backbone-embeddings": "fixed-upstream"}


def test_apply_dry_run_prints_the_diff_and_writes_nothing(tree_of, cli):
    root = tree_of("0.26.0")
    pristine = py_hashes(root)
    expected = cli("diff", "--vllm-root", root)
    code, out, err = cli("apply", "--dry-run", "--vllm-root", root)
    assert (code, out, err) == expected and code == 1 and "+++ b/vllm/v1/worker/utils.py" in out
    assert py_hashes(root) == pristine and not (root / "vllm/.specdraft").exists()
