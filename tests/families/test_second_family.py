"""A second family, defined the way docs/ARCHITECTURE.md's "A model family" recipe says, in three files: its module
(a ``ModelFamily``), its chat template and its speed tables. Registered through ``specdraft.families.register``, a
target and a draft of it are planned by the real planner from their config.json files, and the plan serves them
with that family's parsers, template, default K and measured step costs: any step that still assumed Gemma 4 would
put Gemma 4's there."""

from __future__ import annotations

import importlib.util
import json
import textwrap
from pathlib import Path

import pytest

from specdraft.families import FAMILIES, family_of, register, unregister
from specdraft.planning import LaunchRequest, build_launch_plan

MODULE = '''
from pathlib import Path

from specdraft.families import LayerKV, ModelFamily, ParameterCount, text_config


class Toy(ModelFamily):
    name = "toy"
    display_name = "Toy"
    model_types = frozenset({"toy"})
    special_tokens = {"<s>": 1, "</s>": 2}
    pairing_tokens = ("<s>", "</s>")
    tool_call_parser = "toy_tools"
    reasoning_parser = "toy_reasoning"
    template_files = {"chat": "toy.jinja"}
    template_dir = Path(__file__).parent
    costs_file = Path(__file__).with_name("toy.costs.json")
    base_repos = {}
    first_vllm = "0.19.0"
    text_only_architecture = "ToyForCausalLM"

    def kind(self, config):
        return "dense"

    def template_variant(self, config):
        return "chat"

    def is_assistant(self, config):
        return False

    def kv_layers(self, config):
        text = text_config(config)
        return [LayerKV(kind="full", kv_heads=text["num_key_value_heads"], head_dim=text["head_dim"], shared=False)
                for _ in range(text["num_hidden_layers"])]

    def count_parameters(self, config):
        text = text_config(config)
        hidden, layers = text["hidden_size"], text["num_hidden_layers"]
        embedding = hidden * text["vocab_size"]
        total = embedding + layers * 12 * hidden * hidden
        return ParameterCount(total=total, lookup_only=0, unpicked=0, embedding=embedding)

    def embedding_params(self, config):
        text = text_config(config)
        return text["hidden_size"] * text["vocab_size"]

    def quantization_exclusions(self, config):
        return ("*lm_head*",)


TOY = Toy()
'''

TEMPLATE = "{% for m in messages %}<s>{{ m.role }}: {{ m.content }}</s>{% endfor %}"

COSTS = {
    "stand_in_size": "big",
    "sizes": {"big": {"name": "the Toy Big", "shape": {"hidden_size": 640, "num_hidden_layers": 6},
                      "target_steps_ms": {"h200": {"ms": 24.113, "source": "the toy's own measurement"}},
                      "entries": {"draft_model": "vllm0.26-draft_model-e2b-sync"}}},
    "default_k": {
        "draft_model": {"*": {"*": {"k": 6, "reason": "the Toy's measured default for a draft model"}}},
        "assistant": {"*": {"*": {"k": 2, "reason": "the Toy's assistant default"}}},
        "draftless": {"*": {"*": {"k": 2, "reason": "the Toy's draft-less default"}}},
    },
}


def _config(hidden: int, layers: int) -> dict:
    return {"model_type": "toy", "architectures": ["ToyForCausalLM"], "hidden_size": hidden,
            "num_hidden_layers": layers, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
            "vocab_size": 1000, "max_position_embeddings": 4096, "torch_dtype": "bfloat16"}


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """The Toy family from its three files, registered for the test and removed after."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no vllm: the plan reads the release tables only
    family_dir = tmp_path / "toy_family"
    family_dir.mkdir()
    (family_dir / "toy.py").write_text(textwrap.dedent(MODULE))
    (family_dir / "toy.jinja").write_text(TEMPLATE)
    (family_dir / "toy.costs.json").write_text(json.dumps(COSTS))
    spec = importlib.util.spec_from_file_location("toy_family", family_dir / "toy.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    family = register(module.TOY)
    yield family, family_dir
    unregister(family)


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    target, draft = tmp_path / "toy-big", tmp_path / "toy-small"
    for directory, config in ((target, _config(640, 6)), (draft, _config(128, 2))):
        directory.mkdir()
        (directory / "config.json").write_text(json.dumps(config))
    return target, draft


def test_a_registered_family_claims_its_configs_and_refuses_a_clash(toy):
    family, _ = toy
    assert family_of(_config(640, 6)) is family and family in FAMILIES
    assert family.size_key(_config(640, 6)) == "big" and family.size_key(_config(128, 2)) is None
    clash = type(family)()
    clash.name, clash.model_types = "toy2", frozenset({"gemma4"})
    with pytest.raises(ValueError, match="clashes with 'gemma4'"):
        register(clash)
    assert clash not in FAMILIES


def test_a_pair_of_the_family_is_served_with_its_parsers_template_and_default_k(toy, tmp_path):
    family, family_dir = toy
    target, draft = _pair(tmp_path)
    plan = build_launch_plan(LaunchRequest(target=str(target), draft=str(draft), profile="h200"))
    argv = plan.serve.argv()
    assert plan.target.family is family and plan.draft.family is family
    assert plan.serve.flag("--tool-call-parser").value == "toy_tools"
    assert plan.serve.flag("--reasoning-parser").value == "toy_reasoning"
    assert Path(plan.serve.flag("--chat-template").value) == family_dir / "toy.jinja"
    assert plan.speculative.model == str(draft) and plan.speculative.num_speculative_tokens == 6
    assert "the Toy's measured default for a draft model" in plan.serve.flag("--speculative-config").reason
    template = next(f for f in plan.findings if f.check == "chat-template")
    assert template.level == "warning" and "not Toy's" in template.message  # Gemma 4's leak rules are not run
    assert not [arg for arg in argv if "gemma4" in arg], argv


def test_method_auto_ranks_with_the_family_s_measured_step_costs(toy, tmp_path):
    target, draft = _pair(tmp_path)
    plan = build_launch_plan(LaunchRequest(target=str(target), draft=str(draft), profile="h200", method="auto"))
    row = next(r for r in plan.method_ranking.ranked if r.method == "draft_model")
    assert row.measured_costs and "vllm0.26-draft_model-e2b-sync" in row.cost_basis
    assert plan.speculative.num_speculative_tokens == row.k > 0
    # a method the Toy's tables neither measure nor model is turned away, not priced with Gemma 4's rows
    ngram = next(t for t in plan.method_ranking.turned_away if t.method == "ngram")
    assert ngram.reason == "no step cost of ngram beside the Toy Big in Toy's tables"
    assert not any("not a measured shape" in note or "31B" in note for note in plan.method_ranking.notes)


def test_a_draft_less_method_takes_the_family_s_own_default_k(toy, tmp_path):
    target, _ = _pair(tmp_path)
    plan = build_launch_plan(LaunchRequest(target=str(target), method="ngram", profile="h200"))
    assert plan.speculative.num_speculative_tokens == 2
    assert "the Toy's draft-less default" in plan.serve.flag("--speculative-config").reason
