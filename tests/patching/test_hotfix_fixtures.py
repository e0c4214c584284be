"""Tests generated from each hotfix's own before/after fixtures, run through the real engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from specdraft.patching import Outcome, Status, apply, diff, list_hotfixes, locate, status
from tools.release_trees import release_tree

CASES = [
    pytest.param(hotfix, fixture, id=f"{hotfix.id}: {fixture.name}")
    for hotfix in list_hotfixes()
    for fixture in hotfix.fixtures
]


def _tree_with(tmp_path: Path, hotfix, fixture) -> Path:
    """A minimal install of the fixture's release: vllm/__init__.py, the hotfix's module holding the fixture,
    its context, a dist-info."""
    (tmp_path / "vllm").mkdir()
    (tmp_path / "vllm" / "__init__.py").write_text("")
    for module, source in [*fixture.context.items(), (hotfix.modules[0], fixture.before)]:
        path = tmp_path.joinpath(*module.split(".")).with_suffix(".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    dist_info = tmp_path / f"vllm-{fixture.vllm}.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {fixture.vllm}\n")
    return path


def test_every_hotfix_has_a_pending_fixture_with_its_after():
    for hotfix in list_hotfixes():
        assert any(f.status is Status.PENDING and f.after for f in hotfix.fixtures), hotfix.id


@pytest.mark.parametrize("hotfix, fixture", CASES)
def test_fixture_status_and_detail_are_what_the_hotfix_declares(tmp_path, hotfix, fixture):
    _tree_with(tmp_path, hotfix, fixture)
    (report,) = status(locate(vllm_root=tmp_path), only=[hotfix.id])
    assert (report.status, report.vllm_version) == (fixture.status, fixture.vllm), report.detail
    assert report.detail == fixture.detail


@pytest.mark.parametrize("hotfix, fixture", [c for c in CASES if c.values[1].status is Status.PENDING])
def test_pending_fixture_is_what_its_release_reports(hotfix, fixture):
    # A pending fixture is the released code cut down: the whole release must answer the same.
    (report,) = status(locate(vllm_root=release_tree(fixture.vllm)), only=[hotfix.id])
    assert (report.status, report.detail) == (fixture.status, fixture.detail)


@pytest.mark.parametrize("hotfix, fixture", [c for c in CASES if c.values[1].status is Status.PENDING])
def test_fixture_apply_writes_the_declared_after_and_then_nothing(tmp_path, hotfix, fixture):
    path = _tree_with(tmp_path, hotfix, fixture)
    install = locate(vllm_root=tmp_path)
    (dry,) = diff(install, only=[hotfix.id])
    assert path.read_text() == fixture.before and dry.diff

    (report,) = apply(install, only=[hotfix.id])
    assert (report.status, report.outcome) == (Status.APPLIED, Outcome.CHANGED)
    assert path.read_text() == fixture.after

    (again,) = apply(install, only=[hotfix.id])
    assert (again.status, again.outcome) == (Status.APPLIED, Outcome.UNCHANGED)
    assert path.read_text() == fixture.after


@pytest.mark.parametrize("hotfix, fixture", [c for c in CASES if c.values[1].status is not Status.PENDING])
def test_fixture_that_is_not_pending_is_never_written(tmp_path, hotfix, fixture):
    path = _tree_with(tmp_path, hotfix, fixture)
    (report,) = apply(locate(vllm_root=tmp_path), only=[hotfix.id])
    assert report.outcome in (Outcome.UNCHANGED, Outcome.REFUSED)
    assert path.read_text() == fixture.before
