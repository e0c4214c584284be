"""The tiny Gemma 4 pair and dummy checkpoints: shapes that reproduce the real pair's behaviour."""

from __future__ import annotations

import json

import pytest

from specdraft.errors import UserError
from specdraft.testbed import build_tiny_pair, write_dummy_checkpoint
from specdraft.families.gemma4 import SPECIAL_TOKENS


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    return build_tiny_pair(tmp_path_factory.mktemp("tiny"))


def _config(path):
    return json.loads((path / "config.json").read_text())


def test_second_build_reuses_the_pair_without_rewriting_it(pair):
    weights = pair.target / "model.safetensors"
    before = weights.stat().st_mtime_ns
    again = build_tiny_pair(pair.target.parent.parent)
    assert again == pair
    assert weights.stat().st_mtime_ns == before


def test_another_seed_is_another_pair(pair):
    other = build_tiny_pair(pair.target.parent.parent, seed=1)
    assert other.target != pair.target
    assert (other.target / "model.safetensors").read_bytes() != (pair.target / "model.safetensors").read_bytes()


def test_target_is_shaped_like_the_31b(pair):
    config = _config(pair.target)
    assert config["architectures"] == ["Gemma4ForCausalLM"]
    assert config["num_kv_shared_layers"] == 0
    assert config["sliding_window"] == 1024
    assert config["layer_types"] == ["sliding_attention"] * 5 + ["full_attention"]
    assert config["global_head_dim"] > config["head_dim"]
    assert config["attention_k_eq_v"] is True


def test_every_shared_draft_layer_has_an_earlier_unshared_layer_of_its_type(pair):
    config = _config(pair.draft)
    first_shared = config["num_hidden_layers"] - config["num_kv_shared_layers"]
    assert config["num_kv_shared_layers"] > 0 and config["hidden_size_per_layer_input"] > 0
    assert config["sliding_window"] == 512
    unshared_types = set(config["layer_types"][:first_shared])
    assert set(config["layer_types"][first_shared:]) <= unshared_types == {"sliding_attention", "full_attention"}


def test_draft_ships_kv_weights_of_its_shared_layers_like_real_e2b_checkpoints(pair):
    from safetensors import safe_open

    config = _config(pair.draft)
    last = config["num_hidden_layers"] - 1
    with safe_open(str(pair.draft / "model.safetensors"), "pt") as weights:
        names = set(weights.keys())
        assert weights.get_tensor(f"model.layers.{last}.self_attn.k_proj.weight").shape[0] == config["global_head_dim"]
    assert {f"model.layers.{last}.self_attn.{n}.weight" for n in ("k_proj", "v_proj", "k_norm")} <= names


def test_both_models_share_one_tokenizer(pair):
    assert (pair.target / "tokenizer.json").read_bytes() == (pair.draft / "tokenizer.json").read_bytes()


def test_chat_markup_tokenizes_to_gemma4_ids_and_round_trips(pair):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(pair.target)
    text = '<bos><|turn>user\nWhat is the weather?<turn|>\n<|turn>model\n<|channel>thought\n<channel|>call:f{city:<|"|>Paris<|"|>}'
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert ids[:2] == [2, 105] and 107 in ids and ids.count(52) == 2
    assert tokenizer.decode(ids) == text
    for token, token_id in SPECIAL_TOKENS.items():
        assert tokenizer.convert_tokens_to_ids(token) == token_id
    assert tokenizer.encode("hello")[0] == SPECIAL_TOKENS["<bos>"]
    assert len(tokenizer.encode("<|turn>model\n", add_special_tokens=False)) == 3


def test_dummy_checkpoint_keeps_the_real_config_and_sizes_the_tokenizer_to_its_vocab(tmp_path):
    real = {"architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4",
            "text_config": {"vocab_size": 262144, "max_position_embeddings": 262144, "hidden_size": 5376}}
    source = tmp_path / "google__gemma-4-31B-it.json"
    source.write_text(json.dumps(real))
    out = write_dummy_checkpoint("google/gemma-4-31B-it", tmp_path / "dummy", models_dir=tmp_path)
    assert _config(out) == real
    vocab = json.loads((out / "tokenizer.json").read_text())["model"]["vocab"]
    assert len(vocab) == 262144 and vocab["<|channel>"] == 100


def test_unknown_model_id_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="no config for 'google/gemma-9-XXL'"):
        write_dummy_checkpoint("google/gemma-9-XXL", tmp_path / "out", models_dir=tmp_path)
    assert not (tmp_path / "out").exists()


def test_draft_proposes_repeating_the_last_token(pair):
    import torch
    from transformers import Gemma4ForCausalLM

    draft = Gemma4ForCausalLM.from_pretrained(pair.draft, dtype=torch.float32).eval()
    prompt = torch.tensor([[2, *range(300, 320)]])
    with torch.no_grad():
        assert draft(prompt).logits[0].argmax(-1).tolist() == prompt[0].tolist()


def test_dummy_checkpoint_of_a_packaged_model_id_can_be_written_text_only(tmp_path):
    from transformers import AutoConfig

    out = write_dummy_checkpoint("google/gemma-4-31B-it", tmp_path / "turbo-like", text_only=True)
    config = AutoConfig.from_pretrained(out)
    assert config.architectures == ["Gemma4ForCausalLM"]
    assert (config.num_hidden_layers, config.hidden_size, config.sliding_window) == (60, 5376, 1024)
    assert config.attention_k_eq_v is True
