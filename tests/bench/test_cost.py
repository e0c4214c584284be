"""The cost ratio c: bytes read per decoded token of Gemma 4 shapes, and measured step times."""

from pathlib import Path

import pytest

from specdraft.bench import (
    bytes_per_param,
    cost_ratio_from_step_times,
    decode_footprint,
    estimate_cost_ratio,
    load_text_config,
)
from specdraft.errors import UserError

DATA = Path(__file__).parent / "data"


def footprint(name: str, **kw):
    return decode_footprint(load_text_config(DATA / name), name=name, **kw)


# Language-model parameter counts that transformers 5.17 instantiates (shared/models/README.md, exact).
@pytest.mark.parametrize("config,params", [
    ("google__gemma-4-31B-it.json", 30_697_345_280),
    ("google__gemma-4-E2B-it.json", 4_628_569_344),
    ("google__gemma-4-26B-A4B-it.json", 25_233_141_760),
])
def test_parameter_count_equals_what_transformers_instantiates(config, params):
    assert footprint(config).total_params == params


def test_e2b_reads_neither_its_per_layer_embedding_table_nor_shared_kv_projections():
    fp = footprint("google__gemma-4-E2B-it.json")
    assert fp.total_params - fp.active_params == 262144 * 35 * 256  # the PLE table is looked up, one row a token


def test_moe_target_reads_only_the_picked_experts():
    fp = footprint("google__gemma-4-26B-A4B-it.json")
    assert 3.7e9 < fp.active_params < 3.9e9  # model cards: ~3.8B active


def test_kv_read_grows_with_context_only_up_to_the_window_on_sliding_layers():
    short, long = (footprint("google__gemma-4-31B-it.json", context_tokens=n).kv_bytes for n in (1024, 4096))
    # 31B: 10 full layers x 8192 B/token (full context) + 50 sliding x 16384 B/token (window 1024)
    assert short == 81920 * 1024 + 819200 * 1024
    assert long == 81920 * 4096 + 819200 * 1024


def test_e2b_draft_for_a_31b_target_costs_about_seven_percent_by_bytes():
    c = estimate_cost_ratio(footprint("google__gemma-4-E2B-it.json"), footprint("google__gemma-4-31B-it.json"))
    assert c == pytest.approx(0.0734, abs=0.001)


def test_nvfp4_weights_read_about_a_quarter_of_bf16():
    bf16 = footprint("google__gemma-4-31B-it.json", bytes_per_param=bytes_per_param("bf16"))
    fp4 = footprint("google__gemma-4-31B-it.json", bytes_per_param=bytes_per_param("nvfp4"))
    assert fp4.weight_bytes / bf16.weight_bytes == pytest.approx(4.5 / 16)


def test_unknown_dtype_names_the_known_ones():
    with pytest.raises(UserError, match="unknown weight dtype") as err:
        bytes_per_param("int3")
    assert "nvfp4" in err.value.hint
    assert bytes_per_param("1.5") == 1.5


def test_an_mtp_assistant_is_refused_because_it_has_no_standalone_decode_cost():
    with pytest.raises(UserError, match="MTP assistant"):
        footprint("google__gemma-4-E2B-it-assistant.json")


def test_a_missing_config_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        load_text_config(tmp_path / "nope.json")


def test_measured_cost_ratio_is_draft_step_over_target_step():
    assert cost_ratio_from_step_times(3.2, 17.8) == pytest.approx(0.18, abs=0.001)
    with pytest.raises(UserError):
        cost_ratio_from_step_times(0.0, 17.8)
