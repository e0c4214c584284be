"""The shipped per-release support table against the real release sources it was read from."""

import json
from importlib import resources

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from specdraft.planning.knowledge.release_support import release_support
from tools.release_tables import table_rules
from tools.release_tables.release_support import read_release_support
from tests.planning.test_async_scheduling import CHECKED, RELEASES

TABLE = json.loads(resources.files("specdraft.planning").joinpath("data", "release_support.json").read_text())


@pytest.fixture(scope="module")
def release():
    from tools.release_trees import release_tree

    return lambda version: release_tree(version, progress=lambda line: None)


def test_table_covers_every_release_from_0_19_to_0_33_once():
    read = [version for rule in TABLE["rules"] for version in rule["read"]]
    assert sorted(read, key=Version) == RELEASES
    for rule in TABLE["rules"]:
        assert all(Version(v) in SpecifierSet(rule["versions"]) for v in rule["read"]), rule["versions"]
    assert release_support("0.18.1") is None and release_support("0.34.0") is None and release_support(None) is None


@pytest.mark.parametrize("version", CHECKED)
def test_table_entry_is_what_the_release_source_says(release, version):
    assert read_release_support(release(version)) == release_support(version)


@pytest.mark.parametrize("version", CHECKED)
def test_the_facts_are_in_the_source_text(release, version):
    """Independent of the AST reading: the strings themselves, where the table says they are."""
    package = release(version) / "vllm"
    facts = release_support(version)
    speculative = (package / "config" / "speculative.py").read_text()
    assert ('"gemma4_assistant"' in speculative) == bool(facts.gemma4_assistant_model_types)
    registry = (package / "model_executor" / "models" / "registry.py").read_text()
    assert ('"Gemma4MTPModel"' in registry) == ("Gemma4MTPModel" in facts.gemma4_architectures)
    # the 12B: its model and its assistant's model type arrive together
    assert ('"Gemma4UnifiedForConditionalGeneration"' in registry) == (
        "Gemma4UnifiedForConditionalGeneration" in facts.gemma4_architectures)
    assert ('"gemma4_unified_assistant"' in speculative) == (
        "gemma4_unified_assistant" in facts.gemma4_assistant_model_types)
    cache = (package / "config" / "cache.py").read_text()
    assert all(f'"{dtype}"' in cache for dtype in facts.kv_cache_dtypes)
    assert "No valid cudagraph sizes after rounding" in (package / "config" / "compilation.py").read_text()
    assert f"{facts.cudagraph_capture_ceiling}" in (package / "config" / "vllm.py").read_text()


def test_gemma4_assistants_arrive_in_0_21_0():
    assert not release_support("0.19.1").gemma4_assistant_model_types
    assert not release_support("0.20.2").gemma4_assistant_model_types
    assert release_support("0.21.0").gemma4_assistant_model_types == ("gemma4_assistant",)
    assert "gemma4_unified_assistant" in release_support("0.33.0").gemma4_assistant_model_types


def test_an_unreadable_tree_gives_none(tmp_path):
    assert read_release_support(tmp_path) is None


@pytest.mark.parametrize("version", CHECKED)
def test_the_method_facts_are_in_the_source_text(release, version):
    """Independent of the AST reading: the decorator strings, class headers and field names themselves."""
    package = release(version) / "vllm"
    facts = release_support(version)
    algos = (package / "transformers_utils" / "configs" / "speculators" / "algos.py").read_text()
    assert all(f'@register_speculator("{name}")' in algos for name in facts.speculators_types)
    assert algos.count("@register_speculator(") == len(facts.speculators_types)
    speculative = (package / "config" / "speculative.py").read_text()
    assert all(f"\n    {field}:" in speculative for options in facts.method_options.values() for field in options)
    literal = next(line for line in speculative.splitlines() if line.startswith("RejectionSampleMethod = Literal["))
    assert literal == "RejectionSampleMethod = Literal[" + ", ".join(f'"{m}"' for m in facts.rejection_sample_methods) + "]"
    models = "".join(path.read_text() for path in (package / "model_executor" / "models").glob("gemma4*.py"))
    header = models[models.index("class Gemma4ForConditionalGeneration("):][:400]
    assert ("SupportsEagle3" in header.split("):")[0]) == ("Gemma4ForConditionalGeneration"
                                                          in facts.gemma4_eagle3_architectures)


def test_gemma4_targets_feed_eagle3_drafters_from_0_19_1():
    assert release_support("0.19.0").gemma4_eagle3_architectures == ()
    assert "Gemma4ForConditionalGeneration" in release_support("0.19.1").gemma4_eagle3_architectures


def test_lossy_fly_rejection_arrives_in_0_33_0_and_dspark_s_gemma4_drafter_in_0_26_0():
    assert "fly" not in release_support("0.32.0").rejection_sample_methods
    assert release_support("0.33.0").rejection_sample_methods == ("standard", "synthetic", "block", "fly")
    assert release_support("0.20.2").rejection_sample_methods == ("strict", "probabilistic", "synthetic")
    assert "dspark" in release_support("0.25.0").speculators_types
    assert "Gemma4DSparkModel" not in release_support("0.25.1").gemma4_architectures
    assert "Gemma4DSparkModel" in release_support("0.26.0").gemma4_architectures


def test_dflash_speculators_load_from_0_20_0():
    assert release_support("0.19.1").speculators_types == ("eagle3",)
    assert "dflash" in release_support("0.20.0").speculators_types
    assert "prompt_lookup_min" in release_support("0.33.0").method_options["ngram"]
    assert "suffix_decoding_max_tree_depth" in release_support("0.19.0").method_options["suffix"]


def test_table_rules_group_consecutive_releases_with_equal_facts(release):
    rules = table_rules({"0.26.0": release("0.26.0"), "0.27.0": release("0.26.0"), "0.28.0": release("0.28.0")},
                        read_release_support)
    assert [(rule["versions"], rule["read"]) for rule in rules] == [
        (">=0.26.0,<0.28.0", ["0.26.0", "0.27.0"]), (">=0.28.0,<0.29.0", ["0.28.0"])]
    assert rules[1]["kv_cache_dtypes"] == list(release_support("0.28.0").kv_cache_dtypes)
