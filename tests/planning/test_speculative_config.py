import json

import pytest
from pydantic import ValidationError

from specdraft.planning import ServeFlag, ServePlan, SpeculativeConfig, describe_validation_error

NVFP4_DRAFT = "mikeytag/gemma-4-E2B-it-NVFP4"


def test_spark_config_renders_the_validated_speculative_config_json():
    config = SpeculativeConfig(model=NVFP4_DRAFT, num_speculative_tokens=4, draft_tensor_parallel_size=1,
                               quantization="modelopt")
    assert json.loads(config.to_vllm()) == {"model": NVFP4_DRAFT, "num_speculative_tokens": 4,
                                            "draft_tensor_parallel_size": 1, "quantization": "modelopt"}
    assert list(json.loads(config.to_vllm())) == ["model", "num_speculative_tokens", "draft_tensor_parallel_size",
                                                  "quantization"]


def test_unset_fields_are_left_to_vllm():
    assert SpeculativeConfig(model=NVFP4_DRAFT).as_dict() == {"model": NVFP4_DRAFT, "num_speculative_tokens": 4}


def test_zero_speculative_tokens_names_the_field_and_the_value():
    with pytest.raises(ValidationError) as caught:
        SpeculativeConfig(model=NVFP4_DRAFT, num_speculative_tokens=0)
    assert describe_validation_error(caught.value) == "num_speculative_tokens: Input should be greater than 0 (got 0)"


def test_a_misspelled_field_is_refused_by_name():
    with pytest.raises(ValidationError) as caught:
        SpeculativeConfig(model=NVFP4_DRAFT, num_spec_tokens=4)
    assert describe_validation_error(caught.value).startswith("num_spec_tokens: Extra inputs are not permitted")


def test_draft_model_method_needs_a_model():
    with pytest.raises(ValidationError, match="model: method='draft_model' needs a draft checkpoint"):
        SpeculativeConfig(method="draft_model")


def test_ngram_takes_no_model():
    with pytest.raises(ValidationError, match="model: method='ngram' uses no draft checkpoint, got model="):
        SpeculativeConfig(method="ngram", model=NVFP4_DRAFT)


def test_synthetic_rates_need_the_synthetic_rejection_method():
    with pytest.raises(ValidationError, match="synthetic_acceptance_rates: only valid with "
                                              "rejection_sample_method='synthetic', got rejection_sample_method=None"):
        SpeculativeConfig(model=NVFP4_DRAFT, synthetic_acceptance_rates=[0.9, 0.8, 0.7, 0.6])


def test_synthetic_rates_need_one_entry_per_speculative_token():
    with pytest.raises(ValidationError, match=r"needs 4 entries \(num_speculative_tokens\), got \[0.9, 0.8\]"):
        SpeculativeConfig(model=NVFP4_DRAFT, rejection_sample_method="synthetic", synthetic_acceptance_rates=[0.9, 0.8])


def test_synthetic_rates_must_not_increase():
    with pytest.raises(ValidationError, match="must be non-increasing"):
        SpeculativeConfig(model=NVFP4_DRAFT, rejection_sample_method="synthetic",
                          synthetic_acceptance_rates=[0.5, 0.6, 0.4, 0.3])


def test_synthetic_length_must_lie_between_one_and_k_plus_one():
    with pytest.raises(ValidationError, match=r"synthetic_acceptance_length: must be in \[1, 5\], got 6.0"):
        SpeculativeConfig(model=NVFP4_DRAFT, rejection_sample_method="synthetic", synthetic_acceptance_length=6.0)


def test_forced_acceptance_for_benchmarking_is_rendered_with_vllm_field_names():
    config = SpeculativeConfig(model=NVFP4_DRAFT, rejection_sample_method="synthetic", synthetic_acceptance_length=3.2)
    assert json.loads(config.to_vllm()) == {"model": NVFP4_DRAFT, "num_speculative_tokens": 4,
                                            "rejection_sample_method": "synthetic", "synthetic_acceptance_length": 3.2}


def test_serve_plan_argv_starts_with_vllm_serve_and_the_target():
    plan = ServePlan(model="t", flags=[ServeFlag(name="--max-model-len", value="8", reason="r"),
                                       ServeFlag(name="--enable-prefix-caching", reason="r")], extra_args=["--port", "1"])
    assert plan.argv() == ["vllm", "serve", "t", "--max-model-len", "8", "--enable-prefix-caching", "--port", "1"]


def test_a_flag_given_twice_is_refused():
    with pytest.raises(ValidationError, match="flags: --max-model-len appears twice"):
        ServePlan(model="t", flags=[ServeFlag(name="--max-model-len", value="8", reason="r")] * 2)


def test_a_flag_without_dashes_is_refused_with_its_value():
    with pytest.raises(ValidationError, match="name: a vLLM option looks like '--max-model-len', got 'max-model-len'"):
        ServeFlag(name="max-model-len", value="8", reason="r")
