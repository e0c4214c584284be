"""Gemma 4's family facts, read from the config.json files specdraft ships (real hub shapes)."""

import json
from importlib import resources

import pytest

from specdraft.families import DEFAULT_FAMILY, GEMMA4, family_of, family_with_layer_formula, rules_for
from specdraft.families.gemma4 import ALWAYS_EXCLUDED, MARKER_PAIRS, SPECIAL_TOKENS, TEMPLATE_VARIANTS

DATA = resources.files("specdraft.checkpoints") / "data"
LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 32,
         "num_key_value_heads": 8, "head_dim": 128, "hidden_size": 4096, "vocab_size": 128256}


def config(repo_id: str) -> dict:
    return json.loads((DATA / "models" / (repo_id.replace("/", "__") + ".json")).read_text())


def params(repo_id: str) -> dict:
    return json.loads((DATA / "kv_and_params.json").read_text())[repo_id]


SHIPPED = sorted(entry.name[: -len(".json")].replace("__", "/") for entry in (DATA / "models").iterdir())
# speculators-format drafters (EAGLE-3, DFlash) ship beside the Gemma 4 models: their config describes a
# drafter layout, not a Gemma 4 model
SPECULATORS = [repo_id for repo_id in SHIPPED if "speculators_config" in config(repo_id)]


def test_the_shipped_speculators_are_the_published_drafters():
    assert SPECULATORS == ["RedHatAI/gemma-4-31B-it-speculator.dflash", "RedHatAI/gemma-4-31B-it-speculator.dspark",
                           "RedHatAI/gemma-4-31B-it-speculator.eagle3"]


@pytest.mark.parametrize("repo_id", [repo_id for repo_id in SHIPPED if repo_id not in SPECULATORS])
def test_every_shipped_gemma4_config_is_recognised(repo_id):
    assert family_of(config(repo_id)) is GEMMA4


@pytest.mark.parametrize("repo_id", SPECULATORS)
def test_a_speculators_drafter_is_no_gemma4_model(repo_id):
    assert family_of(config(repo_id)) is None


def test_a_config_of_another_family_is_not_gemma4():
    assert family_of(LLAMA) is None
    assert family_with_layer_formula(LLAMA) is None


@pytest.mark.parametrize("repo_id,kind,variant", [
    ("google/gemma-4-E2B-it", "e-series", "e"),
    ("google/gemma-4-E4B-it", "e-series", "e"),
    ("google/gemma-4-26B-A4B-it", "moe", "large"),
    ("google/gemma-4-31B-it", "large", "large"),
    ("google/gemma-4-12B-it", "large", "large"),
    ("google/gemma-4-31B-it-assistant", "assistant", "large"),
    ("google/gemma-4-12B-it-assistant", "assistant", "large"),
])
def test_kind_and_template_variant(repo_id, kind, variant):
    assert (GEMMA4.kind(config(repo_id)), GEMMA4.template_variant(config(repo_id))) == (kind, variant)


def test_every_template_variant_has_a_shipped_file():
    assert set(GEMMA4.template_files) == set(TEMPLATE_VARIANTS)
    shipped = resources.files("specdraft.templates") / "chat_templates"
    assert all((shipped / name).is_file() for name in GEMMA4.template_files.values())


def test_e2b_shares_the_kv_cache_of_its_last_twenty_layers():
    assert GEMMA4.kv_shared_layers(config("google/gemma-4-E2B-it")) == tuple(range(15, 35))


def test_an_assistant_owns_no_kv_cache():
    layers = GEMMA4.kv_layers(config("google/gemma-4-31B-it-assistant"))
    assert layers and all(layer.shared for layer in layers)


def test_31b_full_layers_read_one_kv_head_of_the_global_head_size():
    text = config("google/gemma-4-31B-it")["text_config"]
    full = [layer for layer in GEMMA4.kv_layers(text) if layer.kind == "full"]
    assert {(layer.kv_heads, layer.head_dim) for layer in full} == {
        (text["num_global_key_value_heads"], text["global_head_dim"])}


@pytest.mark.parametrize("repo_id", ["google/gemma-4-E2B-it", "google/gemma-4-E4B-it", "google/gemma-4-26B-A4B-it",
                                     "google/gemma-4-31B-it", "google/gemma-4-12B-it", "google/gemma-4-12B",
                                     "google/gemma-4-E2B-it-assistant", "google/gemma-4-E4B-it-assistant",
                                     "google/gemma-4-31B-it-assistant"])
def test_parameter_formula_matches_what_transformers_instantiates(repo_id):
    assert family_with_layer_formula(config(repo_id)) is GEMMA4
    assert GEMMA4.count_parameters(config(repo_id)).total == params(repo_id)["language_model_params"]


def test_the_unified_12b_stack_adds_up_to_the_hub_total():
    """The hub's safetensors total is the language model, the patch and audio embedders (what transformers
    instantiates beyond it) and one layer_scalar buffer per decoder layer."""
    twelve, counted = config("google/gemma-4-12B"), params("google/gemma-4-12B")
    layers = twelve["text_config"]["num_hidden_layers"]
    assert GEMMA4.count_parameters(twelve).total == counted["language_model_params"] == 11_907_350_272
    assert counted["hf_params"] + layers == counted["hub_safetensors_total"] == 11_959_730_224


def test_an_assistant_counts_its_projections_to_the_target_width():
    """pre_projection (2 x backbone -> hidden) and post_projection (hidden -> backbone): the 12B's assistant, its
    vocabulary unordered, has 3 x 3840 x 1024 beyond its decoder stack and tied head."""
    assistant = config("google/gemma-4-12B-it-assistant")
    bare = {key: value for key, value in assistant.items() if key != "model_type"}
    assert GEMMA4.count_parameters(assistant).total - GEMMA4.count_parameters(bare).total == 3 * 3840 * 1024
    assert GEMMA4.count_parameters(assistant).total == 422_856_960


def test_12b_kv_cache_is_forty_sliding_layers_and_eight_one_head_full_layers():
    """attention_k_eq_v full layers read one KV head of 512; vLLM caches K and V for it all the same."""
    twelve = config("google/gemma-4-12B-it")
    layers = GEMMA4.kv_layers(twelve)
    shapes = [(layer.kind, layer.kv_heads, layer.head_dim, layer.shared) for layer in layers]
    assert shapes == ([("sliding", 8, 256, False)] * 5 + [("full", 1, 512, False)]) * 8
    per_layer = params("google/gemma-4-12B-it")["per_layer"]
    for kind in ("full", "sliding"):
        layer = next(layer for layer in layers if layer.kind == kind)
        assert 2 * layer.kv_heads * layer.head_dim * 2 == per_layer[kind][2]  # K and V, bf16


def test_quantization_keeps_kv_shared_attention_and_towers_unquantized():
    e2b = GEMMA4.quantization_exclusions(config("google/gemma-4-E2B-it"))
    assert e2b[: len(ALWAYS_EXCLUDED)] == ALWAYS_EXCLUDED
    assert e2b[len(ALWAYS_EXCLUDED):] == tuple(f"*layers.{i}.self_attn*" for i in range(15, 35))
    assert GEMMA4.quantization_exclusions(config("google/gemma-4-31B-it")) == ALWAYS_EXCLUDED


@pytest.mark.parametrize("repo_id,base", [
    ("mikeytag/gemma-4-E2B-it-NVFP4", "google/gemma-4-E2B-it"),
    ("someone/Gemma-4-26B-A4B-it-FP8", "google/gemma-4-26B-A4B-it"),
    ("google/gemma-4-31B-it-assistant", "google/gemma-4-31B-it-assistant"),
    ("google/gemma-4-12B", "google/gemma-4-12B-it"),
    ("google/gemma-4-12B-it-assistant", "google/gemma-4-12B-it-assistant"),
    ("someone/gemma-4-131B-it", None),
    ("meta-llama/Llama-3.1-8B", None),
])
def test_base_repo_from_the_size_in_a_name(repo_id, base):
    assert GEMMA4.base_repo_for(repo_id) == base


def test_every_marker_pair_is_a_pair_of_special_tokens():
    assert all(opener in SPECIAL_TOKENS and closer in SPECIAL_TOKENS for opener, closer in MARKER_PAIRS.items())
    assert set(GEMMA4.pairing_tokens) <= set(SPECIAL_TOKENS)


def test_a_config_no_family_claims_is_read_the_plain_transformers_way():
    assert rules_for(LLAMA) is DEFAULT_FAMILY
    layers = GEMMA4.kv_layers(LLAMA)
    assert len(layers) == 32 and {(layer.kind, layer.kv_heads, layer.head_dim, layer.shared) for layer in layers} == {
        ("full", 8, 128, False)}


def test_every_size_has_a_shipped_config_and_assistant():
    for base in GEMMA4.base_repos.values():
        assert config(base) and config(GEMMA4.assistant_repo_for(base))


def test_embedding_params_count_the_token_and_per_layer_tables():
    e2b, big = config("google/gemma-4-E2B-it")["text_config"], config("google/gemma-4-31B-it")["text_config"]
    assert GEMMA4.embedding_params(big) == big["vocab_size"] * big["hidden_size"]
    per_layer = e2b["vocab_size_per_layer_input"] * e2b["num_hidden_layers"] * e2b["hidden_size_per_layer_input"]
    assert GEMMA4.embedding_params(e2b) == e2b["vocab_size"] * e2b["hidden_size"] + per_layer


@pytest.mark.parametrize("repo_id, moe, experts", [("google/gemma-4-26B-A4B-it", True, (8, 128)),
                                                   ("google/gemma-4-31B-it", False, None)])
def test_the_family_says_which_checkpoints_route_tokens_to_experts(repo_id, moe, experts):
    assert GEMMA4.is_moe(config(repo_id)) is moe and GEMMA4.routed_experts(config(repo_id)) == experts


def test_an_assistant_names_the_width_of_the_target_it_was_built_for():
    assert GEMMA4.draft_backbone_width(config("google/gemma-4-26B-A4B-it-assistant")) == \
        config("google/gemma-4-26B-A4B-it")["text_config"]["hidden_size"]
    assert GEMMA4.draft_backbone_width(config("google/gemma-4-31B-it")) is None


@pytest.mark.parametrize("repo_id, size", [("google/gemma-4-31B-it", "31b"), ("nvidia/Gemma-4-31B-IT-NVFP4", "31b"),
                                           ("google/gemma-4-26B-A4B-it", "26b"), ("google/gemma-4-E4B-it", None)])
def test_the_measured_size_is_the_one_whose_shape_the_target_has(repo_id, size):
    """A repackaging of the 31B (NVFP4) has its shape, so its costs; the E4B was not measured as a target."""
    assert GEMMA4.size_key(config(repo_id)) == size


def test_the_default_k_table_falls_back_from_the_kind_to_any_kind_and_from_the_profile_to_any_profile():
    costs = GEMMA4.costs
    assert costs.default_k_for("assistant", "moe", "h200").k == 4        # the kind's own row
    assert costs.default_k_for("assistant", "moe", "dgx-spark").k == 4   # the any-kind row's profile ...
    assert costs.default_k_for("assistant", "large", "h100").k == 8
    assert costs.default_k_for("draft_model", None, "a100").k == 4       # ... else its any-profile entry


def test_family_tables_without_a_fallback_row_are_refused(tmp_path):
    from pydantic import ValidationError

    from specdraft.families._costs import read_family_costs

    broken = tmp_path / "broken.costs.json"
    document = json.loads(GEMMA4.costs_file.read_text())
    del document["default_k"]["draftless"]["*"]["*"]
    broken.write_text(json.dumps(document))
    with pytest.raises(ValidationError, match="default_k.draftless needs a"):
        read_family_costs(broken)
