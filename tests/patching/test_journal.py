"""Backups, journal, revert refusals, bytecode caches and concurrent runs, on real vLLM sources."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import py_compile
import subprocess
import sys
import time

from specdraft.patching import Outcome, Status, apply, locate, revert, status

from .conftest import KV_HOTFIXES, REPO


def test_apply_keeps_a_pristine_backup_and_journals_hashes(tree_of):
    root = tree_of("0.26.0")
    target = root / "vllm/v1/worker/utils.py"
    pristine = target.read_bytes()
    apply(locate(vllm_root=root), only=["kv-sharing-uniform-specs"])

    journal = json.loads((root / "vllm/.specdraft/journal.json").read_text())
    record = journal["files"]["vllm/v1/worker/utils.py"]
    assert record["hotfixes"] == ["kv-sharing-uniform-specs"] and record["vllm_version"] == "0.26.0"
    assert record["pristine_sha256"] == hashlib.sha256(pristine).hexdigest()
    assert record["patched_sha256"] == hashlib.sha256(target.read_bytes()).hexdigest()
    assert (root / "vllm/.specdraft/backups" / record["backup"]).read_bytes() == pristine


def test_apply_preserves_the_file_mode(tree_of):
    root = tree_of("0.26.0")
    target = root / "vllm/v1/worker/utils.py"
    target.chmod(0o640)
    apply(locate(vllm_root=root))
    assert target.stat().st_mode & 0o777 == 0o640


def test_apply_drops_stale_and_unchecked_hash_bytecode(tree_of):
    root = tree_of("0.22.1")
    target = root / "vllm/v1/worker/utils.py"
    caches = [
        py_compile.compile(str(target), cfile=str(target.parent / "__pycache__" / f"utils.{tag}.pyc"),
                           invalidation_mode=mode)
        for tag, mode in (("cpython-311", py_compile.PycInvalidationMode.UNCHECKED_HASH),
                          ("cpython-312", py_compile.PycInvalidationMode.TIMESTAMP))
    ]
    apply(locate(vllm_root=root))
    assert not any(os.path.exists(cache) for cache in caches)


def test_revert_refuses_a_file_changed_since_apply_unless_forced(tree_of, cli):
    root = tree_of("0.28.0")
    install = locate(vllm_root=root)
    target = root / "vllm/v1/worker/utils.py"
    pristine = target.read_bytes()
    apply(install)
    edited = target.read_bytes() + b"\n# a later hand edit\n"
    target.write_bytes(edited)

    code, out, _ = cli("revert", "--vllm-root", root)
    assert code == 1 and "changed since apply" in out
    assert target.read_bytes() == edited

    reports = {r.id: r for r in revert(install, force=True)}
    assert reports["kv-sharing-uniform-specs"].outcome is Outcome.CHANGED
    assert target.read_bytes() == pristine


def test_revert_of_what_was_never_applied_changes_nothing(tree_of):
    root = tree_of("0.19.0")
    reports = revert(locate(vllm_root=root))
    assert reports and {r.outcome for r in reports} == {Outcome.UNCHANGED}
    assert not (root / "vllm/.specdraft").exists()


def test_marker_without_the_fix_is_drifted(tree_of):
    root = tree_of("0.33.0")
    install = locate(vllm_root=root)
    apply(install)
    planning = root / "vllm/v1/core/kv_cache_planning.py"
    planning.write_text(planning.read_text().replace("except (AssertionError, ValueError):", "except AssertionError:"))
    reports = {r.id: r for r in status(install)}
    assert reports["kv-uniform-catches-valueerror"].status is Status.DRIFTED
    assert "marker is present but the fix is not" in reports["kv-uniform-catches-valueerror"].detail


def test_function_moved_to_a_sibling_module_is_found_and_named(tree_of):
    root = tree_of("0.31.0")
    utils = root / "vllm/v1/core/kv_cache_utils.py"
    source = utils.read_text()
    start = source.index("def is_kv_cache_spec_uniform(")
    end = source.index("\n\n\ndef ", start) + 1
    (root / "vllm/v1/core/kv_cache_uniformity.py").write_text("from vllm.v1.kv_cache_interface import KVCacheSpec\n\n\n" + source[start:end])
    utils.write_text(source[:start] + "from vllm.v1.core.kv_cache_uniformity import is_kv_cache_spec_uniform\n" + source[end:])

    install = locate(vllm_root=root)
    (report,) = status(install, only=["kv-uniform-catches-valueerror"])
    assert report.status is Status.PENDING
    assert report.function == "vllm.v1.core.kv_cache_uniformity.is_kv_cache_spec_uniform"
    assert "found in vllm.v1.core.kv_cache_uniformity" in report.detail
    (applied,) = apply(install, only=["kv-uniform-catches-valueerror"])
    assert applied.status is Status.APPLIED and applied.file.endswith("kv_cache_uniformity.py")


def test_function_defined_in_two_modules_is_drifted_as_ambiguous(tree_of):
    root = tree_of("0.33.0")
    planning = (root / "vllm/v1/core/kv_cache_planning.py").read_text()
    start = planning.index("def is_kv_cache_spec_uniform(")
    utils = root / "vllm/v1/core/kv_cache_utils.py"
    utils.write_text(utils.read_text() + "\n\n" + planning[start:planning.index("\n\n\ndef ", start) + 1])
    (report,) = status(locate(vllm_root=root), only=["kv-uniform-catches-valueerror"])
    assert report.status is Status.DRIFTED and "ambiguous" in report.detail


def test_two_concurrent_applies_one_patches_the_other_finds_it_applied(tree_of):
    root = tree_of("0.33.0")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "specdraft", "patch", "apply", "--vllm-root", str(root), "--json", "--only", *KV_HOTFIXES]
    # Hold the install's lock so both processes are surely inside apply, waiting, when it opens.
    gate = os.open(root / "vllm", os.O_RDONLY)
    fcntl.flock(gate, fcntl.LOCK_EX)
    runs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    time.sleep(4)
    assert all(run.poll() is None for run in runs), "both runs must wait for the lock"
    os.close(gate)
    results = [run.communicate(timeout=120) for run in runs]
    assert all(run.returncode == 0 for run in runs), [err for _, err in results]

    outcomes = sorted(tuple(r["outcome"] for r in json.loads(out)) for out, _ in results)
    assert outcomes == [("changed", "changed"), ("unchanged", "unchanged")]
    later = [json.loads(out) for out, _ in results if json.loads(out)[0]["outcome"] == "unchanged"][0]
    assert all(r["status"] == "applied" and r["detail"] == "already applied" for r in later)
    for name in ("vllm/v1/worker/utils.py", "vllm/v1/core/kv_cache_planning.py"):
        compile((root / name).read_bytes(), name, "exec")
        assert (root / name).read_text().count("specdraft-hotfix:") == 1


def test_revert_with_one_file_changed_since_apply_reverts_nothing(tree_of, cli):
    root = tree_of("0.26.0")
    install = locate(vllm_root=root)
    apply(install)
    patched = {path: path.read_bytes() for path in map(root.joinpath, (
        "vllm/v1/worker/utils.py", "vllm/v1/core/kv_cache_utils.py", "vllm/v1/spec_decode/gemma4.py"))}
    edited = root / "vllm/v1/worker/utils.py"
    patched[edited] += b"\n# a later hand edit\n"
    edited.write_bytes(patched[edited])

    code, out, _ = cli("revert", "--vllm-root", root)
    assert code == 1
    assert {path: path.read_bytes() for path in patched} == patched
    applied = {"kv-sharing-uniform-specs", "kv-uniform-catches-valueerror", "gemma4-mtp-shares-backbone-embeddings"}
    outcomes = {line.split()[0]: line for line in out.splitlines() if line.split() and line.split()[0] in applied}
    assert outcomes.keys() == applied and all("refused" in line for line in outcomes.values())
    assert f"{edited} changed since apply" in outcomes["kv-sharing-uniform-specs"]
    assert "not reverted: kv-sharing-uniform-specs refused" in outcomes["kv-uniform-catches-valueerror"]


def test_status_says_which_applied_file_changed_since_apply(tree_of, cli):
    root = tree_of("0.33.0")
    install = locate(vllm_root=root)
    apply(install)
    edited = root / "vllm/v1/worker/utils.py"
    edited.write_bytes(edited.read_bytes() + b"\n# a later hand edit\n")

    reports = {r.id: r for r in status(install)}
    assert reports["kv-sharing-uniform-specs"].status is Status.APPLIED
    assert reports["kv-sharing-uniform-specs"].changed_since_apply
    assert "changed since apply" in reports["kv-sharing-uniform-specs"].detail
    assert not reports["kv-uniform-catches-valueerror"].changed_since_apply
    code, out, _ = cli("status", "--vllm-root", root, "--json")
    documents = {r["id"]: r for r in json.loads(out)}
    assert code == 0 and documents["kv-sharing-uniform-specs"]["changed_since_apply"] is True
    code, out, _ = cli("status", "--vllm-root", root)
    assert "changed since apply" in out and "specdraft patch revert --force --vllm-root" in out


def test_a_symlinked_target_file_is_refused_and_the_link_kept(tree_of, tmp_path, cli):
    root = tree_of("0.33.0")
    target = root / "vllm/v1/worker/utils.py"
    elsewhere = tmp_path / "shared-cache" / "utils.py"
    elsewhere.parent.mkdir()
    target.rename(elsewhere)
    target.symlink_to(elsewhere)
    pristine = elsewhere.read_bytes()

    code, _, err = cli("apply", "--vllm-root", root)
    assert code == 2 and "is a symbolic link" in err and str(elsewhere) in err
    assert target.is_symlink() and elsewhere.read_bytes() == pristine
    assert not (root / "vllm/.specdraft").exists()


def test_revert_never_replaces_a_link_put_in_place_after_apply(tree_of, tmp_path, cli):
    root = tree_of("0.33.0")
    install = locate(vllm_root=root)
    apply(install)
    target = root / "vllm/v1/worker/utils.py"
    elsewhere = tmp_path / "utils.py"
    target.rename(elsewhere)
    target.symlink_to(elsewhere)

    code, out, _ = cli("revert", "--vllm-root", root, "--force")
    assert code == 1 and "is now a symbolic link" in out
    assert target.is_symlink() and "specdraft-hotfix" in elsewhere.read_text()


def test_a_journal_entry_of_the_wrong_shape_is_refused_before_anything_is_written(tree_of, tmp_path, cli):
    root = tree_of("0.33.0")
    install = locate(vllm_root=root)
    apply(install)
    outside = tmp_path / "outside.txt"
    outside.write_text("not specdraft's")
    journal_path = root / "vllm/.specdraft/journal.json"
    journal = json.loads(journal_path.read_text())
    record = journal["files"]["vllm/v1/worker/utils.py"]
    record["backup"] = os.path.relpath(outside, root / "vllm/.specdraft/backups")
    record["pristine_sha256"] = hashlib.sha256(outside.read_bytes()).hexdigest()
    journal_path.write_text(json.dumps(journal))
    patched = (root / "vllm/v1/worker/utils.py").read_bytes()

    code, _, err = cli("revert", "--vllm-root", root)
    assert code == 2 and "journal" in err and "unreadable" in err
    assert outside.read_text() == "not specdraft's"
    assert (root / "vllm/v1/worker/utils.py").read_bytes() == patched

    record["backup"], record["hotfixes"] = "x.orig", None
    journal_path.write_text(json.dumps(journal))
    edited = root / "vllm/v1/worker/utils.py"
    edited.write_bytes(patched + b"\n# a later hand edit\n")
    code, _, err = cli("status", "--vllm-root", root)
    assert code == 0 and "Traceback" not in err
