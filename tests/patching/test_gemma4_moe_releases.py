"""The two MoE expert-mapping hotfixes on the real sources of the releases where their status changes.

The whole tables (every release 0.19.0 to 0.33.0) are in the hotfixes' docstrings; these are their edges.
"""

from __future__ import annotations

import pytest

from specdraft.patching import Status, locate, status

from .conftest import assert_pending_cycle, py_hashes

SCALES = "gemma4-moe-expert-scale-suffix"
PREFIX = "gemma4-moe-expert-prefix"
MODEL = "vllm/model_executor/models/gemma4.py"
STATUS_BY_RELEASE = {
    "0.19.0": (Status.PENDING, Status.NOT_APPLICABLE),  # whole-name mapping; no per-expert remap yet
    "0.19.1": (Status.FIXED_UPSTREAM, Status.PENDING),  # prefix mapping (PR 39084); the remap doubles .moe.
    "0.20.2": (Status.FIXED_UPSTREAM, Status.PENDING),
    "0.21.0": (Status.NOT_APPLICABLE, Status.FIXED_UPSTREAM),  # look-behind (PR 41206)
    "0.30.0": (Status.NOT_APPLICABLE, Status.FIXED_UPSTREAM),
    "0.31.0": (Status.NOT_APPLICABLE, Status.PENDING),  # layers hold experts directly; the mapper keeps .moe.
    "0.33.0": (Status.NOT_APPLICABLE, Status.PENDING),
}


@pytest.mark.parametrize("version, expected", STATUS_BY_RELEASE.items())
def test_status_on_the_releases_where_it_changes(tree_of, version, expected):
    reports = {r.id: r for r in status(locate(vllm_root=tree_of(version)), only=[SCALES, PREFIX])}
    assert (reports[SCALES].status, reports[PREFIX].status) == expected, [r.detail for r in reports.values()]


@pytest.mark.parametrize("version, hotfix", [("0.19.0", SCALES), ("0.20.2", PREFIX), ("0.31.0", PREFIX),
                                             ("0.33.0", PREFIX)])
def test_pending_release_cycle_diff_apply_verify_revert(tree_of, cli, version, hotfix):
    root = tree_of(version)
    assert_pending_cycle(cli, root, hotfix, MODEL, after_apply=lambda: compile((root / MODEL).read_bytes(), MODEL, "exec"))


def test_remap_without_its_look_behind_is_drifted_and_apply_writes_nothing(tree_of, cli):
    root = tree_of("0.21.0")
    model = root / MODEL
    source = model.read_text()
    assert source.count(r"(?<!\.moe)") == 1
    model.write_text(source.replace(r"(?<!\.moe)", ""))
    before = py_hashes(root)
    (report,) = status(locate(vllm_root=root), only=[PREFIX])
    assert report.status is Status.DRIFTED and "look-behind" in report.detail
    code, out, _ = cli("apply", "--vllm-root", root)
    assert code == 1 and "refused" in out
    assert py_hashes(root) == before


def test_layers_with_a_moe_module_again_make_the_mapper_fix_drifted(tree_of):
    # Dropping `.moe.` is right only while the decoder layers hold their experts directly.
    root = tree_of("0.33.0")
    model = root / MODEL
    source = model.read_text()
    assert source.count("            self.experts = FusedMoEFactory(") == 1
    model.write_text(source.replace("            self.experts = FusedMoEFactory(", "            self.moe = FusedMoEFactory("))
    (report,) = status(locate(vllm_root=root), only=[PREFIX])
    assert report.status is Status.DRIFTED and "moe module again" in report.detail
