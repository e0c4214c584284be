"""``specdraft launch`` from the command line: the validated DGX Spark pairing, quoting, refusals."""

import json
import shlex
import subprocess

import pytest

from tests.planning.conftest import shipped_config, write_checkpoint

TARGET, DRAFT = "LilaRest/gemma-4-31B-it-NVFP4-turbo", "mikeytag/gemma-4-E2B-it-NVFP4"
# The configuration validated on a DGX Spark (9 -> 18 tok/s); specdraft must plan exactly this.
SPARK_SPECULATIVE_CONFIG = {"model": DRAFT, "num_speculative_tokens": 4, "draft_tensor_parallel_size": 1,
                           "quantization": "modelopt"}
SPARK_FLAGS = [("--quantization", "modelopt"), ("--max-model-len", "131072"), ("--max-num-seqs", "1"),
              ("--gpu-memory-utilization", "0.80"), ("--kv-cache-dtype", "fp8"), ("--enable-prefix-caching", None),
              ("--disable-hybrid-kv-cache-manager", None),
              ("--enable-auto-tool-choice", None), ("--tool-call-parser", "gemma4"),
              ("--chat-template-content-format", "openai"),
              ("--default-chat-template-kwargs", '{"enable_thinking": false}')]


def _options(argv: list[str]) -> dict[str, str | None]:
    """argv after `vllm serve MODEL` as {option: value or None for a switch}."""
    options, rest = {}, argv[3:]
    for index, token in enumerate(rest):
        if token.startswith("--"):
            following = rest[index + 1] if index + 1 < len(rest) else None
            options[token] = None if following is None or following.startswith("--") else following
    return options


def test_spark_pairing_dry_run_json_reproduces_the_validated_configuration(specdraft_cli):
    done = specdraft_cli("launch", "--target", TARGET, "--draft", DRAFT, "--profile", "dgx-spark",
                         "--dry-run", "--json")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["argv"][:3] == ["vllm", "serve", TARGET]
    assert plan["speculative_config"] == SPARK_SPECULATIVE_CONFIG
    options = _options(plan["argv"])
    assert json.loads(options["--speculative-config"]) == SPARK_SPECULATIVE_CONFIG
    for name, value in SPARK_FLAGS:
        assert name in options and options[name] == value, name
    assert "--trust-remote-code" not in options  # neither checkpoint ships model code
    assert options["--reasoning-parser"] == "gemma4"
    from specdraft.templates import shipped_template

    assert options["--chat-template"] == str(shipped_template("large"))
    assert {f["check"]: f["level"] for f in plan["findings"]}["chat-template"] == "ok"
    assert all({"level", "check", "message"} <= set(f) for f in plan["findings"])


def test_dry_run_without_vllm_or_models_says_what_is_missing(specdraft_cli):
    plan = json.loads(specdraft_cli("launch", "--target", TARGET, "--draft", DRAFT, "--dry-run", "--json").stdout)
    by_check = {f["check"]: f for f in plan["findings"]}
    assert by_check["vllm"]["level"] == "warning"
    assert by_check["target-checkpoint"]["message"].startswith(f"{TARGET} is not in the Hugging Face cache; using "
                                                                "shipped shape facts")
    assert by_check["draft-checkpoint"]["level"] == "warning"
    assert plan["exec_argv"] is None and plan["exec_note"].startswith("no interpreter with a checked vLLM")


def test_dry_run_report_lists_checks_memory_flags_and_command(specdraft_cli):
    done = specdraft_cli("launch", "--target", TARGET, "--draft", DRAFT, "--dry-run")
    assert done.returncode == 0
    for heading in ("Checks", "Memory", "Flags", "Command"):
        assert f"\n{heading}\n" in done.stdout
    assert "--disable-hybrid-kv-cache-manager  the draft shares KV across 20 layers" in done.stdout


def test_a_draft_model_pairing_shows_the_mtp_assistant_tip_in_the_report_and_in_json(specdraft_cli):
    report = specdraft_cli("launch", "--target", TARGET, "--draft", DRAFT, "--dry-run").stdout
    tip = [line for line in report.splitlines() if "mtp-assistant" in line]
    assert len(tip) == 1 and tip[0].split()[:4] == ["info", "mtp-assistant", "tip:", "--draft"]
    assert "google/gemma-4-31B-it-assistant, the target's MTP assistant (method mtp), decoded ~2x" in tip[0]
    plan = json.loads(specdraft_cli("launch", "--target", TARGET, "--draft", DRAFT, "--dry-run", "--json").stdout)
    finding = {f["check"]: f for f in plan["findings"]}["mtp-assistant"]
    assert finding["level"] == "info" and finding["message"] in tip[0]
    assert finding["hint"] == "launch --draft google/gemma-4-31B-it-assistant" and plan["ok"]


@pytest.mark.parametrize("name", ["my gemma/31B", "x;rm -rf ~", "$(touch pwned)'quote\"d"])
def test_print_quotes_paths_so_bash_sees_the_same_argv(specdraft_cli, tmp_path, name):
    target = str(write_checkpoint(tmp_path / "models" / name, shipped_config("google/gemma-4-31B-it")))
    done = specdraft_cli("launch", "--target", target, "--draft", DRAFT, "--print", "--", "--served-model-name", "a b")
    command = done.stdout.strip()
    argv = json.loads(specdraft_cli("launch", "--target", target, "--draft", DRAFT, "--dry-run", "--json", "--",
                                    "--served-model-name", "a b").stdout)["argv"]
    echoed = subprocess.run(["bash", "-c", "printf '%s\\0' " + command.split(" ", 1)[1]], capture_output=True,
                            cwd=tmp_path, check=True).stdout.decode().split("\0")[:-1]
    assert ["vllm"] + echoed == argv
    assert not (tmp_path / "pwned").exists()


def test_docker_command_survives_two_rounds_of_shell_parsing(specdraft_cli, tmp_path):
    target = write_checkpoint(tmp_path / "my models" / "t;x", shipped_config("google/gemma-4-31B-it"))
    done = specdraft_cli("launch", "--target", str(target), "--draft", DRAFT, "--docker",
                         "--image", "vllm/vllm-openai:v0.26.0")
    outer = shlex.split(done.stdout.strip())
    assert outer[:2] == ["docker", "run"] and f"{target}:{target}:ro" in outer
    script = outer[outer.index("-c") + 1]
    steps = script.split(" && ")
    assert steps[-3:-1] == ["python3 -m specdraft patch apply", "python3 -m specdraft patch verify"]
    serve = steps[-1].removeprefix("exec ")
    echoed = subprocess.run(["bash", "-c", "printf '%s\\0' " + serve.split(" ", 1)[1]], capture_output=True,
                            check=True).stdout.decode().split("\0")[:-1]
    assert echoed[:2] == ["serve", str(target)] and echoed[-2:] == ["--port", "8000"]


def test_launch_with_errors_starts_nothing_and_exits_1(specdraft_cli):
    done = specdraft_cli("launch", "--target", TARGET, "--draft", "someone/llama-7b", "--python", "/nonexistent")
    assert done.returncode == 1
    assert "specdraft: error: preflight found" in done.stderr and "vLLM not started" in done.stderr


def test_missing_target_is_a_user_error_with_the_next_command(specdraft_cli):
    done = specdraft_cli("launch", "--draft", "google/gemma-4-E2B-it")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "specdraft: error: launch needs --target",
        "specdraft: next: specdraft launch --target T [--draft D] --dry-run  (or specdraft launch --demo)"]


def test_without_a_draft_launch_ranks_the_methods_and_prints_why(specdraft_cli):
    from tools.release_trees import release_tree

    tree = release_tree("0.33.0", progress=lambda line: None)
    args = ("launch", "--target", "google/gemma-4-31B-it", "--profile", "h100", "--vllm-root", str(tree), "--dry-run")
    text = specdraft_cli(*args)
    assert "Methods (--method auto, fastest first)" in text.stdout and "1. ngram_gpu: K = " in text.stdout
    assert "turned away: suffix: method suffix needs arctic_inference" in text.stdout
    plan = json.loads(specdraft_cli(*args, "--json").stdout)
    assert plan["speculative_config"]["method"] == "ngram_gpu" and "model" not in plan["speculative_config"]
    assert [row["method"] for row in plan["method_ranking"]["ranked"]] == ["ngram_gpu", "ngram"]
    assert plan["draft"] is None and plan["ok"]


def test_a_draft_for_a_method_without_one_is_a_user_error(specdraft_cli):
    done = specdraft_cli("launch", "--target", TARGET, "--draft", "google/gemma-4-E2B-it", "--method", "ngram")
    assert done.returncode == 2 and "method ngram uses no draft checkpoint; drop --draft" in done.stderr


def test_method_none_plans_the_target_alone_in_text_and_json(specdraft_cli):
    """The baseline bench --compare measures against: the same plan, no --speculative-config, no drafter."""
    from tools.release_trees import release_tree

    tree = release_tree("0.33.0", progress=lambda line: None)
    args = ("launch", "--target", "google/gemma-4-31B-it", "--method", "none", "--profile", "h100",
            "--vllm-root", str(tree), "--dry-run")
    text = specdraft_cli(*args)
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("specdraft launch: google/gemma-4-31B-it alone, without speculation, on h100")
    assert "  info   speculation" in text.stdout and "--method none: the target alone" in text.stdout
    command = shlex.split(text.stdout.split("\nCommand\n", 1)[1])
    assert command[:3] == ["vllm", "serve", "google/gemma-4-31B-it"] and "--speculative-config" not in command
    plan = json.loads(specdraft_cli(*args, "--json").stdout)
    assert plan["argv"] == command and plan["speculative_config"] is None and plan["draft"] is None
    assert plan["no_speculation"].startswith("--method none") and plan["ok"]


@pytest.mark.parametrize("option", [["--draft", "google/gemma-4-E2B-it"], ["--num-speculative-tokens", "3"],
                                    ["--prompt-lookup-min", "2"], ["--prompt-lookup-max", "4"],
                                    ["--suffix-decoding-max-tree-depth", "8"], ["--acceptance-from", "mtp=r.json"],
                                    ["--draft-tensor-parallel-size", "1"], ["--from-bench", "load.json"]])
def test_method_none_with_an_option_of_speculation_is_one_line_exit_2(specdraft_cli, option):
    done = specdraft_cli("launch", "--target", TARGET, "--method", "none", *option, "--dry-run")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        f"specdraft: error: launch: {option[0][2:].replace('-', '_')}: --method none serves the target alone, "
        f"without speculation; drop {option[0]}, or choose a method",
        "specdraft: next: specdraft launch --help"]


def test_auto_where_no_k_pays_serves_the_target_alone_and_says_why(specdraft_cli):
    """An E2B draft beside the 26B-A4B costs about half its step: no candidate is predicted to pay."""
    args = ("launch", "--target", "google/gemma-4-26B-A4B-it", "--draft", "google/gemma-4-E2B-it", "--method", "auto",
            "--profile", "h200", "--dry-run")
    text = specdraft_cli(*args)
    assert text.returncode == 0, text.stderr
    assert "alone, without speculation, on h200" in text.stdout.splitlines()[0]
    assert "draft_model with google/gemma-4-E2B-it: no K pays (at best K = " in text.stdout
    warning = next(line for line in text.stdout.splitlines() if "method-auto" in line)
    assert warning.lstrip().startswith("WARN") and "is predicted to beat the target alone; the best, " in warning
    assert "next: add --draft google/gemma-4-26B-A4B-it-assistant" in text.stdout
    assert "--speculative-config" not in text.stdout.split("\nCommand\n", 1)[1]
    plan = json.loads(specdraft_cli(*args, "--json").stdout)
    assert plan["speculative_config"] is None and plan["draft"] is None
    assert plan["no_speculation"] in warning and "--speculative-config" not in plan["argv"]


def test_bad_value_names_the_field(specdraft_cli):
    done = specdraft_cli("launch", "--target", TARGET, "--draft", DRAFT, "--gpu-memory-utilization", "1.5")
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == ("specdraft: error: launch: gpu_memory_utilization: Input should be less "
                                           "than or equal to 1 (got 1.5)")


def test_vllm_root_plans_against_an_unpacked_release(specdraft_cli):
    from tools.release_trees import release_tree

    tree = release_tree("0.19.0", progress=lambda line: None)
    plan = json.loads(specdraft_cli("launch", "--target", "nvidia/Gemma-4-31B-IT-NVFP4", "--draft", DRAFT,
                                    "--vllm-root", str(tree), "--dry-run", "--json").stdout)
    assert plan["vllm"]["version"] == "0.19.0"
    assert "--language-model-only" in plan["argv"]
    by_check = {f["check"]: f for f in plan["findings"]}
    assert by_check["serve-flags"]["message"] == "every flag is defined by vLLM 0.19.0"
    assert by_check["hotfixes"]["message"].endswith("pending ones are applied before serving")


def test_dry_run_on_a_release_that_would_disable_async_scheduling_passes_it_and_says_why(specdraft_cli):
    from tools.release_trees import release_tree

    tree = str(release_tree("0.26.0", progress=lambda line: None))
    base = ("launch", "--target", TARGET, "--draft", DRAFT, "--vllm-root", tree, "--dry-run")
    plan = json.loads(specdraft_cli(*base, "--json").stdout)
    assert "--async-scheduling" in plan["argv"]
    assert plan["async_scheduling"]["outcome"] == "enabled"
    assert plan["async_scheduling"]["reason"].startswith("vLLM 0.26.0 would disable it for draft_model")
    report = specdraft_cli(*base).stdout
    assert "\n  --async-scheduling                 vLLM 0.26.0 would disable it for draft_model but" in report
    opted_out = json.loads(specdraft_cli(*base, "--json", "--no-async-scheduling").stdout)
    assert "--no-async-scheduling" in opted_out["argv"] and "--async-scheduling" not in opted_out["argv"]
    assert opted_out["async_scheduling"]["outcome"] == "opted-out"


def test_help_documents_every_field_of_the_request_with_its_docstring(specdraft_cli):
    from specdraft.planning import LaunchRequest

    text = " ".join(specdraft_cli("launch", "--help").stdout.split())
    for name, field in LaunchRequest.model_fields.items():
        option = {"async_scheduling": "--no-async-scheduling", "extra_args": "-- VLLM_ARGS"}.get(
            name, "--" + name.replace("_", "-"))
        assert option in text, name
        first_words = " ".join(field.description.replace("``", "").rstrip(".").split()[1:4])
        assert first_words in text, (name, first_words)
    assert "--profile {dgx-spark,h100,h200}" in text and "--method {draft_model,mtp,eagle3,dflash,dspark,ngram,ngram_gpu,suffix,auto,none}" in text
    assert "unset: auto (bf16, measured faster than fp8 on H200)" in " ".join(text.split())
    assert "(default: apply)" in text


def test_options_reach_the_request_and_unset_ones_keep_the_models_defaults(specdraft_cli):
    plan = json.loads(specdraft_cli("launch", "--target", TARGET, "--draft", DRAFT, "--revision", "abc123",
                                    "--dry-run", "--json").stdout)
    options = _options(plan["argv"])
    assert options["--revision"] == "abc123" and options["--kv-cache-dtype"] == "fp8"
    assert options["--max-num-seqs"] == "1"
    assert json.loads(options["--speculative-config"])["num_speculative_tokens"] == 4


def test_python_and_vllm_root_together_are_refused_by_the_parser(specdraft_cli):
    done = specdraft_cli("launch", "--target", TARGET, "--draft", DRAFT, "--python", "/x", "--vllm-root", "/y")
    assert done.returncode == 2 and "not allowed with argument" in done.stderr
