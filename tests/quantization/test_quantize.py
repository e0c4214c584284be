"""The real ModelOpt on the CPU, on tiny random Gemma 4 models shaped like E2B (text-only and multimodal)."""

import json
from pathlib import Path

import pytest
import torch
from safetensors import safe_open

from specdraft.cli import main
from specdraft.errors import RefusedError, UserError
from specdraft.quantization import check_quantization, read_quantization
from specdraft.quantization.quantize import plan_quantization, quantize_draft

from .tiny_gemma4 import build_tiny_multimodal, save_tiny, tiny_text_config

pytest.importorskip("modelopt.torch.quantization", reason="the quantize extra (nvidia-modelopt) is not installed")

@pytest.fixture(scope="module")
def tiny_text_draft(tmp_path_factory) -> Path:
    from transformers import Gemma4ForCausalLM

    torch.manual_seed(0)
    model = Gemma4ForCausalLM(tiny_text_config()).to(torch.bfloat16)
    return save_tiny(model, tmp_path_factory.mktemp("tiny-e2b-text"), "Gemma4ForCausalLM")


def save_tiny_tokenizer(directory: Path) -> None:
    """A word-level tokenizer trained on the built-in calibration text, with a Gemma-style chat template."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from specdraft.quantization.calibration import BUILTIN_SAMPLES

    tokenizer = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.WordLevelTrainer(vocab_size=500, special_tokens=["<pad>", "<eos>", "<bos>", "<unk>"])
    tokenizer.train_from_iterator([text for sample in BUILTIN_SAMPLES for text in sample], trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>",
                                   unk_token="<unk>")
    fast.chat_template = "{% for m in messages %}<start_of_turn>{{ m['role'] }}\n{{ m['content'] }}<end_of_turn>\n{% endfor %}"
    fast.save_pretrained(directory)


@pytest.fixture(scope="module")
def tiny_text_draft_with_tokenizer(tiny_text_draft, tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("tiny-e2b-text-tok")
    for path in tiny_text_draft.iterdir():
        (directory / path.name).write_bytes(path.read_bytes())
    save_tiny_tokenizer(directory)
    return directory


@pytest.fixture(scope="module")
def tiny_multimodal_draft(tmp_path_factory) -> Path:
    return build_tiny_multimodal(tmp_path_factory.mktemp("tiny-e2b-mm"))


@pytest.fixture(scope="module")
def nvfp4_text_export(tiny_text_draft, tmp_path_factory):
    plan = plan_quantization(tiny_text_draft, "nvfp4")
    return quantize_draft(plan, tmp_path_factory.mktemp("out") / "nvfp4", calib="random-tokens", samples=2, progress=lambda _: None)


def tensor_dtypes(directory: Path) -> dict[str, str]:
    dtypes = {}
    for path in sorted(directory.glob("*.safetensors")):
        with safe_open(str(path), "pt") as handle:
            for name in handle.keys():
                dtypes[name] = handle.get_slice(name).get_dtype()
    return dtypes


def test_nvfp4_export_packs_weights_in_u8_with_fp8_block_scales(nvfp4_text_export):
    dtypes = tensor_dtypes(nvfp4_text_export.out_dir)
    layer = "model.layers.0.mlp.down_proj"
    assert dtypes[f"{layer}.weight"] == "U8"
    assert dtypes[f"{layer}.weight_scale"] == "F8_E4M3"
    assert dtypes[f"{layer}.weight_scale_2"] == "F32"
    assert dtypes[f"{layer}.input_scale"] == "F32"
    with safe_open(str(nvfp4_text_export.out_dir / "model.safetensors"), "pt") as handle:
        # 128 inputs packed two per byte, one FP8 scale per 16 inputs
        assert handle.get_slice(f"{layer}.weight").get_shape() == [64, 64]
        assert handle.get_slice(f"{layer}.weight_scale").get_shape() == [64, 8]
        # KV-shared layers have the double-wide MLP (use_double_wide_mlp): 256 inputs
        assert handle.get_slice("model.layers.5.mlp.down_proj.weight").get_shape() == [64, 128]
        assert handle.get_slice("model.layers.5.mlp.down_proj.weight_scale").get_shape() == [64, 16]
    assert dtypes["model.embed_tokens.weight"] == "BF16"
    assert dtypes["model.embed_tokens_per_layer.weight"] == "BF16"  # per-layer tables are lookups
    assert dtypes["model.per_layer_model_projection.weight"] == "U8"  # a Linear that vLLM quantizes


def test_nvfp4_export_reads_back_as_modelopt_fp4(nvfp4_text_export):
    info = read_quantization(nvfp4_text_export.out_dir)
    assert info == nvfp4_text_export.info
    assert (info.format, info.vllm_quantization, info.scheme, info.group_size) == ("modelopt", "modelopt_fp4", "nvfp4", 16)
    assert info.quant_algo == "NVFP4"
    assert info.producer.name == "modelopt" and info.producer.version == nvfp4_text_export.modelopt_version
    assert info.sources == ("config.json", "hf_quant_config.json")
    assert info.kv_cache is None
    assert info.kv_shared_layers == (5, 6, 7, 8, 9)
    assert set(info.tensor_dtypes) == {"BF16", "F32", "F8_E4M3", "U8"}
    assert check_quantization(info, declared="modelopt_fp4") == []


def test_kv_shared_layers_keep_attention_in_bf16(nvfp4_text_export):
    info = nvfp4_text_export.info
    dtypes = tensor_dtypes(nvfp4_text_export.out_dir)
    for layer in info.kv_shared_layers:
        assert f"model.layers.{layer}.self_attn*" in info.exclusions
        assert dtypes[f"model.layers.{layer}.self_attn.q_proj.weight"] == "BF16"
        assert dtypes[f"model.layers.{layer}.mlp.down_proj.weight"] == "U8"
    assert dtypes["model.layers.4.self_attn.q_proj.weight"] == "U8"
    assert dtypes["model.layers.4.self_attn.k_proj.weight"] == "U8"


def test_export_config_json_and_hf_quant_config_agree(nvfp4_text_export):
    out = nvfp4_text_export.out_dir
    block = json.loads((out / "config.json").read_text())["quantization_config"]
    legacy = json.loads((out / "hf_quant_config.json").read_text())["quantization"]
    assert block["quant_method"] == "modelopt"
    assert block["quant_algo"] == legacy["quant_algo"] == "NVFP4"
    assert block["ignore"] == legacy["exclude_modules"]
    assert block["config_groups"]["group_0"]["weights"] == {"dynamic": False, "num_bits": 4, "type": "float", "group_size": 16}


@pytest.mark.parametrize(("scheme", "algo", "weight_dtype", "activation_bits"), [
    ("nvfp4-a16", "W4A16_NVFP4", "U8", None),
    ("fp8", "FP8", "F8_E4M3", 8),
])
def test_other_schemes_export_what_vllm_expects(tiny_text_draft, tmp_path, scheme, algo, weight_dtype, activation_bits):
    plan = plan_quantization(tiny_text_draft, scheme)
    result = quantize_draft(plan, tmp_path / scheme, calib="random-tokens", samples=2, progress=lambda _: None)
    info = result.info
    assert (info.quant_algo, info.scheme, info.activation_bits) == (algo, scheme, activation_bits)
    assert tensor_dtypes(result.out_dir)["model.layers.0.mlp.up_proj.weight"] == weight_dtype
    assert check_quantization(info) == []


def test_multimodal_draft_keeps_towers_and_projections_bf16(tiny_multimodal_draft, tmp_path):
    result = quantize_draft(plan_quantization(tiny_multimodal_draft, "nvfp4"), tmp_path / "mm", calib="random-tokens",
                            samples=2, progress=lambda _: None)
    info = result.info
    dtypes = tensor_dtypes(result.out_dir)
    towers = [name for name in dtypes if name.startswith(("model.vision_tower", "model.audio_tower", "model.embed_"))]
    assert towers
    assert {dtypes[name] for name in towers if name.endswith(".weight")} <= {"BF16", "F32"}
    assert not [m for m in info.quantized_modules if "tower" in m or "embed_" in m]
    assert dtypes["model.language_model.layers.0.mlp.gate_proj.weight"] == "U8"
    assert info.multimodal_parts == ("vision", "audio")
    assert check_quantization(info) == []


def test_plan_refuses_a_model_that_does_not_fit_in_memory(tiny_text_draft):
    with pytest.raises(RefusedError, match=r"needs about .* GiB of cpu memory; 0\.0 GiB is available"):
        plan_quantization(tiny_text_draft, "nvfp4", available_bytes=1024)


def test_plan_refuses_a_model_that_is_not_gemma4(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}))
    with pytest.raises(UserError, match="is a LlamaForCausalLM, not Gemma 4"):
        plan_quantization(tmp_path, "nvfp4")


def test_plan_refuses_missing_weights(tiny_text_draft, tmp_path):
    (tmp_path / "config.json").write_text((tiny_text_draft / "config.json").read_text())
    with pytest.raises(UserError, match="has no \\*.safetensors weights"):
        plan_quantization(tmp_path, "nvfp4")
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"a": "model-00002-of-00002.safetensors"}}))
    (tmp_path / "model-00001-of-00002.safetensors").write_bytes((tiny_text_draft / "model.safetensors").read_bytes())
    with pytest.raises(UserError, match="missing 1 weight shard"):
        plan_quantization(tmp_path, "nvfp4")


def test_plan_refuses_an_already_quantized_checkpoint(nvfp4_text_export):
    with pytest.raises(UserError, match="is already quantized"):
        plan_quantization(nvfp4_text_export.out_dir, "fp8")


def test_cli_quantizes_and_prints_the_vllm_quantization(tiny_text_draft, tmp_path, capsys):
    out = tmp_path / "cli-draft"
    code = main(["quantize", "--model", str(tiny_text_draft), "--out", str(out), "--calib", "random-tokens",
                 "--calib-samples", "2", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert report["quantization"]["vllm_quantization"] == "modelopt_fp4"
    assert report["calibration"] == {"sequences": 2, "tokens": 2 * 64}
    assert read_quantization(out).scheme == "nvfp4"


def test_cli_refuses_a_non_empty_out_dir_without_touching_it(tiny_text_draft, tmp_path, capsys):
    (tmp_path / "keep.txt").write_text("mine")
    code = main(["quantize", "--model", str(tiny_text_draft), "--out", str(tmp_path), "--calib", "random-tokens"])
    assert code == 2
    assert "exists and is not an empty directory" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def test_builtin_calibration_uses_the_chat_template_and_ships_the_tokenizer(tiny_text_draft_with_tokenizer, tmp_path):
    from specdraft.quantization.calibration import BUILTIN_SAMPLES

    plan = plan_quantization(tiny_text_draft_with_tokenizer, "nvfp4")
    lines = []
    result = quantize_draft(plan, tmp_path / "draft", calib="builtin", samples=3, progress=lines.append)
    assert result.calibration_sequences == 3
    assert len(BUILTIN_SAMPLES) >= 24
    assert lines[0].startswith(f"loading {tiny_text_draft_with_tokenizer}")
    assert {"tokenizer.json", "tokenizer_config.json"} <= {p.name for p in result.out_dir.iterdir()}
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(result.out_dir)
    assert tokenizer.apply_chat_template([{"role": "user", "content": "Is 391 a prime number?"}], tokenize=False).startswith(
        "<start_of_turn>user"
    )


def test_builtin_calibration_without_a_tokenizer_is_a_user_error(tiny_text_draft, tmp_path, capsys):
    code = main(["quantize", "--model", str(tiny_text_draft), "--out", str(tmp_path / "x")])
    assert code == 2
    assert "has no tokenizer" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def write_header_only_checkpoint(directory: Path, config: dict, shapes: dict[str, list[int]]) -> None:
    """A real safetensors header over a sparse data section: the plan reads headers only, so no weights are written."""
    import struct

    header, offset = {}, 0
    for name, shape in shapes.items():
        size = 2 * int(torch.tensor(shape).prod())
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    with open(directory / "model.safetensors", "wb") as handle:
        handle.write(struct.pack("<Q", len(raw)) + raw)
        handle.truncate(8 + len(raw) + offset)
    (directory / "config.json").write_text(json.dumps(config))


def test_plan_estimates_e2b_memory_from_headers_before_loading(tmp_path):
    # google/gemma-4-E2B-it: 5,123,178,051 parameters on the hub (10.25 GB in BF16)
    config = {"architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4",
              "text_config": {"num_hidden_layers": 35, "num_kv_shared_layers": 20, "vocab_size": 262144}}
    write_header_only_checkpoint(tmp_path, config, {
        "model.language_model.embed_tokens_per_layer.weight": [262144, 8960],
        "model.language_model.embed_tokens.weight": [262144, 1536],
        "model.language_model.rest.weight": [5_123_178_051 - 262144 * (8960 + 1536)],
    })
    plan = plan_quantization(tmp_path, "nvfp4", available_bytes=24 * 1024**3)
    assert plan.parameters == 5_123_178_051
    assert round(plan.required_bytes / 1024**3, 1) == 16.3
    assert plan.kv_shared_layers == tuple(range(15, 35))
    with pytest.raises(RefusedError, match="needs about 16.3 GiB of cpu memory; 12.0 GiB is available"):
        plan_quantization(tmp_path, "nvfp4", available_bytes=12 * 1024**3)


def test_text_only_draft_from_a_multimodal_model_is_a_causal_lm(tiny_multimodal_draft, tmp_path):
    plan = plan_quantization(tiny_multimodal_draft, "nvfp4", text_only=True)
    assert (plan.architecture, plan.output_architecture) == ("Gemma4ForConditionalGeneration", "Gemma4ForCausalLM")
    result = quantize_draft(plan, tmp_path / "text-only", calib="random-tokens", samples=2, progress=lambda _: None)
    dtypes = tensor_dtypes(result.out_dir)
    assert not [name for name in dtypes if "tower" in name or "embed_vision" in name or "embed_audio" in name]
    assert dtypes["model.layers.0.mlp.gate_proj.weight"] == "U8"
    assert dtypes["model.layers.5.self_attn.q_proj.weight"] == "BF16"
    source = json.loads((tiny_multimodal_draft / "config.json").read_text())
    config = json.loads((result.out_dir / "config.json").read_text())
    assert config.pop("quantization_config")["ignore"] == ["lm_head"] + [f"model.layers.{i}.self_attn*" for i in range(5, 10)]
    assert config.pop("architectures") == ["Gemma4ForCausalLM"]
    assert {k: v for k, v in config.items() if k in source["text_config"]} == source["text_config"]
    info = result.info
    assert (info.multimodal_parts, info.kv_shared_layers, info.vllm_quantization) == ((), (5, 6, 7, 8, 9), "modelopt_fp4")
    assert check_quantization(info) == []


@pytest.fixture(scope="module")
def tiny_draft_with_a_24_wide_projection(tmp_path_factory) -> Path:
    """Per-layer inputs 24 wide: every ``per_layer_projection`` has 24 input features, not a multiple of 16."""
    from transformers import Gemma4ForCausalLM

    config = tiny_text_config()
    config.hidden_size_per_layer_input = 24
    torch.manual_seed(0)
    model = Gemma4ForCausalLM(config).to(torch.bfloat16)
    return save_tiny(model, tmp_path_factory.mktemp("tiny-24-wide"), "Gemma4ForCausalLM")


def test_a_linear_not_a_multiple_of_the_nvfp4_block_is_kept_bf16_and_named(tiny_draft_with_a_24_wide_projection, tmp_path):
    projections = tuple(f"model.layers.{i}.per_layer_projection" for i in range(10))
    plan = plan_quantization(tiny_draft_with_a_24_wide_projection, "nvfp4")
    assert plan.unblockable == projections
    assert {f"{name}.*" for name in projections} <= set(plan.exclusions)

    result = quantize_draft(plan, tmp_path / "draft", calib="random-tokens", samples=2, progress=lambda _: None)
    assert set(result.kept_in_bf16) == set(projections)
    assert "24 input features, not a multiple of the 16-element block" in result.kept_in_bf16[projections[0]]
    dtypes = tensor_dtypes(result.out_dir)
    assert dtypes["model.layers.0.per_layer_projection.weight"] == "BF16"
    assert dtypes["model.layers.0.mlp.gate_proj.weight"] == "U8"
    assert set(projections) <= set(read_quantization(result.out_dir).exclusions)


def test_fp8_is_per_tensor_so_any_width_is_quantized(tiny_draft_with_a_24_wide_projection):
    assert plan_quantization(tiny_draft_with_a_24_wide_projection, "fp8").unblockable == ()


@pytest.mark.parametrize("scheme", ["nvfp4", "nvfp4-a16", "fp8"])
def test_the_weight_block_of_each_scheme_is_the_modelopt_presets(scheme):
    import modelopt.torch.quantization as mtq

    from specdraft.quantization.quantize import SCHEME_PRESETS, SCHEME_WEIGHT_BLOCK

    preset = getattr(mtq, SCHEME_PRESETS[scheme][0])
    (weight,) = [entry["cfg"] for entry in preset["quant_cfg"] if entry.get("quantizer_name") == "*weight_quantizer"]
    assert SCHEME_WEIGHT_BLOCK[scheme] == (weight.get("block_sizes") or {}).get(-1)


def _dry_run(capsys, *argv: str) -> tuple[int, str]:
    try:
        code = main(["quantize", "--dry-run", *map(str, argv)])
    except SystemExit as exit_:  # argparse refuses an option value this way
        code = exit_.code
    return code, capsys.readouterr().err


def test_dry_run_names_the_model_as_typed(tiny_text_draft, monkeypatch, capsys):
    monkeypatch.chdir(tiny_text_draft.parent)
    typed = f"./{tiny_text_draft.name}"
    assert main(["quantize", "--model", typed, "--out", "./out", "--calib", "random-tokens", "--dry-run"]) == 0
    assert capsys.readouterr().out.startswith(f"would quantize {typed} (Gemma4ForCausalLM, ")


def test_dry_run_refuses_a_header_only_safetensors(tiny_text_draft, tmp_path, capsys):
    (tmp_path / "config.json").write_text((tiny_text_draft / "config.json").read_text())
    source = (tiny_text_draft / "model.safetensors").read_bytes()
    header_length = int.from_bytes(source[:8], "little")
    (tmp_path / "model.safetensors").write_bytes(source[:8 + header_length])
    code, err = _dry_run(capsys, "--model", tmp_path, "--out", tmp_path / "out", "--calib", "random-tokens")
    assert code == 2 and "truncated" in err and "parameters" not in err


@pytest.mark.parametrize("case", ["non-empty out", "out under a file", "missing calib", "binary calib",
                                  "negative samples", "zero max-seq-len", "no such device"])
def test_dry_run_refuses_what_the_real_run_would_fail_on(tiny_text_draft, tmp_path, capsys, case):
    out, calib, extra = tmp_path / "out", "random-tokens", []
    if case == "non-empty out":
        out.mkdir()
        (out / "keep.txt").write_text("mine")
    elif case == "out under a file":
        (tmp_path / "a-file").write_text("")
        out = tmp_path / "a-file" / "out"
    elif case == "missing calib":
        calib = "/nonexistent/calib.jsonl"
    elif case == "binary calib":
        calib = tmp_path / "calib.txt"
        calib.write_bytes(b"\xff\xfe\x00binary")
    else:
        extra = {"negative samples": ["--calib-samples", "-5"], "zero max-seq-len": ["--max-seq-len", "0"],
                 "no such device": ["--device", "cuda:99"]}[case]
    code, err = _dry_run(capsys, "--model", tiny_text_draft, "--out", out, "--calib", calib, *extra)
    assert code == 2 and "Traceback" not in err and "internal error" not in err and "error: " in err
    if case == "non-empty out":
        assert [p.name for p in out.iterdir()] == ["keep.txt"]


@pytest.mark.parametrize("config", [[1, 2], {"architectures": ["Gemma4ForConditionalGeneration"], "text_config": [1]},
                                    {"architectures": "Gemma4ForCausalLM"}, {"architectures": 5},
                                    {"architectures": ["Gemma4ForCausalLM"], "num_hidden_layers": "ten"}])
def test_dry_run_refuses_a_config_json_of_the_wrong_shape(tiny_text_draft, tmp_path, capsys, config):
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "model.safetensors").write_bytes((tiny_text_draft / "model.safetensors").read_bytes())
    code, err = _dry_run(capsys, "--model", tmp_path, "--out", tmp_path / "out", "--calib", "random-tokens")
    assert code == 2 and err.startswith("specdraft: error: ") and "internal error" not in err


def test_the_documented_dry_run_plans_on_a_tiny_draft(tiny_text_draft_with_tokenizer, tmp_path, capsys):
    """docs/quantize.md's `--dry-run` command, with the tiny draft in place of ./gemma-4-E2B-it."""
    import shlex

    from tests.documented import commands, read

    (line,) = [line for line in commands(read("docs/quantize.md")) if "--dry-run" in line]
    line = line.replace("--model ./gemma-4-E2B-it ", f"--model {tiny_text_draft_with_tokenizer} ")
    assert main(shlex.split(line.replace("--out ./", f"--out {tmp_path}/"), comments=True)[3:]) == 0
    assert "nvfp4" in capsys.readouterr().out.lower()


def test_the_documented_python_example_reads_an_export(nvfp4_text_export):
    """docs/quantize.md's Python example, on a tiny export in place of ./gemma-4-E2B-it-NVFP4."""
    from tests.documented import blocks, read

    (example,) = blocks(read("docs/quantize.md"), "python")
    namespace: dict = {}
    exec(example.body.replace("./gemma-4-E2B-it-NVFP4", str(nvfp4_text_export.out_dir)), namespace)
    assert namespace["info"].vllm_quantization == "modelopt_fp4"
