"""Arctic Inference's wheel, built from its sdist for the Python that will import it."""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from specdraft.errors import UserError
from tools.testbed.arctic_env import arctic_wheel, check_extension


def _wheel(path: Path, members: list[str]) -> Path:
    with zipfile.ZipFile(path, "w") as out:
        for name in members:
            out.writestr(name, b"")
    return path


def test_a_wheel_compiled_for_another_python_is_refused(tmp_path):
    this = "{}{}".format(*sys.version_info[:2])
    good = _wheel(tmp_path / "good.whl", [f"arctic_inference/suffix_decoding/_C.cpython-{this}-x86_64-linux-gnu.so"])
    check_extension(good, sys.version_info[:2], tmp_path / "build.log")
    other = _wheel(tmp_path / "other.whl", ["arctic_inference/suffix_decoding/_C.cpython-39-x86_64-linux-gnu.so"])
    with pytest.raises(UserError, match=f"no suffix tree extension for Python .*_C.cpython-{this}-"):
        check_extension(other, sys.version_info[:2], tmp_path / "build.log")


@pytest.mark.e2e
def test_the_gpu_machines_wheel_builds_here_with_a_python_that_has_no_torch(tmp_path, monkeypatch):
    """The lent GPU machine has Python 3.12 and no package index: its wheel is built here, with a Python 3.12 that
    lacks torch (setup.py imports it; the suffix tree extension does not link it)."""
    found = [*Path.home().glob(".pyenv/versions/3.12*/bin/python3.12"), shutil.which("python3.12")]
    python = next((p for p in found if p and subprocess.run([p, "-V"], capture_output=True).returncode == 0), None)
    if python is None:
        pytest.skip("no Python 3.12 on this machine")
    monkeypatch.setenv("SPECDRAFT_CACHE", str(tmp_path))
    wheel = arctic_wheel(Path(python), progress=lambda line: None)
    assert wheel.name.endswith("-cp312-cp312-linux_x86_64.whl")
    assert any("_C.cpython-312-" in name for name in zipfile.ZipFile(wheel).namelist())
    assert not (wheel.parent / "build").exists()
