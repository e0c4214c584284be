"""The --docker entrypoint's installs cannot break the image's vLLM, shown as far as this machine can.

vllm/vllm-openai images run Python 3.12 (docker/Dockerfile in https://github.com/vllm-project/vllm:
``ARG PYTHON_VERSION=3.12``, pip from get-pip.py, vLLM and its requirements installed with ``uv pip
install --system``). The entrypoint installs specdraft with ``--no-deps`` and libcst under constraints
pinning every installed distribution (and packaging likewise). What is shown here: the patch steps import nothing but
specdraft, libcst and packaging; specdraft's own pins conflict with some releases' (so ``--no-deps`` is
needed); and pip, for Python 3.12 and manylinux x86_64 wheels only, installs libcst and packaging
within each release's own pins (its published METADATA).
"""

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from specdraft.launch._docker import PATCH_REQUIREMENTS
from tests.planning.test_async_scheduling import CHECKED

REPO = Path(__file__).resolve().parents[2]
IMAGE_PYTHON = "3.12"
# pip resolves against PyPI (~20 s a release): the oldest, a middle and the newest release
PIP_CHECKED = ["0.19.0", "0.26.0", "0.33.0"]
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
IMAGE_ENV = {**default_environment(), "python_version": IMAGE_PYTHON, "python_full_version": IMAGE_PYTHON + ".0",
             "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
             "implementation_name": "cpython", "platform_python_implementation": "CPython"}


@pytest.fixture(scope="module")
def release():
    from tools.release_trees import release_tree

    return lambda version: release_tree(version, progress=lambda line: None)


def _vllm_requirements(tree: Path) -> list[Requirement]:
    (metadata,) = tree.glob("vllm-*.dist-info/METADATA")
    lines = [line.split(":", 1)[1].strip() for line in metadata.read_text().splitlines()
             if line.startswith("Requires-Dist:")]
    requirements = [Requirement(line) for line in lines]
    return [r for r in requirements if r.marker is None or r.marker.evaluate({**IMAGE_ENV, "extra": ""})]


def _specdraft_requirements() -> dict[str, SpecifierSet]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return {_name(r.name): r.specifier for r in map(Requirement, project["dependencies"])}


def _name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_the_patch_requirements_are_specdrafts_own():
    ours = _specdraft_requirements()
    assert all(ours[_name(r.name)] == r.specifier for r in map(Requirement, PATCH_REQUIREMENTS))


def test_the_patch_steps_import_only_specdraft_libcst_and_packaging(tmp_path, release):
    from tools.release_trees import copy_tree

    tree = copy_tree(release("0.26.0"), tmp_path / "site")
    script = ("import sys, importlib.metadata as md\n"
              "started = set(sys.modules)\n"
              "from specdraft.cli import main\n"
              "for action in ('apply', 'verify'):\n"
              "    try:\n"
              f"        main(['patch', action, '--vllm-root', {str(tree)!r}])\n"
              "    except SystemExit as stop:\n"
              "        assert stop.code in (0, None), stop.code\n"
              "names = md.packages_distributions()\n"
              "print(sorted({d for m in set(sys.modules) - started for d in names.get(m.split('.')[0], [])}))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = {_name(d) for d in json.loads(done.stdout.strip().splitlines()[-1].replace("'", '"'))}
    assert loaded <= {"specdraft", "libcst", "packaging", "pyyaml", "typing-extensions"}, loaded


@pytest.mark.parametrize("version", CHECKED)
def test_the_image_python_is_one_the_release_supports(release, version):
    (metadata,) = release(version).glob("vllm-*.dist-info/METADATA")
    requires = next(line.split(":", 1)[1].strip() for line in metadata.read_text().splitlines()
                    if line.startswith("Requires-Python:"))
    assert Version(IMAGE_PYTHON + ".0") in SpecifierSet(requires)


def test_installing_specdraft_with_its_dependencies_would_break_vllm_0_19():
    """Why the entrypoint passes --no-deps: specdraft's transformers pin excludes every version vLLM 0.19 allows."""
    from tools.release_trees import release_tree

    vllm = {_name(r.name): r.specifier for r in _vllm_requirements(release_tree("0.19.0", progress=lambda _: None))}
    ours = _specdraft_requirements()
    lowest_ours = Version(next(s.version for s in ours["transformers"] if s.operator == ">="))
    assert lowest_ours not in vllm["transformers"] and not any(
        Version(f"{major}.{minor}.0") in vllm["transformers"] and Version(f"{major}.{minor}.0") in ours["transformers"]
        for major in range(4, 7) for minor in range(0, 40))


@pytest.mark.parametrize("version", PIP_CHECKED)
def test_libcst_and_packaging_install_within_the_releases_pins_on_python_3_12(release, tmp_path, version):
    requirements = _vllm_requirements(release(version))
    constraints = tmp_path / "vllm-pins.txt"
    constraints.write_text("\n".join(f"{r.name}{r.specifier}" for r in requirements if r.specifier) + "\n")
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--isolated", "install", "--dry-run", "--ignore-installed", "--quiet",
         "--only-binary=:all:", "--python-version", IMAGE_PYTHON, *[f"--platform={p}" for p in PLATFORMS],
         "--target", str(tmp_path / "target"), "--report", str(report), "-c", str(constraints),
         *PATCH_REQUIREMENTS], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    installed = {_name(i["metadata"]["name"]): Version(i["metadata"]["version"])
                 for i in json.loads(report.read_text())["install"]}
    assert {"libcst", "packaging"} <= installed.keys()
    pins = {_name(r.name): r.specifier for r in requirements}
    assert all(v in pins[name] for name, v in installed.items() if name in pins), (installed, pins)
    assert installed["packaging"] in _specdraft_requirements()["packaging"]
