from pathlib import Path

import pytest

from specdraft.errors import UserError
from specdraft.quantization import Producer, read_quantization


def test_nvidia_31b_nvfp4_is_modelopt_fp4_w4a4_with_fp8_kv(checkpoints):
    info = read_quantization(checkpoints.nvidia_31b_nvfp4())
    assert info.format == "modelopt"
    assert info.vllm_quantization == "modelopt_fp4"
    assert info.accepted_quantization == ("modelopt_fp4", "modelopt")
    assert (info.scheme, info.weight_bits, info.activation_bits, info.group_size) == ("nvfp4", 4, 4, 16)
    assert info.kv_cache == "fp8"
    assert info.producer == Producer(name="modelopt", version="0.37.0")
    assert info.exclusions[:2] == ("lm_head", "model.embed_vision*")
    assert len(info.exclusions) == 63
    assert info.sources == ("config.json",)
    assert info.multimodal_parts == ("vision",)
    assert info.is_fp4 and not info.is_fp8


def test_safetensors_headers_give_dtypes_and_quantized_modules(checkpoints):
    info = read_quantization(checkpoints.nvidia_31b_nvfp4())
    assert info.tensor_dtypes == {"BF16": 4, "F32": 4, "F8_E4M3": 2, "U8": 2}
    assert info.quantized_modules == (
        "model.language_model.layers.0.mlp.down_proj",
        "model.language_model.layers.0.mlp.gate_proj",
    )


def test_bg_26b_nvfp4a16_is_read_as_its_quant_algo_says(checkpoints):
    # The card says W4A16 but the metadata says NVFP4 with FP4 activations; vLLM follows the metadata.
    info = read_quantization(checkpoints.bg_26b_nvfp4a16())
    assert (info.scheme, info.activation_bits, info.kv_cache) == ("nvfp4", 4, None)
    assert info.producer.version == "0.43.0rc2.dev57+g87ea8babe"
    assert "model.language_model.layers.29.router*" in info.exclusions


def test_coolthor_e4b_is_compressed_tensors_weight_only_fp4(checkpoints):
    info = read_quantization(checkpoints.coolthor_e4b_nvfp4a16())
    assert info.format == "compressed-tensors"
    assert info.vllm_quantization == "compressed-tensors"
    assert info.accepted_quantization == ("compressed-tensors",)
    assert (info.scheme, info.weight_bits, info.activation_bits, info.group_size) == ("nvfp4-a16", 4, None, 16)
    assert info.checkpoint_format == "nvfp4-pack-quantized"
    assert info.producer == Producer(name="compressed-tensors", version="0.12.2")
    assert info.quantized_modules == ("model.language_model.layers.0.mlp.down_proj",)
    assert info.multimodal_parts == ("vision", "audio")


def test_text_only_turbo_has_no_multimodal_parts(checkpoints):
    info = read_quantization(checkpoints.lilarest_31b_text_only())
    assert info.multimodal_parts == ()
    assert "model.layers.0.self_attn.q_proj" in info.quantized_modules


def test_hf_quant_config_alone_is_read_when_config_json_has_no_block(checkpoints):
    info = read_quantization(checkpoints.legacy_file_only("NVFP4"))
    assert info.sources == ("hf_quant_config.json",)
    assert (info.vllm_quantization, info.scheme, info.kv_cache, info.exclusions) == ("modelopt_fp4", "nvfp4", "fp8", ("lm_head",))
    assert info.producer.version == "0.29.0"


def test_weight_only_nvfp4_algo_is_nvfp4_a16(checkpoints):
    info = read_quantization(checkpoints.legacy_file_only("W4A16_NVFP4"))
    assert (info.scheme, info.activation_bits, info.vllm_quantization) == ("nvfp4-a16", None, "modelopt_fp4")


@pytest.mark.parametrize(("algo", "method", "scheme"), [
    ("FP8", "modelopt", "fp8"),
    ("FP8_PB_WO", "modelopt", "fp8-block"),
    ("MXFP8", "modelopt_mxfp8", "mxfp8"),
    ("MIXED_PRECISION", "modelopt_mixed", "mixed"),
])
def test_modelopt_algos_map_to_vllm_methods(checkpoints, algo, method, scheme):
    info = read_quantization(checkpoints.legacy_file_only(algo))
    assert (info.vllm_quantization, info.scheme) == (method, scheme)


def test_unquantized_checkpoint_reads_as_none(checkpoints):
    assert read_quantization(checkpoints.unquantized()) is None


def test_missing_directory_is_a_user_error(tmp_path: Path):
    with pytest.raises(UserError, match="is not a directory"):
        read_quantization(tmp_path / "nope")


def test_other_quant_methods_are_reported_with_their_own_method(tmp_path: Path):
    (tmp_path / "config.json").write_text('{"quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128}}')
    info = read_quantization(tmp_path)
    assert (info.format, info.vllm_quantization, info.scheme, info.group_size) == ("other", "awq", "w4a16", 128)


def test_a_quantization_block_without_quant_method_is_a_user_error(tmp_path: Path):
    (tmp_path / "config.json").write_text('{"quantization_config": {"bits": 4}}')
    with pytest.raises(UserError, match="names no quant_method"):
        read_quantization(tmp_path)


def test_unreadable_weights_leave_the_metadata_readable(checkpoints):
    path = checkpoints.lilarest_31b_text_only()
    (path / "model.safetensors").write_text("version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 1\n")
    info = read_quantization(path)
    assert (info.vllm_quantization, info.tensor_dtypes, info.quantized_modules) == ("modelopt_fp4", {}, ())
