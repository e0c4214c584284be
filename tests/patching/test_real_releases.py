"""The whole cycle on the real sources of every supported vLLM release."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from specdraft.patching import Outcome, Status, apply, locate, revert, status, verify

from .conftest import KV_HOTFIXES, RELEASE_WITHOUT_GEMMA4, SUPPORTED_RELEASES


def _snapshot(root: Path) -> dict[str, tuple[str, int]]:
    """Hash and mtime of every .py file under root/vllm."""
    return {
        str(p.relative_to(root)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in (root / "vllm").rglob("*.py")
    }


@pytest.mark.parametrize("version", SUPPORTED_RELEASES)
def test_release_cycle_pending_diff_apply_verify_revert(tree_of, cli, version):
    root = tree_of(version)
    pristine = _snapshot(root)
    install = locate(vllm_root=root)
    assert install.version == version

    assert [r.status for r in status(install, only=KV_HOTFIXES)] == [Status.PENDING, Status.PENDING]

    code, out, _ = cli("diff", "--vllm-root", root, "--only", *KV_HOTFIXES)
    assert code == 1 and out.count("+++ b/vllm/") == 2 and "specdraft-hotfix:" in out
    assert _snapshot(root) == pristine

    applied = apply(install, only=KV_HOTFIXES)
    assert [(r.status, r.outcome) for r in applied] == [(Status.APPLIED, Outcome.CHANGED)] * 2
    patched = _snapshot(root)
    changed = {name for name in patched if patched[name] != pristine[name]}
    assert changed == {str(Path(r.file).relative_to(root)) for r in applied}
    for name in changed:
        compile((root / name).read_bytes(), name, "exec")

    assert [r.outcome for r in apply(install, only=KV_HOTFIXES)] == [Outcome.UNCHANGED] * 2
    assert _snapshot(root) == patched, "a second apply must change zero bytes (and touch no file)"

    assert [r.outcome for r in verify(install, only=KV_HOTFIXES)] == [Outcome.PASSED] * 2
    code, _, _ = cli("status", "--check", "--vllm-root", root, "--only", *KV_HOTFIXES)
    assert code == 0

    assert [r.outcome for r in revert(install, only=KV_HOTFIXES)] == [Outcome.CHANGED] * 2
    restored = _snapshot(root)
    assert {n: h for n, (h, _) in restored.items()} == {n: h for n, (h, _) in pristine.items()}
    assert [r.status for r in status(install, only=KV_HOTFIXES)] == [Status.PENDING, Status.PENDING]


def test_uniformity_function_is_found_where_0_33_moved_it(tree_of):
    reports = {r.id: r for r in status(locate(vllm_root=tree_of("0.33.0")))}
    assert reports["kv-uniform-catches-valueerror"].file.endswith("vllm/v1/core/kv_cache_planning.py")
    assert reports["kv-uniform-catches-valueerror"].function == "vllm.v1.core.kv_cache_planning.is_kv_cache_spec_uniform"


def test_release_without_gemma4_is_not_applicable_and_untouched(tree_of, cli):
    root = tree_of(RELEASE_WITHOUT_GEMMA4)
    before = _snapshot(root)
    install = locate(vllm_root=root)
    assert {r.status for r in status(install)} == {Status.NOT_APPLICABLE}
    assert {r.outcome for r in apply(install)} == {Outcome.UNCHANGED}
    assert cli("diff", "--vllm-root", root)[0] == 0
    assert _snapshot(root) == before


def test_anchor_edited_by_hand_is_drifted_and_apply_writes_nothing(tree_of, cli):
    root = tree_of("0.31.0")
    utils = root / "vllm/v1/worker/utils.py"
    utils.write_text(utils.read_text().replace(
        "tgt_kv_cache_group.layer_names.append(layer_name)", "tgt_kv_cache_group.layer_names.insert(0, layer_name)"))
    before = _snapshot(root)

    reports = {r.id: r for r in status(locate(vllm_root=root))}
    assert reports["kv-sharing-uniform-specs"].status is Status.DRIFTED
    code, out, _ = cli("apply", "--vllm-root", root)
    assert code == 1 and "refused" in out
    assert _snapshot(root) == before, "a drifted hotfix refuses the whole apply: no file written"


def test_file_carrying_the_fix_without_our_marker_is_fixed_upstream(tree_of):
    root = tree_of("0.33.0")
    planning = root / "vllm/v1/core/kv_cache_planning.py"
    planning.write_text(planning.read_text().replace(
        "    except AssertionError:\n        return False\n    return True",
        "    except (AssertionError, ValueError):\n        return False\n    return True"))
    before = planning.read_bytes()
    install = locate(vllm_root=root)
    reports = {r.id: r for r in status(install)}
    assert reports["kv-uniform-catches-valueerror"].status is Status.FIXED_UPSTREAM
    apply(install)
    assert planning.read_bytes() == before


def test_merge_raising_a_new_exception_type_makes_the_uniformity_fix_drifted(tree_of, cli):
    # vllm PR 55187 (open) would turn merge's assertions into ValueError/RuntimeError: the fix must be reviewed then.
    root = tree_of("0.33.0")
    interface = root / "vllm/v1/kv_cache_interface.py"
    source = interface.read_text()
    assert source.count("raise ValueError(\n                \"All attention layers in the same KV cache group") == 1
    interface.write_text(source.replace(
        "raise ValueError(\n                \"All attention layers in the same KV cache group",
        "raise RuntimeError(\n                \"All attention layers in the same KV cache group"))
    (report,) = status(locate(vllm_root=root), only=["kv-uniform-catches-valueerror"])
    assert report.status is Status.DRIFTED and "RuntimeError" in report.detail and "55187" in report.detail
    planning = (root / "vllm/v1/core/kv_cache_planning.py").read_bytes()
    assert cli("apply", "--vllm-root", root)[0] == 1
    assert (root / "vllm/v1/core/kv_cache_planning.py").read_bytes() == planning
