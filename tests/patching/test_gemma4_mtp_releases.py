"""gemma4-mtp-shares-backbone-embeddings on the real sources of the releases where its status changes.

The whole table (every release 0.19.0 to 0.33.0) is in the hotfix's docstring; these are its edges.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from specdraft.patching import Outcome, Status, apply, locate, status

from .conftest import assert_pending_cycle, py_hashes

HOTFIX = "gemma4-mtp-shares-backbone-embeddings"
PROPOSER = "vllm/v1/spec_decode/gemma4.py"
BASE = "vllm/v1/spec_decode/llm_base_proposer.py"
STATUS_BY_RELEASE = {
    "0.19.0": Status.NOT_APPLICABLE,  # no Gemma 4 MTP before 0.21.0
    "0.24.0": Status.NOT_APPLICABLE,  # MTP; the base class shares MTP embeddings of any width
    "0.25.0": Status.PENDING,  # the base class refuses embeddings of another width, MTP drafts included
    "0.26.0": Status.PENDING,
    "0.27.0": Status.FIXED_UPSTREAM,  # Gemma4Proposer._maybe_share_embeddings
    "0.33.0": Status.FIXED_UPSTREAM,
}
UPSTREAM_ASSIGNMENT = "        self.model.model.embed_tokens = target_embed_tokens\n"
WIDTH_CHECK_FOR_EAGLE_ONLY = 'if share_embeddings and hasattr(self.model, "has_own_embed_tokens"):'


def _proposer_methods(root: Path) -> list[str]:
    tree = ast.parse((root / PROPOSER).read_text())
    (cls,) = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Gemma4Proposer"]
    return [node.name for node in cls.body if isinstance(node, ast.FunctionDef)]


def _without_upstream_override(root: Path) -> None:
    proposer = root / PROPOSER
    source = proposer.read_text()
    tree = ast.parse(source)
    (cls,) = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Gemma4Proposer"]
    (method,) = [node for node in cls.body if isinstance(node, ast.FunctionDef) and node.name == "_maybe_share_embeddings"]
    lines = source.splitlines(keepends=True)
    proposer.write_text("".join(lines[:method.lineno - 1] + lines[method.end_lineno + 1:]))


@pytest.mark.parametrize("version, expected", STATUS_BY_RELEASE.items())
def test_status_on_the_releases_where_it_changes(tree_of, version, expected):
    (report,) = status(locate(vllm_root=tree_of(version)), only=[HOTFIX])
    assert report.status is expected, report.detail


@pytest.mark.parametrize("version", ["0.25.0", "0.26.0"])
def test_pending_release_cycle_diff_apply_verify_revert(tree_of, cli, version):
    root = tree_of(version)

    def override_sits_before_the_lm_head_one():
        methods = _proposer_methods(root)
        assert methods.index("_maybe_share_embeddings") == methods.index("_maybe_share_lm_head") - 1

    assert_pending_cycle(cli, root, HOTFIX, PROPOSER, after_apply=override_sits_before_the_lm_head_one)


def test_release_before_the_width_check_needs_no_fix_judged_by_its_tree_alone(tree_of):
    # 0.24.0 is outside the version range; told it is 0.25.0, its sources still say "no fix needed".
    root = tree_of("0.24.0")
    (metadata,) = root.glob("vllm-*.dist-info/METADATA")
    metadata.write_text(metadata.read_text().replace("Version: 0.24.0", "Version: 0.25.0"))
    (report,) = status(locate(vllm_root=root), only=[HOTFIX])
    assert report.status is Status.FIXED_UPSTREAM and "MTP drafts of any width" in report.detail


def test_removing_only_the_override_is_not_enough_to_need_the_fix(tree_of):
    # 0.27.0 also confined the base class's width check to EAGLE drafts: without the override, MTP still shares.
    root = tree_of("0.33.0")
    _without_upstream_override(root)
    (report,) = status(locate(vllm_root=root), only=[HOTFIX])
    assert report.status is Status.FIXED_UPSTREAM and "MTP drafts of any width" in report.detail


def test_later_release_turned_back_into_0_26_code_is_pending_and_takes_the_fix(tree_of):
    root = tree_of("0.33.0")
    _without_upstream_override(root)
    base = root / BASE
    base.write_text(base.read_text().replace(WIDTH_CHECK_FOR_EAGLE_ONLY, "if share_embeddings:"))
    install = locate(vllm_root=root)
    (report,) = status(install, only=[HOTFIX])
    assert report.status is Status.PENDING
    (applied,) = apply(install, only=[HOTFIX])
    assert (applied.status, applied.outcome) == (Status.APPLIED, Outcome.CHANGED)


def test_upstream_override_edited_to_keep_the_draft_embeddings_is_drifted_and_apply_writes_nothing(tree_of, cli):
    root = tree_of("0.33.0")
    proposer = root / PROPOSER
    source = proposer.read_text()
    assert source.count(UPSTREAM_ASSIGNMENT) == 1
    proposer.write_text(source.replace(UPSTREAM_ASSIGNMENT, "        pass\n"))
    before = py_hashes(root)
    (report,) = status(locate(vllm_root=root), only=[HOTFIX])
    assert report.status is Status.DRIFTED and "no longer sets self.model.model.embed_tokens" in report.detail
    code, out, _ = cli("apply", "--vllm-root", root)
    assert code == 1 and "refused" in out
    assert py_hashes(root) == before
