import pytest

from specdraft.quantization import check_quantization, is_excluded, nvfp4_kernel_path, parse_compute_capability, read_quantization


def codes(findings):
    return [(f.check, f.level) for f in findings]


def test_compressed_tensors_draft_declared_as_modelopt_is_an_error(checkpoints):
    info = read_quantization(checkpoints.coolthor_e4b_nvfp4a16())
    findings = check_quantization(info, declared="modelopt")
    assert codes(findings) == [("quantization-mismatch", "error")]
    assert "(compressed-tensors) does not match" in findings[0].message
    assert findings[0].hint == "set quantization to 'compressed-tensors'"


def test_modelopt_declared_for_modelopt_nvfp4_is_accepted_and_resolved(checkpoints):
    info = read_quantization(checkpoints.lilarest_31b_text_only())
    assert codes(check_quantization(info, declared="modelopt")) == [("quantization-resolved", "info")]
    assert check_quantization(info, declared="modelopt_fp4") == []


def test_declared_quantization_on_an_unquantized_checkpoint_is_an_error(checkpoints):
    assert codes(check_quantization(read_quantization(checkpoints.unquantized()), declared="modelopt")) == [
        ("quantization-mismatch", "error")
    ]
    assert check_quantization(None) == []


def test_w4a4_nvfp4_on_hopper_runs_weight_only_through_marlin(checkpoints):
    info = read_quantization(checkpoints.nvidia_31b_nvfp4())
    findings = check_quantization(info, compute_capability="9.0")
    assert codes(findings) == [("fp4-not-native", "warning")]
    assert "--scheme fp8" in findings[0].hint


@pytest.mark.parametrize("capability", ["10.0", "sm_120", "12.1", 103])
def test_nvfp4_on_blackwell_has_no_gpu_finding(checkpoints, capability):
    info = read_quantization(checkpoints.nvidia_31b_nvfp4())
    assert check_quantization(info, compute_capability=capability) == []


def test_nvfp4_below_turing_is_unsupported(checkpoints):
    info = read_quantization(checkpoints.lilarest_31b_text_only())
    assert codes(check_quantization(info, compute_capability=(7, 0))) == [("fp4-unsupported", "error")]


def test_weight_only_nvfp4_on_hopper_is_not_flagged(checkpoints):
    info = read_quantization(checkpoints.legacy_file_only("W4A16_NVFP4"))
    assert not [f for f in check_quantization(info, compute_capability=90) if f.check.startswith("fp4")]


def test_modelopt_fp8_on_ampere_is_unsupported(checkpoints):
    info = read_quantization(checkpoints.legacy_file_only("FP8"))
    assert codes(check_quantization(info, compute_capability="8.0")) == [("fp8-unsupported", "error")]
    assert check_quantization(info, compute_capability="9.0") == []


def test_weight_only_algo_in_a_lone_hf_quant_config_cannot_be_resolved_by_vllm(checkpoints):
    info = read_quantization(checkpoints.legacy_file_only("W4A16_NVFP4"))
    assert ("legacy-metadata-unresolvable", "error") in codes(check_quantization(info))


def test_missing_embed_vision_exclusion_breaks_a_multimodal_checkpoint(checkpoints):
    info = read_quantization(checkpoints.nvidia_31b_nvfp4(ignore=["lm_head", "model.vision_tower*"]))
    findings = check_quantization(info)
    assert codes(findings) == [("embedder-not-excluded", "error")]
    assert "model.embed_vision.embedding_projection" in findings[0].message


def test_real_repo_exclusions_raise_no_findings(checkpoints):
    for path in (checkpoints.nvidia_31b_nvfp4(), checkpoints.bg_26b_nvfp4a16(), checkpoints.coolthor_e4b_nvfp4a16()):
        assert check_quantization(read_quantization(path)) == [], path.name


def test_quantized_vision_tower_is_an_error(checkpoints):
    info = read_quantization(checkpoints.nvidia_31b_nvfp4(quantized_tower=True))
    assert codes(check_quantization(info)) == [("tower-quantized", "error")]


def test_exclusion_patterns_match_like_vllm():
    assert is_excluded("model.embed_vision.embedding_projection", ["model.embed_vision*"])
    assert is_excluded("model.language_model.layers.3.self_attn.q_proj", ["model.language_model.layers.3.self_attn*"])
    assert is_excluded("model.embed_audio.embedding_projection", ["re:.*embed_audio.*"])
    assert is_excluded("lm_head", ["lm_head"])
    assert not is_excluded("model.language_model.layers.13.mlp.up_proj", ["model.language_model.layers.1.*"])


def test_compute_capability_forms_and_kernel_paths():
    assert [parse_compute_capability(v) for v in ("9.0", "sm_90", "sm90", 90, (12, 1), "12.1")] == [90, 90, 90, 90, 121, 121]
    assert [nvfp4_kernel_path(c) for c in (70, 75, 89, 90, 100, 120, 121)] == [
        "unsupported", "marlin-weight-only", "marlin-weight-only", "marlin-weight-only", "native", "native", "native"
    ]
