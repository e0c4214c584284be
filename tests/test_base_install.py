"""The base install (no extras): every command works or says which extra it needs, in one line, exit 2.

The base install is simulated for real: specdraft's interpreter runs without its site-packages (``-S``) and
sees a copy of them made of links to every package except those only the extras bring (torch, the OpenAI
client, ModelOpt) and vLLM (which lives in its own venv). Nothing is stubbed: those modules are absent.
"""

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from specdraft.templates import shipped_template

REPO = Path(__file__).resolve().parents[1]
EXTRAS_ONLY = ("torch", "openai", "modelopt", "nvidia", "vllm", "triton")


@pytest.fixture(scope="module")
def base_site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("base-site")
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.lower().startswith(EXTRAS_ONLY) and not entry.name.startswith(("__editable__", "specdraft")):
            (site / entry.name).symlink_to(entry)
    return site


def run_base(site: Path, *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": f"{REPO}{os.pathsep}{site}", "PATH": "/usr/bin:/bin", "HOME": os.environ["HOME"],
           "SPECDRAFT_CACHE": str(site.parent / "cache")}
    return subprocess.run([sys.executable, "-S", "-m", "specdraft", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=300)


def test_the_simulated_base_install_really_lacks_the_extras(base_site):
    env = {"PYTHONPATH": f"{REPO}{os.pathsep}{base_site}", "PATH": "/usr/bin:/bin"}
    code = "import importlib.util as u; print([m for m in ('torch', 'openai', 'modelopt') if u.find_spec(m)])"
    done = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, env=env)
    assert done.stdout.strip() == "[]", done.stderr


def test_launch_demo_without_the_demo_extra_is_one_line_naming_it(base_site):
    done = run_base(base_site, "launch", "--demo")
    assert done.returncode == 2, done.stderr
    error, hint = done.stderr.splitlines()
    assert error == f"specdraft: error: launch --demo needs openai (the 'demo' extra), which {sys.executable} cannot import"
    assert hint.startswith(f"specdraft: next: {sys.executable} -m pip install -e '{REPO}[demo]'")
    assert not (base_site.parent / "cache").exists()  # nothing was set up before the refusal


def test_quantize_without_its_extra_names_it(base_site, tmp_path):
    (tmp_path / "model").mkdir()
    done = run_base(base_site, "quantize", str(tmp_path / "model"), "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and "internal error" not in done.stderr and "Traceback" not in done.stderr


def test_a_missing_base_dependency_names_the_install_command_not_an_internal_error(tmp_path):
    # what a newcomer meets pasting a README command into an interpreter that never installed specdraft
    site = tmp_path / "site"
    site.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.lower().startswith(("huggingface_hub", *EXTRAS_ONLY)) and not entry.name.startswith(
                ("__editable__", "specdraft")):
            (site / entry.name).symlink_to(entry)
    done = run_base(site, "launch", "--target", "google/gemma-4-31B-it", "--draft", "google/gemma-4-E2B-it",
                    "--dry-run")
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[:2] == [
        f"specdraft: error: specdraft needs huggingface_hub (specdraft's base install), which {sys.executable} "
        "cannot import",
        f"specdraft: next: {sys.executable} -m pip install -e {REPO} (or use the interpreter `make setup` makes: "
        f"{tmp_path / 'cache'}/venvs/dev/bin/python)",
    ]


def test_every_declared_dependency_maps_to_its_import_name():
    import tomllib

    from packaging.requirements import Requirement

    from specdraft.dependencies import IMPORTS

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = {Requirement(line).name: None for line in project["dependencies"]}
    for extra in ("demo", "quantize"):
        declared.update({Requirement(line).name: extra for line in project["optional-dependencies"][extra]
                         if Requirement(line).name not in declared})
    mapped = {distribution: extra for distribution, extra in IMPORTS.values()}
    assert {name: extra for name, extra in declared.items() if name != "requests"} == mapped


@pytest.mark.parametrize("args", [
    ("tune", "--per-position-acceptance", "0.8,0.6", "--cost-ratio", "0.1"),
    ("patch", "list"),
    ("template", "check", str(shipped_template("e")), "--variant", "e"),
    ("template", "path", "--variant", "large"),
    ("launch", "--target", "google/gemma-4-31B-it", "--draft", "google/gemma-4-E2B-it", "--dry-run"),
], ids=lambda args: " ".join(args[:2]))
def test_base_commands_run_without_any_extra(base_site, args):
    done = run_base(base_site, *args)
    assert done.returncode in (0, 1), done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr


def test_cluster_report_runs_without_any_extra(base_site):
    from tools.release_trees import release_tree

    tree = release_tree("0.26.0", progress=print)
    done = run_base(base_site, "cluster", "report", "--vllm-root", str(tree), "--json")
    assert done.returncode == 0, done.stderr
    assert '"version": "0.26.0"' in done.stdout


def test_bench_compares_saved_runs_without_any_extra(base_site, tmp_path):
    from tests.bench.test_cli_bench import saved

    fast = saved(tmp_path, "fast", decode=30.0, output=100.0, e2e=2.0)
    slow = saved(tmp_path, "slow", decode=15.0, output=50.0, e2e=4.0)
    done = run_base(base_site, "bench", "--compare-results", fast, slow, "--json")
    assert done.returncode == 0, done.stderr
    assert '"decode_tok_s": 2.0' in done.stdout


def test_watch_judges_a_server_without_any_extra(base_site):
    from tests.watch.test_cli_watch import PAGE, serving

    with serving(PAGE) as url:
        done = run_base(base_site, "watch", "--base-url", url, "--once")
    assert done.returncode == 0, done.stderr
    assert "pays" in done.stdout
