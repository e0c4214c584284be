"""drafter-attention-groups-per-spec on the real sources of every release it covers.

The V1 drafter's grouping loop is the same text from 0.19.0 to 0.33.0; it moved from
``vllm/v1/spec_decode/eagle.py`` (0.19.x) to ``llm_base_proposer.py`` (0.20.0 on).
"""

from __future__ import annotations

import pytest

from specdraft.patching import Status, locate, status

from .conftest import assert_pending_cycle, py_hashes

HOTFIX = "drafter-attention-groups-per-spec"
BASE = "vllm/v1/spec_decode/llm_base_proposer.py"
BEFORE_0_20 = "vllm/v1/spec_decode/eagle.py"
RELEASES = ["0.19.0", "0.19.1", "0.20.0", "0.21.0", "0.22.0", "0.23.0", "0.24.0", "0.25.0", "0.26.0", "0.27.0",
            "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"]


@pytest.mark.parametrize("version", RELEASES)
def test_pending_on_every_release_with_gemma4(tree_of, version):
    (report,) = status(locate(vllm_root=tree_of(version)), only=[HOTFIX])
    assert report.status is Status.PENDING, report.detail


def test_not_applicable_before_gemma4(tree_of):
    (report,) = status(locate(vllm_root=tree_of("0.18.1")), only=[HOTFIX])
    assert report.status is Status.NOT_APPLICABLE


@pytest.mark.parametrize("version, source", [("0.19.0", BEFORE_0_20), ("0.33.0", BASE)])
def test_pending_release_cycle_diff_apply_verify_revert(tree_of, cli, version, source):
    root = tree_of(version)

    def the_group_key_takes_the_layers_spec():
        text = (root / source).read_text()
        marker = text.index("# specdraft-hotfix: drafter-attention-groups-per-spec")
        assert "backend_key = (backend_key, kv_cache_spec.kv_cache_specs[layer_name])" in text[marker:marker + 400]

    assert_pending_cycle(cli, root, HOTFIX, source, after_apply=the_group_key_takes_the_layers_spec)


def test_a_loop_that_no_longer_keys_by_backend_is_drifted_and_apply_writes_nothing(tree_of, cli):
    root = tree_of("0.26.0")
    base = root / BASE
    text = base.read_text()
    assert text.count("backend_key = attn_backend.full_cls_name()") == 1
    base.write_text(text.replace("backend_key = attn_backend.full_cls_name()", "backend_key = attn_backend.get_name()"))
    before = py_hashes(root)
    (report,) = status(locate(vllm_root=root), only=[HOTFIX])
    assert report.status is Status.DRIFTED and "backend_key = attn_backend.full_cls_name()" in report.detail
    code, out, _ = cli("apply", "--vllm-root", root, "--only", HOTFIX)
    assert code == 1 and "refused" in out
    assert py_hashes(root) == before
