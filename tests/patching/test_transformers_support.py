"""The transformers check: each rule of data/transformers_gemma4.json flags its own example and accepts its own,
the split between rules is where the release sources start reading Gemma 4's per-layer configs, and both
`specdraft patch status` and `specdraft launch` report it from the transformers installed beside vLLM.

The end-to-end proof that the ranges are right (vLLM building its engine config on each side of a boundary)
is tests/e2e/test_install_into_vllm.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from specdraft.patching.transformers_support import rule_for, transformers_finding, transformers_rules
from specdraft.planning import LaunchRequest, build_launch_plan

RULES = transformers_rules()
CONVERTOR = "vllm/transformers_utils/model_arch_config_convertor.py"
MODEL = "vllm/model_executor/models/gemma4.py"
# releases whose wheels the rest of the suite downloads anyway, on both sides of 0.28.0
READ_RELEASES = ("0.19.0", "0.22.1", "0.24.0", "0.26.0", "0.27.0", "0.28.0", "0.31.0", "0.32.0", "0.33.0")


def first_release(rule) -> str:
    """The lowest vLLM release a rule covers (its ``>=`` bound)."""
    return next(spec.version for spec in SpecifierSet(rule.vllm) if spec.operator == ">=")


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.vllm)
def test_each_rule_flags_its_example_with_the_version_the_range_and_the_pip_command(rule):
    finding = transformers_finding(first_release(rule), rule.flags, "/venv/bin/python")
    assert finding is not None and finding.level == "warning" and finding.check == "transformers"
    assert f"transformers {rule.flags} in /venv/bin/python" in finding.message
    assert rule.works in finding.message and rule.failure in finding.message
    assert finding.hint == f"/venv/bin/python -m pip install 'transformers{rule.install}'"


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.vllm)
def test_each_rule_accepts_its_example(rule):
    assert transformers_finding(first_release(rule), rule.accepts, "/venv/bin/python") is None


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.vllm)
def test_what_the_fix_installs_is_read_by_the_release(rule):
    floor = next(spec.version for spec in SpecifierSet(rule.install) if spec.operator == ">=")
    assert rule.reads_with(Version(floor)) and SpecifierSet(rule.install).contains(rule.accepts)


def test_rules_do_not_overlap_and_a_cpu_build_version_finds_its_rule():
    for release in ("0.19.0", "0.23.0", "0.24.0", "0.27.1", "0.32.0", "0.33.0"):
        assert sum(rule.covers(Version(release)) for rule in RULES) == 1, release
    assert rule_for("0.26.0+cpu") is rule_for("0.26.0") is not None


def test_releases_that_read_both_sides_of_transformers_5_15_have_no_rule():
    assert rule_for("0.28.0") is None and rule_for("0.31.0") is None and rule_for("0.34.0") is None


def test_a_transformers_above_the_release_pin_that_still_reads_gemma4_is_not_flagged():
    assert transformers_finding("0.32.0", "5.24.0") is None  # measured: 0.32.0 serves the tiny target on it


def test_unknown_versions_are_not_flagged():
    assert transformers_finding(None, "5.24.0") is None and transformers_finding("0.26.0", None) is None


@pytest.mark.parametrize("version", READ_RELEASES)
def test_the_rules_follow_where_the_release_reads_per_layer_configs(release_trees_all, version):
    """Flagged for transformers 5.15.0: the config convertor has no per-layer configs (reads `head_dim` globally).
    Flagged for 5.14.1: the decoder layer reads `per_layer_config`, which only 5.15.0 and later set."""
    tree = release_trees_all(version)
    reads_per_layer = "def get_per_layer_hf_configs" in (tree / CONVERTOR).read_text()
    needs_per_layer = "config.per_layer_config[layer_idx]" in (tree / MODEL).read_text()
    assert (transformers_finding(version, "5.15.0") is not None) == (not reads_per_layer)
    assert (transformers_finding(version, "5.14.1") is not None) == needs_per_layer


@pytest.fixture(scope="module")
def release_trees_all():
    from tools.release_trees import release_tree

    return lambda version: release_tree(version, progress=lambda line: None)


def with_transformers(tree: Path, version: str) -> Path:
    """``tree`` (a copied release) with a transformers ``version`` installed beside vLLM: its dist-info."""
    dist_info = tree / f"transformers-{version}.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: transformers\nVersion: {version}\n")
    return tree


@pytest.mark.parametrize("installed, warned", [("5.15.0", True), ("5.14.1", False)])
def test_patch_status_warns_of_a_transformers_the_release_cannot_read_gemma4_with(tree_of, capsys, installed, warned):
    from specdraft.cli import main

    tree = with_transformers(tree_of("0.26.0"), installed)
    assert main(["patch", "status", "--vllm-root", str(tree), "--json"]) in (0, 1)
    out, err = capsys.readouterr()
    json.loads(out)  # the warning stays off stdout
    if warned:
        assert err.splitlines() == [
            "warning: transformers 5.15.0 cannot read Gemma 4 configs with vLLM 0.26.0: vLLM >=0.24.0,<0.28.0 reads "
            "them with transformers >=5.5.3,<5.15.0 (outside it, engine start fails with "
            f"{rule_for('0.26.0').failure})",
            "next: pip install 'transformers>=5.5.3,<5.15.0'"]
    else:
        assert "transformers" not in err


@pytest.mark.parametrize("installed, warned", [("5.16.1", True), ("5.14.1", False)])
def test_launch_reports_the_same_check_as_a_finding(tree_of, installed, warned):
    tree = with_transformers(tree_of("0.26.0"), installed)
    plan = build_launch_plan(LaunchRequest(target="google/gemma-4-31B-it", draft="google/gemma-4-E2B-it",
                                           vllm_root=tree))
    found = [f for f in plan.findings if f.check == "transformers"]
    assert found == ([transformers_finding("0.26.0", installed)] if warned else [])
