"""Published vLLM release trees: the .py files the tests read, never the whole wheel."""

from __future__ import annotations

import base64
import csv
import hashlib

from specdraft.cache import cache_root
from tools.release_trees import fetch_tree, release_tree
from tools.remote_wheel import extract_members, find_wheel


def test_a_release_tree_holds_its_sources_and_the_cache_keeps_no_wheel():
    tree = release_tree("0.18.1", progress=lambda line: None)
    kept = {path.suffix or path.name for path in tree.rglob("*") if path.is_file()}
    assert kept == {".py", "METADATA", ".complete"}
    assert (tree / "vllm/v1/worker/utils.py").is_file()
    assert not list((cache_root() / "wheels").glob("vllm-0.18.1-*.whl"))


def test_a_tree_read_by_ranges_holds_the_files_the_wheel_s_record_lists(tmp_path):
    transfer = fetch_tree("0.18.1", tmp_path, progress=lambda line: None)
    wheel = find_wheel("vllm", "0.18.1")
    extract_members(wheel, tmp_path / "record", lambda name: name.endswith(".dist-info/RECORD"), spool=tmp_path)
    (record,) = (tmp_path / "record").glob("*.dist-info/RECORD")
    listed = {row[0]: row[1] for row in csv.reader(record.read_text().splitlines()) if row[1]}
    tree = tmp_path / "0.18.1"
    read = {path.relative_to(tree).as_posix(): path for path in tree.rglob("*") if path.name != ".complete"
            and path.is_file()}
    assert set(read) == {name for name in listed if name.endswith(".py") and name.startswith("vllm/")
                         or name.endswith(".dist-info/METADATA")}
    for name, path in read.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(path.read_bytes()).digest()).rstrip(b"=").decode()
        assert listed[name] == f"sha256={digest}", name
    # the sources are a few percent of a wheel that is mostly compiled kernels
    assert transfer.ranged and transfer.bytes < wheel.size / 20 and transfer.requests < 20


def test_two_runs_that_read_one_release_at_once_leave_one_whole_tree(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda _: fetch_tree("0.18.1", tmp_path, progress=lambda line: None), range(2)))
    assert [path.name for path in tmp_path.iterdir()] == ["0.18.1"]
    assert (tmp_path / "0.18.1/.complete").read_text().startswith("vllm-0.18.1-")
