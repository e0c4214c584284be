"""The built wheel carries everything specdraft reads at run time: hotfixes, templates, shape facts."""

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed_wheel(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "-w", str(tmp / "dist"), str(REPO)], check=True, capture_output=True)
    (wheel,) = (tmp / "dist").glob("specdraft-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(tmp / "site")
    return tmp / "site"


def run_from_wheel(site: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=site.parent,
                          env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})


def test_built_wheel_ships_the_hotfix_catalog(installed_wheel):
    listed = run_from_wheel(installed_wheel, "-m", "specdraft", "patch", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    shipped = {path.stem.replace("_", "-") for path in (REPO / "hotfixes").glob("*.py") if path.stem != "__init__"}
    assert {h["id"] for h in json.loads(listed.stdout)} == shipped and "kv-uniform-catches-valueerror" in shipped
    assert (installed_wheel / "specdraft/hotfixes/kv_uniform_catches_valueerror.py").is_file()


def test_built_wheel_ships_both_templates(installed_wheel):
    code = "from specdraft.templates import shipped_template as s; print(s('e')); print(s('large'))"
    done = run_from_wheel(installed_wheel, "-c", code)
    assert done.returncode == 0, done.stderr
    paths = [Path(line) for line in done.stdout.split()]
    assert all(p.is_file() and str(p).startswith(str(installed_wheel)) for p in paths)
    assert paths[1].read_text() == (REPO / "chat_templates/gemma4-large.jinja").read_text()


def test_built_wheel_ships_the_scenario_matrix(installed_wheel):
    code = "import specdraft.templates.scenarios as s; print(len(s.SCENARIOS), s.__file__)"
    done = run_from_wheel(installed_wheel, "-c", code)
    assert done.returncode == 0, done.stderr
    count, module = done.stdout.split()
    assert int(count) == 41 and module.startswith(str(installed_wheel))
    assert (installed_wheel / "specdraft/templates/data/scenarios.json").is_file()


def test_built_wheel_ships_the_shape_facts_and_version_data(installed_wheel):
    assert (installed_wheel / "specdraft/planning/data/multimodal_draft_model.json").is_file()
    assert (installed_wheel / "specdraft/patching/data/transformers_gemma4.json").is_file()
    assert (installed_wheel / "specdraft/families/data/gemma4.costs.json").is_file()  # launch's default K and step costs
    shape_facts = installed_wheel / "specdraft/checkpoints/data"
    assert (shape_facts / "nvfp4_checkpoints.json").is_file()
    assert len(list((shape_facts / "models").glob("*.json"))) >= 10


def test_built_wheel_loads_every_release_table(installed_wheel):
    """Each shipped per-release table is read through its typed loader from the wheel's own package data."""
    code = ("import specdraft.planning.knowledge.release_tables as t; "
            "print(*(len(getattr(t, name)().rules) for name in t.__all__ if name.endswith('_table')))")
    done = run_from_wheel(installed_wheel, "-c", code)
    assert done.returncode == 0, done.stderr
    counts = [int(n) for n in done.stdout.split()]
    assert len(counts) == 5 and all(counts)


def _imported_modules(source: str) -> set[str]:
    import ast

    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def test_built_wheel_ships_no_tooling(installed_wheel):
    shipped = {path.relative_to(installed_wheel).as_posix(): path for path in installed_wheel.rglob("*.py")}
    assert {name.split("/")[0] for name in shipped} == {"specdraft"}
    reaching_out = {name: sorted(m for m in _imported_modules(path.read_text())
                                 if m.split(".")[0] in ("tools", "tests")) for name, path in shipped.items()}
    assert {name: modules for name, modules in reaching_out.items() if modules} == {}
    assert not [name for name in shipped if name.endswith(("release_trees.py", "remote_wheel.py", "moe_kernels.py"))]


def test_the_testbed_ships_only_what_the_demo_imports(installed_wheel):
    """The shipped testbed modules are exactly those ``launch --demo`` reaches by imports (a module only tests use
    belongs in tools/testbed)."""
    testbed = installed_wheel / "specdraft/testbed"
    reached, todo = set(), ["specdraft.testbed"] + sorted(
        m for m in _imported_modules((installed_wheel / "specdraft/launch/_demo.py").read_text())
        if m.startswith("specdraft.testbed"))
    while todo:
        module = todo.pop()
        if module in reached:
            continue
        reached.add(module)
        path = installed_wheel / (module.replace(".", "/") + ".py")
        path = path if path.is_file() else installed_wheel / module.replace(".", "/") / "__init__.py"
        todo += [m for m in _imported_modules(path.read_text()) if m.startswith("specdraft.testbed")]
    shipped = {"specdraft.testbed" + ("" if path.stem == "__init__" else f".{path.stem}")
               for path in testbed.glob("*.py")}
    assert shipped == reached
