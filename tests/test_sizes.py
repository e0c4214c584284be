"""Module size shows responsibility: no module of specdraft over 300 lines, no function over 50.

A module past the limit holds more than one thing (split it by what each part serves, with names that say so); a
function past it is a table (make it a data file) or several steps (name them)."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "specdraft"
MAX_MODULE_LINES = 300
MAX_FUNCTION_LINES = 50


def oversized(source: str, name: str) -> list[str]:
    """What in one module's source is past the limits, one line each: the module, then each function (methods and
    nested functions too) by ``end_lineno - lineno + 1``."""
    found = []
    lines = len(source.splitlines())
    if lines > MAX_MODULE_LINES:
        found.append(f"{name}: {lines} lines (at most {MAX_MODULE_LINES})")
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append(f"{name}:{node.lineno} {node.name}: {length} lines (at most {MAX_FUNCTION_LINES})")
    return found


def _package_modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_no_module_is_over_300_lines_and_no_function_over_50():
    found = [line for path in _package_modules()
             for line in oversized(path.read_text(encoding="utf-8"), path.relative_to(PACKAGE).as_posix())]
    assert found == []


def test_the_walk_reaches_every_part_of_the_package():
    checked = {path.relative_to(PACKAGE).as_posix() for path in _package_modules()}
    assert {"cli/template.py", "patching/engine.py", "templates/scenarios.py", "testbed/tiny.py", "model_config.py",
            "families/gemma4.py", "planning/decisions/decide.py", "speed/_speedup_model.py",
            "speed/_tune.py"} <= checked


def _function(lines: int, name: str = "long", indent: str = "") -> str:
    body = "".join(f"{indent}    x{i} = {i}\n" for i in range(lines - 2))
    return f"{indent}def {name}():\n{body}{indent}    return 0\n"


def test_a_51_line_function_is_refused():
    source = _function(51)
    assert len(source.splitlines()) == 51
    assert oversized(source, "m.py") == ["m.py:1 long: 51 lines (at most 50)"]


@pytest.mark.parametrize("wrap", [
    lambda f: "class Holder:\n" + f("    "),
    lambda f: "def outer():\n" + f("    ") + "    return long\n",
    lambda f: "@staticmethod\n" + f(""),
], ids=["method", "nested", "decorated"])
def test_a_51_line_method_or_nested_function_is_refused(wrap):
    assert [line.split(" ", 1)[1] for line in oversized(wrap(lambda indent: _function(51, indent=indent)), "m.py")
            if " long:" in line] == ["long: 51 lines (at most 50)"]


def test_a_301_line_module_is_refused_and_one_at_the_limits_passes():
    at_limits = _function(50) + "\n" * 250
    assert len(at_limits.splitlines()) == 300 and oversized(at_limits, "m.py") == []
    assert oversized(at_limits + "y = 1\n", "m.py") == ["m.py: 301 lines (at most 300)"]
