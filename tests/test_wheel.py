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


def test_built_wheel_ships_the_shape_facts_and_version_data(installed_wheel):
    assert (installed_wheel / "specdraft/planning/data/multimodal_draft_model.json").is_file()
    assert (installed_wheel / "specdraft/patching/data/transformers_gemma4.json").is_file()
    shape_facts = installed_wheel / "specdraft/checkpoints/data"
    assert (shape_facts / "nvfp4_checkpoints.json").is_file()
    assert len(list((shape_facts / "models").glob("*.json"))) >= 10
