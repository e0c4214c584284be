"""A K per batch size (vLLM's ``num_speculative_tokens_per_batch_size``): the shipped table against the real
release sources, and the release's own validator run on schedules."""

import ast
import json
import os
from importlib import resources

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from tests.planning.conftest import RELEASES, assert_every_release_read_once, dynamic_sd_utils, raised_messages

TABLE = json.loads(resources.files("specdraft.planning").joinpath("data", "k_per_batch_size.json").read_text())
FIELD = TABLE["field"]
# The releases on either side of each change, wheels the rest of the suite downloads anyway;
# SPECDRAFT_ALL_RELEASES=1 reads all 21.
CHECKED = RELEASES if os.environ.get("SPECDRAFT_ALL_RELEASES") else ["0.19.0", "0.23.0", "0.24.0", "0.25.0", "0.31.0",
                                                                      "0.32.0", "0.26.0", "0.33.0"]


def _rule(version: str) -> dict:
    return next(rule for rule in TABLE["rules"] if Version(version) in SpecifierSet(rule["versions"]))


def _module(path):
    return ast.parse(path.read_text())


def _function(module: ast.Module, name: str) -> ast.FunctionDef | None:
    return next((node for node in ast.walk(module) if isinstance(node, ast.FunctionDef) and node.name == name), None)


def test_table_covers_every_release_from_0_19_to_0_33_once():
    assert_every_release_read_once(TABLE["rules"])


@pytest.mark.parametrize("version", CHECKED)
def test_the_field_exists_exactly_where_the_table_says(release, version):
    tree, rule = release(version), _rule(version)
    speculative = _module(tree / "vllm" / "config" / "speculative.py")
    config = next(node for node in ast.walk(speculative) if isinstance(node, ast.ClassDef)
                  and node.name == "SpeculativeConfig")
    fields = {ast.unparse(node.target): ast.unparse(node.annotation) for node in config.body
              if isinstance(node, ast.AnnAssign)}
    if not rule["supported"]:
        assert FIELD not in fields
        assert 'ConfigDict(extra="forbid")' in (tree / "vllm" / "config" / "utils.py").read_text()
        return
    assert fields[FIELD] == TABLE["format"]["annotation"]
    scheduler = _module(tree / "vllm" / "v1" / "core" / "sched" / "scheduler.py")
    lookups = {ast.unparse(node) for node in ast.walk(scheduler) if isinstance(node, ast.Subscript)
               and ast.unparse(node.value) == "self.dynamic_sd_lookup"}
    assert lookups == {"self.dynamic_sd_lookup[len(num_scheduled_tokens)]"}  # K by the step's number of requests


@pytest.mark.parametrize("version", [v for v in CHECKED if _rule(v)["supported"]])
def test_the_format_is_what_the_releases_own_validator_accepts(release, version):
    tree = release(version)
    utils = dynamic_sd_utils(tree)
    validate, expand = utils["validate_and_normalize_dynamic_sd_schedule"], utils["build_dynamic_sd_schedule_lookup"]
    source = _module(tree / "vllm" / "v1" / "spec_decode" / "dynamic" / "utils.py")
    assert raised_messages(ast.unparse(_function(source, "validate_and_normalize_dynamic_sd_schedule"))) == set(
        TABLE["format"]["validator_messages"])
    assert validate([[1, 4, 8], [5, 16, 0]]) == [(1, 4, 8), (5, 16, 0)]  # lists, as JSON gives them; K = 0 allowed
    for refused in ([[1, 4, -1]], [[2, 4, 3]], [[1, 4, 3], [4, 8, 2]], [[1, 4]], []):
        with pytest.raises(ValueError):
            validate(refused)
    # capped at num_speculative_tokens (3); 3-4 carry the first range's K; past the last range, its K
    assert expand([[1, 2, 5], [5, 6, 1]], vllm_max_batch_size=8, vllm_num_speculative_tokens=3)[1:] == [3, 3, 3, 3,
                                                                                                          1, 1, 1, 1]
    with pytest.raises(ValueError):
        expand([[1, 8, 0]], vllm_max_batch_size=8, vllm_num_speculative_tokens=0)


@pytest.mark.parametrize("version", [v for v in CHECKED if _rule(v)["supported"]])
def test_k_zero_still_runs_the_drafters_first_pass(release, version):
    proposer = _module(release(version) / "vllm" / "v1" / "spec_decode" / "llm_base_proposer.py")
    body = _function(proposer, "propose").body

    def index(found) -> int:
        return next(i for i, statement in enumerate(body) if any(found(node) for node in ast.walk(statement)))

    forward = index(lambda node: isinstance(node, ast.Call) and ast.unparse(node.func) == "self.model")
    stop = index(lambda node: isinstance(node, ast.If) and ast.unparse(node.test) == "self.num_speculative_tokens == 0"
                 and isinstance(node.body[-1], ast.Return))
    assert forward < stop, TABLE["k_zero"]


@pytest.mark.parametrize("version", [v for v in CHECKED if _rule(v)["supported"]])
def test_what_switches_the_schedule_off_or_changes_cuda_graphs(release, version):
    rule = _rule(version)
    source = (release(version) / "vllm" / "config" / "vllm.py").read_text()
    module = ast.parse(source)
    cudagraphs = ast.unparse(_function(module, "_maybe_override_dynamic_sd_cudagraph_mode"))
    assert "CUDAGraphMode.PIECEWISE" in cudagraphs
    assert ("self.use_v2_model_runner" in cudagraphs) == ("Model Runner V2 keeps them" in rule["full_cudagraphs"])
    assert ('unsupported.append("dynamic speculative decoding")' in source) == (rule["v2_model_runner"] != "supported")
    data_parallel = _function(module, "_maybe_disable_dynamic_sd_for_data_parallel")
    assert (data_parallel is not None) == rule["data_parallel"].startswith("dropped")
    if data_parallel is not None:
        assert f"speculative_config.{FIELD} = None" in ast.unparse(data_parallel)
    v1 = _function(module, "_maybe_disable_dynamic_sd_for_v1")
    if rule["v1_methods"] is None:
        assert v1 is None
    else:
        kept = next(node for node in ast.walk(v1) if isinstance(node, ast.Compare)
                    and isinstance(node.ops[0], ast.In))
        assert list(ast.literal_eval(kept.comparators[0])) == rule["v1_methods"]
        assert f"speculative_config.{FIELD} = None" in ast.unparse(v1)


@pytest.mark.parametrize("version", [v for v in CHECKED if _rule(v)["supported"] and _rule(v)["v2_model_runner"] == "supported"])
def test_how_many_tokens_model_runner_v2_drafts_under_a_schedule(release, version):
    """Before 0.32.0 V2's model runner calls the speculator's propose without the step's K, and the speculator's
    loop drafts num_speculative_steps tokens: a schedule's smaller K still pays the largest K's drafting."""
    runner = ast.parse((release(version) / "vllm/v1/worker/gpu/model_runner.py").read_text())
    proposes = [node for node in ast.walk(runner) if isinstance(node, ast.Call)
                and ast.unparse(node.func) == "self.speculator.propose"]
    assert proposes
    passes_k = any(keyword.arg == "num_speculative_tokens" for call in proposes for keyword in call.keywords)
    assert passes_k == _rule(version)["v2_drafts"].startswith("the scheduled K")
    assert passes_k != _rule(version)["v2_drafts"].startswith("the largest K")
