"""`add_kv_sharing_layers_to_kv_cache_groups` gives each KV-sharing layer its target layer's spec.

Gemma 4 E2B/E4B layers that share another layer's KV cache are appended to the target layer's
group, but when that group's spec is a `UniformTypeKVCacheSpecs` (the case once hotfix
`kv-uniform-catches-valueerror` lets a draft/target pair fall back to it) they get no entry in
`kv_cache_specs`, and the model runner dies on `KeyError: '<draft>.model.layers.N.self_attn.attn'`.
Side effect, harmless: `UniformTypeKVCacheSpecs.page_size_bytes` sums over `kv_cache_specs`, so the
worker's copy of the group now counts the shared layers too. Nothing sizes memory from it: block
counts, max concurrency and KV connectors are computed in the engine core before the model runner
deep-copies the config and calls this function (0.19, 0.26, 0.32, 0.33 read), and afterwards the
worker reads only per-layer specs. Shown by
tests/e2e/test_kv_sharing_hotfixes.py::test_patched_pair_gets_the_kv_cache_capacity_of_the_layers_that_own_a_cache.
The entry is the target layer's spec, so a shared layer joins the model runner's attention group of
the layer whose cache it reads: same head size and, as Gemma 4 shares only within a layer type, the
same window, which its own `impl.sliding_window` masks with (0.19-0.33 read; why blocks are never
freed on either window: `kv-uniform-catches-valueerror`).
Both model runners call this function: V1's `maybe_add_kv_sharing_layers_to_kv_cache_groups` and Model Runner V2's
`init_attn_backend` (`vllm/v1/worker/gpu/attn_utils.py`), which then reads `kv_cache_specs[layer_name]` for every layer
of the group. Its code path runs only with the hybrid manager off: the plan turns it off on V1 only, since V2's drafter
takes the draft's several KV cache groups (0.31.0-0.33.0 read, 0.33.0 shown on an H200; docs/patching.md, "Per runner
and release").
"""

from __future__ import annotations

from types import ModuleType

import libcst as cst

from specdraft.patching.anchors import find_all, insert_beside, module_names, same_code
from specdraft.patching.hotfix import Fixture, Hotfix, Inspection, Status, Trait

_ANCHOR = "tgt_kv_cache_group.layer_names.append(layer_name)"
_LOOP_TARGET = "layer_name, target_layer_name"
_GIVE_SHARED_LAYER_ITS_SPEC = """\
if isinstance(tgt_kv_cache_group.kv_cache_spec, UniformTypeKVCacheSpecs):
    tgt_kv_cache_group.kv_cache_spec.kv_cache_specs[layer_name] = (
        tgt_kv_cache_group.kv_cache_spec.kv_cache_specs[target_layer_name]
    )
"""

# The fixtures' function as vLLM 0.19.0-0.33.0 ship it, and as the fix leaves it.
_AS_RELEASED = """\
from vllm.v1.kv_cache_interface import KVCacheGroupSpec, UniformTypeKVCacheSpecs


def add_kv_sharing_layers_to_kv_cache_groups(shared_kv_cache_layers, kv_cache_groups, runner_only_attn_layers=None):
    layer_to_kv_cache_group = {}
    for kv_cache_group in kv_cache_groups:
        for layer_name in kv_cache_group.layer_names:
            layer_to_kv_cache_group[layer_name] = kv_cache_group

    for layer_name, target_layer_name in shared_kv_cache_layers.items():
        tgt_kv_cache_group = layer_to_kv_cache_group[target_layer_name]
        tgt_kv_cache_group.layer_names.append(layer_name)

        if runner_only_attn_layers is not None:
            runner_only_attn_layers.add(layer_name)
"""
_AFTER_THE_FIX = _AS_RELEASED.replace("""\
        tgt_kv_cache_group.layer_names.append(layer_name)
""", """\
        tgt_kv_cache_group.layer_names.append(layer_name)

        # specdraft-hotfix: kv-sharing-uniform-specs (shared layers read their target's spec)
        if isinstance(tgt_kv_cache_group.kv_cache_spec, UniformTypeKVCacheSpecs):
            tgt_kv_cache_group.kv_cache_spec.kv_cache_specs[layer_name] = (
                tgt_kv_cache_group.kv_cache_spec.kv_cache_specs[target_layer_name]
            )
""")


def _sets_spec_of_layer(target: cst.AssignTarget) -> bool:
    """``<...>.kv_cache_specs[layer_name] = ...``"""
    subscript = target.target
    return (
        isinstance(subscript, cst.Subscript)
        and isinstance(subscript.value, cst.Attribute)
        and subscript.value.attr.value == "kv_cache_specs"
        and len(subscript.slice) == 1 and same_code(subscript.slice[0].slice, "layer_name")
    )


def _anchor_loops(function: cst.FunctionDef) -> list[tuple[cst.For, cst.BaseStatement]]:
    """Each ``for`` loop whose body holds the anchor statement, with that statement."""
    return [
        (loop, statement)
        for loop in find_all(function, cst.For)
        for statement in loop.body.body
        if isinstance(statement, cst.SimpleStatementLine) and same_code(statement, _ANCHOR)
    ]


class KvSharingUniformSpecs(Hotfix):
    id = "kv-sharing-uniform-specs"
    title = "add_kv_sharing_layers_to_kv_cache_groups gives each KV-sharing layer its target layer's spec"
    why = (
        "shared layers get no UniformTypeKVCacheSpecs.kv_cache_specs entry and the model runner raises "
        "KeyError; upstream: vllm PR 43533 (open, one runner only), PR 43185 (closed)"
    )
    needed_for = (Trait.HYBRID_KV_CACHE_MANAGER_OFF,)
    failure = ("the model runner raises KeyError on shared layers ('<draft>.model.layers.N.self_attn.attn') "
               "at engine start-up")
    versions = ">=0.19.0"  # Gemma 4 exists from 0.19.0; still needed in 0.33.0
    function = "add_kv_sharing_layers_to_kv_cache_groups"
    modules = ("vllm.v1.worker.utils",)

    def inspect(self, function: cst.FunctionDef, module: cst.Module, context) -> Inspection:
        loops = _anchor_loops(function)
        if len(loops) != 1:
            return Inspection(Status.DRIFTED, f"expected `{_ANCHOR}` once in a for loop, found {len(loops)}")
        loop, _ = loops[0]
        if find_all(loop, cst.AssignTarget, _sets_spec_of_layer):
            return Inspection(Status.APPLIED, "the loop sets kv_cache_specs[layer_name]")
        if not same_code(loop.target, _LOOP_TARGET):
            return Inspection(Status.DRIFTED, "the loop no longer iterates `layer_name, target_layer_name`")
        if "UniformTypeKVCacheSpecs" not in module_names(module):
            return Inspection(Status.DRIFTED, "UniformTypeKVCacheSpecs is no longer imported at module level")
        return Inspection(Status.PENDING, "shared layers get no kv_cache_specs entry")

    def rewrite(self, function: cst.FunctionDef) -> cst.FunctionDef:
        ((loop, anchor),) = _anchor_loops(function)
        addition = self.marked(_GIVE_SHARED_LAYER_ITS_SPEC, "shared layers read their target's spec")
        return function.deep_replace(loop, insert_beside(loop, anchor, addition, after=True))

    @staticmethod
    def probe(module: ModuleType) -> None:
        import torch
        from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheGroupSpec, UniformTypeKVCacheSpecs

        target_spec = FullAttentionSpec(block_size=16, num_kv_heads=1, head_size=64, dtype=torch.float32)
        group = KVCacheGroupSpec(["target"], UniformTypeKVCacheSpecs(block_size=16, kv_cache_specs={"target": target_spec}))
        module.add_kv_sharing_layers_to_kv_cache_groups({"shared": "target"}, [group])
        assert group.layer_names == ["target", "shared"], f"group layers: {group.layer_names}"
        specs = group.kv_cache_spec.kv_cache_specs
        assert "shared" in specs, "the KV-sharing layer got no entry in UniformTypeKVCacheSpecs.kv_cache_specs"
        assert specs["shared"] is target_spec, "the KV-sharing layer's spec is not its target layer's spec"

    fixtures = (
        Fixture(
            name="as released (0.19.0 to 0.33.0)",
            vllm="0.33.0",
            status=Status.PENDING,
            detail="shared layers get no kv_cache_specs entry",
            before=_AS_RELEASED,
            after=_AFTER_THE_FIX,
        ),
        Fixture(
            name="upstream sets the shared layer's spec itself",
            vllm="0.33.0",
            status=Status.FIXED_UPSTREAM,
            detail="the loop sets kv_cache_specs[layer_name]",
            before="""\
from vllm.v1.kv_cache_interface import UniformTypeKVCacheSpecs


def add_kv_sharing_layers_to_kv_cache_groups(shared_kv_cache_layers, kv_cache_groups):
    layer_to_kv_cache_group = {n: g for g in kv_cache_groups for n in g.layer_names}
    for layer_name, target_layer_name in shared_kv_cache_layers.items():
        tgt_kv_cache_group = layer_to_kv_cache_group[target_layer_name]
        tgt_kv_cache_group.layer_names.append(layer_name)
        spec = tgt_kv_cache_group.kv_cache_spec
        if isinstance(spec, UniformTypeKVCacheSpecs):
            spec.kv_cache_specs[layer_name] = spec.kv_cache_specs[target_layer_name]
""",
        ),
        Fixture(
            name="layers appended somewhere else",
            vllm="0.33.0",
            status=Status.DRIFTED,
            detail="expected `tgt_kv_cache_group.layer_names.append(layer_name)` once in a for loop, found 0",
            before="""\
from vllm.v1.kv_cache_interface import UniformTypeKVCacheSpecs


def add_kv_sharing_layers_to_kv_cache_groups(shared_kv_cache_layers, kv_cache_groups):
    for layer_name, target_layer_name in shared_kv_cache_layers.items():
        group_of(target_layer_name, kv_cache_groups).add(layer_name)
""",
        ),
        Fixture(
            name="UniformTypeKVCacheSpecs not imported",
            vllm="0.33.0",
            status=Status.DRIFTED,
            detail="UniformTypeKVCacheSpecs is no longer imported at module level",
            before="""\
def add_kv_sharing_layers_to_kv_cache_groups(shared_kv_cache_layers, kv_cache_groups):
    layer_to_kv_cache_group = {n: g for g in kv_cache_groups for n in g.layer_names}
    for layer_name, target_layer_name in shared_kv_cache_layers.items():
        tgt_kv_cache_group = layer_to_kv_cache_group[target_layer_name]
        tgt_kv_cache_group.layer_names.append(layer_name)
""",
        ),
    )
