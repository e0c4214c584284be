"""Published vLLM release trees: the .py files the tests read, never the whole wheel."""

from __future__ import annotations

from specdraft.cache import cache_root
from specdraft.testbed.release_trees import release_tree


def test_a_release_tree_holds_its_sources_and_the_cache_keeps_no_wheel():
    tree = release_tree("0.18.1", progress=lambda line: None)
    kept = {path.suffix or path.name for path in tree.rglob("*") if path.is_file()}
    assert kept == {".py", "METADATA", ".complete"}
    assert (tree / "vllm/v1/worker/utils.py").is_file()
    assert not list(cache_root().glob("**/vllm-0.18.1-*.whl"))
