"""v2-schedule-drafter-graphs on the real sources of the releases where its status changes.

The whole table (every release 0.19.0 to 0.33.0) is in the hotfix's docstring; these are its edges.
"""

from __future__ import annotations

import pytest

from specdraft.patching import Outcome, Status, apply, locate, status

from .conftest import assert_pending_cycle, py_hashes

HOTFIX = "v2-schedule-drafter-graphs"
GRAPHS = "vllm/v1/worker/gpu/cudagraph_utils.py"
STATUS_BY_RELEASE = {
    "0.19.0": Status.NOT_APPLICABLE,  # Model Runner V2 captures no schedule before 0.25.0
    "0.24.0": Status.NOT_APPLICABLE,
    "0.25.0": Status.PENDING,  # V2's graph manager learns the schedule, for the drafter's one-token manager too
    "0.26.0": Status.PENDING,
    "0.29.0": Status.PENDING,  # the schedule now goes through build_dynamic_sd_schedule_lookup
    "0.31.0": Status.PENDING,
    "0.32.0": Status.FIXED_UPSTREAM,  # `and self.decode_query_len > self.vllm_config.num_speculative_tokens`
    "0.33.0": Status.FIXED_UPSTREAM,
}
UPSTREAM_GUARD = "\n            and self.decode_query_len > self.vllm_config.num_speculative_tokens\n"


@pytest.mark.parametrize("version, expected", STATUS_BY_RELEASE.items())
def test_status_on_the_releases_where_it_changes(tree_of, version, expected):
    (report,) = status(locate(vllm_root=tree_of(version)), only=[HOTFIX])
    assert report.status is expected, report.detail


@pytest.mark.parametrize("version", ["0.25.0", "0.31.0"])
def test_pending_release_cycle_diff_apply_verify_revert(tree_of, cli, version):
    root = tree_of(version)

    def guard_joins_the_schedule_test():
        text = (root / GRAPHS).read_text()
        marker = text.index("# specdraft-hotfix: v2-schedule-drafter-graphs")
        branch = text[marker:text.index("):", marker)]
        assert "uses_dynamic_speculative_decoding() and self.decode_query_len > " in branch

    assert_pending_cycle(cli, root, HOTFIX, GRAPHS, after_apply=guard_joins_the_schedule_test)


def test_later_release_without_upstreams_guard_is_pending_and_takes_the_fix(tree_of):
    root = tree_of("0.33.0")
    graphs = root / GRAPHS
    text = graphs.read_text()
    assert text.count(UPSTREAM_GUARD) == 1
    graphs.write_text(text.replace(UPSTREAM_GUARD, "\n"))
    install = locate(vllm_root=root)
    (report,) = status(install, only=[HOTFIX])
    assert report.status is Status.PENDING
    (applied,) = apply(install, only=[HOTFIX])
    assert (applied.status, applied.outcome) == (Status.APPLIED, Outcome.CHANGED)


def test_a_schedule_branch_that_derives_the_query_length_otherwise_is_drifted_and_apply_writes_nothing(tree_of, cli):
    root = tree_of("0.26.0")
    graphs = root / GRAPHS
    text = graphs.read_text()
    offset = "self.decode_query_len - self.vllm_config.num_speculative_tokens"
    assert text.count(offset) == 1
    graphs.write_text(text.replace(offset, "self.decode_query_len - speculative_config.num_speculative_tokens"))
    before = py_hashes(root)
    (report,) = status(locate(vllm_root=root), only=[HOTFIX])
    assert report.status is Status.DRIFTED and "no longer derives the query length" in report.detail
    code, out, _ = cli("apply", "--vllm-root", root, "--only", HOTFIX)
    assert code == 1 and "refused" in out
    assert py_hashes(root) == before
