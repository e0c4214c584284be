import json

import numpy as np

from specdraft.planning import inspect_checkpoint
from tests.planning.conftest import gemma_tokenizer_config, shipped_config, write_checkpoint


def test_local_directory_gives_config_quantization_weight_bytes_and_special_tokens(tmp_path):
    config = shipped_config("google/gemma-4-E2B-it")
    config["quantization_config"] = {"quant_method": "modelopt", "quant_algo": "NVFP4"}
    directory = write_checkpoint(
        tmp_path / "e2b", config,
        tensors={"a": np.zeros((4, 8), dtype=np.float32), "b": np.zeros(16, dtype=np.uint8)},
        tokenizer_config=gemma_tokenizer_config(), generation_config={"eos_token_id": [1, 106, 50]},
    )
    checkpoint = inspect_checkpoint(str(directory))
    assert checkpoint.source == "local"
    assert checkpoint.quantization.method == "modelopt"
    assert checkpoint.weight_bytes == 4 * 8 * 4 + 16
    assert checkpoint.weight_bytes_basis == "safetensors headers"
    assert checkpoint.special_token_ids["<turn|>"] == 106 and checkpoint.special_token_ids["bos"] == 2
    assert checkpoint.eos_token_ids == (1, 106, 50)
    assert checkpoint.vocab_size == 262144 and checkpoint.num_kv_shared_layers == 20
    assert checkpoint.template_variant == "e"


def test_hf_quant_config_json_means_modelopt(tmp_path):
    directory = write_checkpoint(tmp_path / "m", shipped_config("google/gemma-4-E4B-it"),
                                 hf_quant_config={"producer": {"name": "modelopt"},
                                                  "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8"}})
    quantization = inspect_checkpoint(str(directory)).quantization
    assert (quantization.method, quantization.algo, str(quantization.kv_cache).lower()) == ("modelopt", "NVFP4", "fp8")


def test_llm_compressor_checkpoint_means_compressed_tensors(tmp_path):
    config = shipped_config("google/gemma-4-E4B-it")
    config["quantization_config"] = {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized"}
    assert inspect_checkpoint(str(write_checkpoint(tmp_path / "c", config))).quantization.method == "compressed-tensors"


def test_repo_in_the_hf_cache_is_read_offline_from_its_snapshot(tmp_path):
    snapshot = tmp_path / "hub" / "models--someone--gemma-4-E2B-it-copy" / "snapshots" / "0123abcd"
    write_checkpoint(snapshot, shipped_config("google/gemma-4-E2B-it"))
    refs = tmp_path / "hub" / "models--someone--gemma-4-E2B-it-copy" / "refs"
    refs.mkdir()
    (refs / "main").write_text("0123abcd")
    checkpoint = inspect_checkpoint("someone/gemma-4-E2B-it-copy", hf_cache=tmp_path / "hub")
    assert checkpoint.source == "hf-cache"
    assert checkpoint.path == snapshot


def test_repo_not_on_this_machine_falls_back_to_shape_facts_and_says_so(tmp_path):
    checkpoint = inspect_checkpoint("mikeytag/gemma-4-E2B-it-NVFP4", hf_cache=tmp_path)
    assert checkpoint.source == "shape-facts"
    assert checkpoint.notes == ("mikeytag/gemma-4-E2B-it-NVFP4 is not in the Hugging Face cache; using shipped shape "
                                "facts of its base google/gemma-4-E2B-it (NVFP4 table entry for "
                                "mikeytag/gemma-4-E2B-it-NVFP4)",)
    assert checkpoint.quantization.method == "modelopt"
    assert checkpoint.weight_bytes_basis.startswith("estimated from 5,104,297,504 parameters")


def test_text_only_repackaging_is_not_multimodal_and_uses_its_reported_footprint(tmp_path):
    checkpoint = inspect_checkpoint("LilaRest/gemma-4-31B-it-NVFP4-turbo", hf_cache=tmp_path)
    assert checkpoint.architectures == ("Gemma4ForCausalLM",)
    assert not checkpoint.is_multimodal
    assert checkpoint.weight_bytes == int(18.5 * 2**30)
    assert checkpoint.template_variant == "large"


def test_an_unknown_size_is_guessed_from_the_name_and_says_so(tmp_path):
    checkpoint = inspect_checkpoint("someone/my-gemma-4-E4B-finetune", hf_cache=tmp_path)
    assert "guessed from the size in the name" in checkpoint.notes[0]
    assert checkpoint.num_kv_shared_layers == 18


def test_a_repo_nothing_is_known_about_is_unknown(tmp_path):
    checkpoint = inspect_checkpoint("someone/llama-7b", hf_cache=tmp_path)
    assert checkpoint.source == "unknown"
    assert checkpoint.notes == ("someone/llama-7b is not in the Hugging Face cache and no shipped shape facts match it",)


def test_missing_local_directory_is_unknown_with_the_path(tmp_path):
    checkpoint = inspect_checkpoint(str(tmp_path / "nope"))
    assert checkpoint.source == "unknown" and checkpoint.notes == (f"{tmp_path / 'nope'}: no such directory",)


def test_kv_layout_follows_gemma4_rules_for_full_layers(tmp_path):
    """Full layers use global_head_dim, and num_global_key_value_heads only with attention_k_eq_v."""
    big = inspect_checkpoint("google/gemma-4-31B-it", hf_cache=tmp_path).kv_layers()
    assert {(l.kind, l.kv_heads, l.head_dim) for l in big} == {("full", 4, 512), ("sliding", 16, 256)}
    small = inspect_checkpoint("google/gemma-4-E2B-it", hf_cache=tmp_path).kv_layers()
    assert {(l.kind, l.kv_heads, l.head_dim) for l in small} == {("full", 1, 512), ("sliding", 1, 256)}
    assert sum(l.shared for l in small) == 20 and not any(l.shared for l in small[:15])


def test_shipped_shape_facts_are_package_data():
    from importlib import resources

    names = {p.name for p in resources.files("specdraft.checkpoints").joinpath("data", "models").iterdir()}
    assert "google__gemma-4-31B-it.json" in names
    assert json.loads(resources.files("specdraft.checkpoints").joinpath("data", "nvfp4_checkpoints.json").read_text())


def test_special_token_ids_come_from_tokenizer_json_when_the_config_has_none(tmp_path):
    directory = write_checkpoint(tmp_path / "t", shipped_config("google/gemma-4-E2B-it"))
    (directory / "tokenizer.json").write_text(json.dumps({
        "version": "1.0", "added_tokens": [{"id": 106, "content": "<turn|>", "special": True},
                                           {"id": 100, "content": "<|channel>", "special": True}],
        "model": {"vocab": {"a": 0}}}))
    ids = inspect_checkpoint(str(directory)).special_token_ids
    assert ids["<turn|>"] == 106 and ids["<|channel>"] == 100
