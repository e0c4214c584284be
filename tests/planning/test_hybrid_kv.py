"""The hybrid KV cache manager per model runner: the rule against the real release sources, and the plan for a
KV-sharing draft (Gemma 4 E2B beside the 31B) on each runner of vLLM 0.33.0."""

import ast
from pathlib import Path

import pytest

from specdraft.planning.knowledge.release_tables import model_runner_table
from tests.planning.conftest import RELEASES

HYBRID_FLAG = "--disable-hybrid-kv-cache-manager"
V1_REFUSAL = "All drafting layers should belong to the same kv cache group"
KV_SHARING_HOTFIXES = ("drafter-attention-groups-per-spec", "kv-sharing-uniform-specs", "kv-uniform-catches-valueerror")
# the releases whose Model Runner V2 serves draft_model by default (the table, read from each release)
V2_DRAFT_MODEL_RELEASES = [v for v in RELEASES if (rule := model_runner_table().rule_for(v)).default != "v1"
                           and rule.runs_on_v2("draft_model")]


def _classes(path: Path) -> dict[str, ast.ClassDef]:
    return {node.name: node for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.ClassDef)}


def _function(owner: ast.AST, name: str) -> ast.FunctionDef | None:
    return next((node for node in ast.iter_child_nodes(owner)
                 if isinstance(node, ast.FunctionDef) and node.name == name), None)


def _calls(function: ast.AST, name: str) -> list[ast.Call]:
    return [node for node in ast.walk(function) if isinstance(node, ast.Call)
            and (getattr(node.func, "attr", None) == name or getattr(node.func, "id", None) == name)]


def _v2_draft_model_speculator(tree: Path) -> tuple[Path, str]:
    """The module and class ``init_speculator`` (Model Runner V2) builds for ``draft_model``."""
    spec_decode = tree / "vllm" / "v1" / "worker" / "gpu" / "spec_decode"
    init = _function(ast.parse((spec_decode / "__init__.py").read_text()), "init_speculator")
    branch = next(node for node in ast.walk(init) if isinstance(node, ast.If) and "uses_draft_model()" in ast.unparse(
        node.test))
    imported = next(node for node in branch.body if isinstance(node, ast.ImportFrom))
    module = tree / Path(*imported.module.split(".")).with_suffix(".py")
    return module, imported.names[0].name


def test_model_runner_v2_runs_draft_model_from_0_31_0():
    assert V2_DRAFT_MODEL_RELEASES == ["0.31.0", "0.32.0", "0.33.0"]


@pytest.mark.parametrize("version", RELEASES)
def test_the_v1_drafter_refuses_draft_layers_in_several_kv_cache_groups_in_every_release(release, version):
    spec_decode = release(version) / "vllm" / "v1" / "spec_decode"
    module = spec_decode / ("llm_base_proposer.py" if (spec_decode / "llm_base_proposer.py").exists() else "eagle.py")
    proposer = _classes(module)["SpecDecodeBaseProposer"]
    assert _calls(_function(proposer, "initialize_attn_backend"), "validate_same_kv_cache_group")
    assert V1_REFUSAL in ast.unparse(_function(proposer, "validate_same_kv_cache_group"))
    # the draft_model proposer is that class, unchanged
    draft_model = _classes(spec_decode / "draft_model.py")["DraftModelProposer"]
    assert [ast.unparse(base) for base in draft_model.bases] == ["SpecDecodeBaseProposer"]
    assert _function(draft_model, "initialize_attn_backend") is None


@pytest.mark.parametrize("version", V2_DRAFT_MODEL_RELEASES)
def test_the_v2_draft_model_drafter_builds_attention_for_each_kv_cache_group(release, version):
    tree = release(version)
    gpu = tree / "vllm" / "v1" / "worker" / "gpu"
    module, name = _v2_draft_model_speculator(tree)
    speculator = _classes(module)[name]
    assert [ast.unparse(base) for base in speculator.bases] == ["DraftModelSpeculator"]
    own = _function(speculator, "set_attn")
    assert own is None or _calls(own, "set_attn")  # super().set_attn(...)
    base_set_attn = _function(_classes(gpu / "spec_decode" / "speculator.py")["DraftModelSpeculator"], "set_attn")
    (call,) = _calls(base_set_attn, "init_attn_backend")
    assert "active_layer_names" in {keyword.arg for keyword in call.keywords}  # the draft's layers, in any group
    init = _function(ast.parse((gpu / "attn_utils.py").read_text()), "init_attn_backend")
    loops = [node for node in ast.walk(init) if isinstance(node, ast.For)
             and "kv_cache_config.kv_cache_groups" in ast.unparse(node.iter)]
    assert loops, "init_attn_backend no longer walks every KV cache group"
    assert not any(V1_REFUSAL in path.read_text() for path in gpu.rglob("*.py"))
    # with the manager off the shared layers still reach UniformTypeKVCacheSpecs.kv_cache_specs[layer_name] here,
    # so kv-sharing-uniform-specs stays needed on V2 whenever the flag is given
    assert _calls(init, "add_kv_sharing_layers_to_kv_cache_groups")
    assert "layer_kv_cache_spec.kv_cache_specs[layer_name]" in ast.unparse(init)


@pytest.mark.parametrize("runner_env, runner, flag, hotfixes", [
    (None, "Model Runner V2", False, ()),
    ("0", "the V1 model runner", True, KV_SHARING_HOTFIXES),
])
def test_a_kv_sharing_draft_keeps_the_hybrid_manager_on_model_runner_v2_only(release, empty_hub, monkeypatch,
                                                                             runner_env, runner, flag, hotfixes):
    from specdraft.planning import LaunchRequest, build_launch_plan

    if runner_env is None:
        monkeypatch.delenv("VLLM_USE_V2_MODEL_RUNNER", raising=False)
    else:
        monkeypatch.setenv("VLLM_USE_V2_MODEL_RUNNER", runner_env)
    plan = build_launch_plan(LaunchRequest(target="google/gemma-4-31B-it", draft="google/gemma-4-E2B-it",
                                           vllm_root=release("0.33.0"), hotfixes="check"))
    findings = {f.check: f for f in plan.findings}
    assert findings["model-runner"].message.startswith(f"the server starts on {runner}")
    assert (plan.serve.flag(HYBRID_FLAG) is not None) == flag
    assert findings["hybrid-kv-cache"].level == "ok"
    hotfix = findings["hotfixes"]
    if hotfixes:
        assert hotfix.level == "error" and hotfix.message.startswith(f"vLLM 0.33.0: {', '.join(hotfixes)} pending")
    else:
        assert hotfix.message.startswith(f"not needed: the pair runs without {HYBRID_FLAG}")
        assert findings["hybrid-kv-cache"].message == (
            "the draft shares KV across 20 layers and sliding windows differ (target 1024, draft 512): Model Runner "
            "V2's drafter builds attention for each KV cache group of the draft, so the hybrid manager stays on "
            "(read from vLLM's source; served on an H200 with vLLM 0.33.0, unpatched, the output equal to the target "
            "alone's token for token; VLLM_USE_V2_MODEL_RUNNER=0 gives the V1 plan)")


def test_an_unknown_draft_on_model_runner_v2_keeps_the_manager_on_and_says_it_could_not_look(release, empty_hub,
                                                                                           monkeypatch):
    """A draft whose config cannot be read may share KV: on V2 that still needs no flag (its drafter takes several
    groups) and the finding says why it did not look; forced onto V1, the flag goes on for the same reason."""
    from specdraft.planning import LaunchRequest, build_launch_plan

    monkeypatch.delenv("VLLM_USE_V2_MODEL_RUNNER", raising=False)
    request = LaunchRequest(target="google/gemma-4-31B-it", draft="someone/unpublished-gemma-draft",
                            method="draft_model", vllm_root=release("0.33.0"))
    plan = build_launch_plan(request)
    finding = next(f for f in plan.findings if f.check == "hybrid-kv-cache")
    assert plan.serve.flag(HYBRID_FLAG) is None
    assert finding.message.startswith("the draft is unknown, so KV sharing cannot be ruled out: Model Runner V2's")
    monkeypatch.setenv("VLLM_USE_V2_MODEL_RUNNER", "0")
    on_v1 = build_launch_plan(request)
    finding = next(f for f in on_v1.findings if f.check == "hybrid-kv-cache")
    assert on_v1.serve.flag(HYBRID_FLAG) is not None
    assert finding.message.startswith("the draft is unknown, so KV sharing cannot be ruled out: "
                                      f"{HYBRID_FLAG} is set")
