"""The planning pipeline's steps are layers: a module imports only from its own step and the steps before it."""

import ast
from pathlib import Path

import pytest

import specdraft.planning

STEPS = ("knowledge", "request", "facts", "decisions", "flags", "checks", "plan")
PLANNING = Path(specdraft.planning.__file__).parent
# the load test's reader sits with the K schedule until the speed model leaves specdraft.bench with it
KNOWN_BACK_IMPORTS = {("facts/launch_facts.py", "specdraft.planning.decisions.k_schedule")}


def _step(module: str) -> str:
    return module.removeprefix("specdraft.planning.").split(".")[0]


def back_imports(root: Path) -> set[tuple[str, str]]:
    """(file, module) for every import of a later step's module under ``root`` (a planning package)."""
    found = set()
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative == "__init__.py":  # the public API re-exports every step
            continue
        step = STEPS.index(relative.split("/")[0].removesuffix(".py"))
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("specdraft.planning.")
                    and STEPS.index(_step(node.module)) > step):
                found.add((relative, node.module))
    return found


def test_no_step_imports_a_later_one():
    assert back_imports(PLANNING) == KNOWN_BACK_IMPORTS


def test_a_check_imported_by_a_decision_is_reported(tmp_path):
    for step in ("decisions", "checks"):
        (tmp_path / step).mkdir()
    (tmp_path / "decisions" / "memory.py").write_text("from specdraft.planning.checks.pair import check_pair\n")
    (tmp_path / "checks" / "pair.py").write_text("from specdraft.planning.decisions.memory import x\n")
    assert back_imports(tmp_path) == {("decisions/memory.py", "specdraft.planning.checks.pair")}


@pytest.mark.parametrize("step", STEPS)
def test_every_step_is_a_place_in_the_package(step):
    assert (PLANNING / step).is_dir() or (PLANNING / f"{step}.py").is_file()
