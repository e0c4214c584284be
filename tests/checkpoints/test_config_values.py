"""A checkpoint's config.json is checked where it is read: a field no model has is refused with the file, the
field and the value (exit 2, one line), never planned ("target -2.6 GiB", zero KV heads, ``hidden_size: true``);
JSON that is not a model's config is refused, not half-read; every config specdraft ships is accepted."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from specdraft.checkpoints import inspect_checkpoint
from specdraft.checkpoints._shape_facts import _data
from specdraft.errors import UserError
from specdraft.model_config import check_model_config
from tests.planning.conftest import shipped_config, write_checkpoint

MODELS = Path(_data("x")).parent / "models"
SHIPPED = sorted(MODELS.glob("*.json"))


def _refused(tmp_path: Path, config: dict | list | str, *needles: str) -> str:
    directory = write_checkpoint(tmp_path / "t", config) if isinstance(config, dict) else tmp_path / "t"
    if not isinstance(config, dict):
        directory.mkdir()
        (directory / "config.json").write_text(json.dumps(config))
    with pytest.raises(UserError) as refused:
        inspect_checkpoint(str(directory))
    message = refused.value.message
    assert message.startswith(f"{directory / 'config.json'}: "), message
    assert all(needle in message for needle in needles), message
    return message


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_every_shipped_config_is_accepted(path):
    check_model_config(json.loads(path.read_text()), path)


@pytest.mark.parametrize("field, value, why", [
    ("hidden_size", True, "text_config.hidden_size is true, not a whole number (a JSON boolean)"),
    ("hidden_size", -2560, "text_config.hidden_size is -2560, outside 1..1,048,576"),
    ("hidden_size", 0, "text_config.hidden_size is 0, outside"),
    ("hidden_size", 2**63, "text_config.hidden_size is 9223372036854775808, outside"),
    ("hidden_size", 5376.0, "text_config.hidden_size is 5376.0, not a whole number (a JSON number)"),
    ("hidden_size", "5376", 'text_config.hidden_size is "5376", not a whole number (a JSON string)'),
    ("num_key_value_heads", 0, "text_config.num_key_value_heads is 0, outside 1..4,096"),
    ("num_hidden_layers", -60, "text_config.num_hidden_layers is -60"),
    ("head_dim", [256], "text_config.head_dim is [...], not a whole number (a JSON list)"),
    ("vocab_size", 1e308, "text_config.vocab_size is 1e+308, not a whole number"),
    ("max_position_embeddings", -1, "text_config.max_position_embeddings is -1"),
    ("sliding_window", False, "text_config.sliding_window is false"),
    ("enable_moe_block", "yes", 'text_config.enable_moe_block is "yes", not true or false'),
    ("attention_k_eq_v", 1, "text_config.attention_k_eq_v is 1, not true or false"),
    ("layer_types", "full_attention", "text_config.layer_types is \"full_attention\", not a list of strings"),
    ("layer_types", [1] * 60, "text_config.layer_types is [...], entry 0 is a JSON number, not a string"),
    ("layer_types", ["full_attention"] * 3, "text_config.layer_types is [...], 3 entries where num_hidden_layers is 60"),
    ("num_kv_shared_layers", 61, "text_config.num_kv_shared_layers is 61, more than num_hidden_layers (60)"),
])
def test_a_field_no_model_has_is_refused_with_the_file_the_field_and_the_value(tmp_path, field, value, why):
    config = shipped_config("google/gemma-4-31B-it")
    config["text_config"][field] = value
    _refused(tmp_path, config, why, "not a model's config.json")


@pytest.mark.parametrize("field", ["hidden_size", "num_key_value_heads", "num_hidden_layers", "head_dim",
                                   "vocab_size", "num_attention_heads", "intermediate_size"])
def test_a_gemma4_config_without_a_shape_it_needs_is_refused(tmp_path, field):
    config = shipped_config("google/gemma-4-31B-it")
    del config["text_config"][field]
    _refused(tmp_path, config, f"text_config.{field} is null, but a Gemma 4 large config needs it as a whole number")


def test_a_moe_config_without_its_experts_is_refused(tmp_path):
    config = shipped_config("google/gemma-4-26B-A4B-it")
    config["text_config"]["top_k_experts"] = None
    _refused(tmp_path, config, "text_config.top_k_experts is null", "Gemma 4 moe config")
    config["text_config"].update(top_k_experts=200)
    _refused(tmp_path, config, "text_config.top_k_experts is 200, more than num_experts (128)")


@pytest.mark.parametrize("field, value, why", [
    ("architectures", "Gemma4ForConditionalGeneration", "architectures is \"Gemma4ForConditionalGeneration\", not a list"),
    ("text_config", [1], "text_config is [...], not an object (a JSON list)"),
    ("speculators_config", "x", "speculators_config is \"x\", not an object"),
    ("eagle_aux_hidden_state_layer_ids", [2, True], "entry 1: not a whole number (a JSON boolean)"),
    ("backbone_hidden_size", -5376, "backbone_hidden_size is -5376"),
])
def test_a_top_level_field_of_the_wrong_type_is_refused(tmp_path, field, value, why):
    config = shipped_config("google/gemma-4-31B-it")
    config[field] = value
    _refused(tmp_path, config, why)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity", "1e999"])
@pytest.mark.parametrize("field", ["hidden_size", "initializer_range", "rope_parameters"])
def test_a_non_finite_number_anywhere_is_refused_naming_its_field(tmp_path, constant, field):
    config = shipped_config("google/gemma-4-31B-it")
    config["text_config"][field] = "PLACEHOLDER"
    text = json.dumps(config).replace('"PLACEHOLDER"', constant)
    directory = tmp_path / "t"
    directory.mkdir()
    (directory / "config.json").write_text(text)
    with pytest.raises(UserError, match=rf"text_config\.{field} is -?(NaN|Infinity), not a finite number"):
        inspect_checkpoint(str(directory))


def test_json_nested_deeper_than_a_reader_follows_is_refused(tmp_path):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "config.json").write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(UserError, match="JSON nested deeper than a reader follows"):
        inspect_checkpoint(str(tmp_path / "t"))


@pytest.mark.parametrize("config, why", [
    ({}, "no model_type, architectures, speculators_model_type or dflash_config"),
    ({"a": 1}, "no model_type"),
    ({"model_type": ""}, "no model_type"),
    ({"model_type": 7}, "model_type is 7, not a string"),
    ({"model_type": "gemma4"}, "num_hidden_layers is null, but a Gemma 4 large config needs it"),
    ([1, 2], "a JSON list, not an object"),
    ("gemma", "a JSON str, not an object"),
])
def test_json_that_is_not_a_model_config_is_refused_not_half_read(tmp_path, config, why):
    _refused(tmp_path, config, why)


def test_a_config_json_that_is_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    directory = tmp_path / "t"
    directory.mkdir()
    os.mkfifo(directory / "config.json")
    started = time.monotonic()
    with pytest.raises(UserError, match=r"config\.json is a FIFO, not a regular file; it is not read"):
        inspect_checkpoint(str(directory))
    assert time.monotonic() - started < 5


def test_weights_that_are_a_fifo_are_refused_without_waiting_for_a_writer(tmp_path):
    directory = write_checkpoint(tmp_path / "t", shipped_config("google/gemma-4-E2B-it"))
    os.mkfifo(directory / "model.safetensors")
    with pytest.raises(UserError, match=r"model\.safetensors is a FIFO, not a regular file"):
        inspect_checkpoint(str(directory))


def test_files_beside_the_config_that_are_fifos_are_skipped(tmp_path):
    directory = write_checkpoint(tmp_path / "t", shipped_config("google/gemma-4-E2B-it"))
    for name in ("generation_config.json", "tokenizer_config.json", "tokenizer.json"):
        os.mkfifo(directory / name)
    assert inspect_checkpoint(str(directory)).vocab_size == 262144


def test_token_ids_that_are_not_whole_numbers_name_no_token(tmp_path):
    config = shipped_config("google/gemma-4-E2B-it")
    config["text_config"].update(pad_token_id=True, bos_token_id=-1)  # old configs write -1 for "none"
    directory = write_checkpoint(
        tmp_path / "t", config,
        tokenizer_config={"added_tokens_decoder": {"abc": {"content": "<bos>"}, "2": {"content": "<eos>", "id": True},
                                                   "106": {"content": "<turn|>"}}},
        generation_config={"eos_token_id": [{"a": 1}, 1, True, 1.5]})
    checkpoint = inspect_checkpoint(str(directory))
    assert checkpoint.eos_token_ids == (1,)
    assert checkpoint.special_token_ids["<turn|>"] == 106 and "<eos>" not in checkpoint.special_token_ids
    assert "pad" not in checkpoint.special_token_ids and checkpoint.special_token_ids["bos"] == -1
