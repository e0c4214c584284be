"""The cost ratio c: bytes read per decoded token of Gemma 4 shapes, and measured step times."""

import json

import pytest

from specdraft.speed import (
    bytes_per_param,
    cost_ratio_from_step_times,
    decode_footprint,
    estimate_cost_ratio,
    footprint_of,
    load_text_config,
)
from specdraft.planning import inspect_checkpoint
from specdraft.errors import UserError


def footprint(repo_id: str, **kw):
    """The footprint of a model from specdraft's shipped shape facts, priced as told (BF16 unless kw says)."""
    return footprint_of(repo_id, dtype=kw.pop("dtype", "bf16"), **kw)


# Language-model parameter counts that transformers 5.17 instantiates (shared/models/README.md, exact).
@pytest.mark.parametrize("config,params", [
    ("google/gemma-4-31B-it", 30_697_345_280),
    ("google/gemma-4-E2B-it", 4_628_569_344),
    ("google/gemma-4-26B-A4B-it", 25_233_141_760),
])
def test_parameter_count_equals_what_transformers_instantiates(config, params):
    assert footprint(config).total_params == params


def test_e2b_reads_neither_its_per_layer_embedding_table_nor_shared_kv_projections():
    fp = footprint("google/gemma-4-E2B-it")
    assert fp.total_params - fp.active_params == 262144 * 35 * 256  # the PLE table is looked up, one row a token


def test_moe_target_reads_only_the_picked_experts():
    fp = footprint("google/gemma-4-26B-A4B-it")
    assert 3.7e9 < fp.active_params < 3.9e9  # model cards: ~3.8B active


def test_the_cost_ratio_beside_a_moe_target_says_it_prices_active_parameters():
    target = footprint("google/gemma-4-26B-A4B-it")
    assert "3.82B of 25.23B parameters read per token" in target.basis and "8 of 128 experts" in target.basis
    assert "mixture of experts" not in footprint("google/gemma-4-31B-it").basis
    # priced by its active parameters the 26B reads ~8 GB a token, so an E2B draft costs ~0.58 of a step
    # (against ~0.07 beside the 31B); priced by all 25B it would have looked like ~0.09
    assert estimate_cost_ratio(footprint("google/gemma-4-E2B-it"), target) == pytest.approx(0.58, abs=0.01)


def test_kv_read_grows_with_context_only_up_to_the_window_on_sliding_layers():
    short, long = (footprint("google/gemma-4-31B-it", context_tokens=n).kv_bytes for n in (1024, 4096))
    # 31B: 10 full layers x 8192 B/token (full context) + 50 sliding x 16384 B/token (window 1024)
    assert short == 81920 * 1024 + 819200 * 1024
    assert long == 81920 * 4096 + 819200 * 1024


def test_e2b_draft_for_a_31b_target_costs_about_seven_percent_by_bytes():
    c = estimate_cost_ratio(footprint("google/gemma-4-E2B-it"), footprint("google/gemma-4-31B-it"))
    assert c == pytest.approx(0.0734, abs=0.001)


def test_nvfp4_weights_read_about_a_quarter_of_bf16():
    bf16 = footprint("google/gemma-4-31B-it", dtype="bf16")
    fp4 = footprint("google/gemma-4-31B-it", dtype="nvfp4")
    assert fp4.weight_bytes / bf16.weight_bytes == pytest.approx(4.5 / 16)


def test_an_nvfp4_checkpoint_is_priced_nvfp4_with_a_bf16_embedding_automatically():
    fp4 = footprint_of("nvidia/Gemma-4-31B-IT-NVFP4")
    embedding = 262144 * 5376
    assert fp4.weight_bytes == pytest.approx(embedding * 2 + (fp4.active_params - embedding) * 4.5 / 8)
    assert fp4.basis.endswith("weights nvfp4, embedding bf16")


def test_a_config_json_file_can_stand_for_a_checkpoint(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"text_config": inspect_checkpoint("google/gemma-4-E2B-it").text_config}))
    assert footprint_of(str(path)).total_params == 4_628_569_344


def test_an_unknown_repo_id_says_what_would_work():
    with pytest.raises(UserError, match="cannot find the shapes of nobody/nothing") as err:
        footprint_of("nobody/nothing")
    assert "google/gemma-4-31B-it" in err.value.hint


def test_unknown_dtype_names_the_known_ones():
    with pytest.raises(UserError, match="unknown weight dtype") as err:
        bytes_per_param("int3")
    assert "nvfp4" in err.value.hint
    assert bytes_per_param("1.5") == 1.5


def test_an_mtp_assistant_is_refused_because_it_has_no_standalone_decode_cost():
    with pytest.raises(UserError, match="MTP assistant"):
        footprint("google/gemma-4-E2B-it-assistant")


def test_a_missing_config_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        load_text_config(tmp_path / "nope.json")


def test_explicit_bytes_per_parameter_price_every_weight_alike():
    one_byte = decode_footprint(inspect_checkpoint("google/gemma-4-E2B-it").text_config, bytes_per_param=1.0)
    assert one_byte.weight_bytes == one_byte.active_params


def test_measured_cost_ratio_is_draft_step_over_target_step():
    assert cost_ratio_from_step_times(3.2, 17.8) == pytest.approx(0.18, abs=0.001)
    with pytest.raises(UserError):
        cost_ratio_from_step_times(0.0, 17.8)
