"""`is_kv_cache_spec_uniform` answers "not uniform" when `merge` raises ValueError.

With `--disable-hybrid-kv-cache-manager`, a Gemma 4 E2B/E4B draft beside a 31B target promotes
sliding layers with two different windows to full attention. `FullAttentionSpec.merge` then raises
`ValueError` from `merge_window_sizes`, but the function catches only `AssertionError`, so engine
start-up dies instead of falling back to a `UniformTypeKVCacheSpecs` group.
"""

from __future__ import annotations

from types import ModuleType

import libcst as cst
import libcst.matchers as m

from specdraft.patching.hotfix import Finding, Fixture, Hotfix, Status, normalised

_MERGE_CALL = m.Call(func=m.Attribute(attr=m.Name("merge")))
_CATCH_ALL = {"ValueError", "Exception", "BaseException", "<bare except>"}


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


def _answers_false(handler: cst.ExceptHandler) -> bool:
    return normalised(cst.Module(body=handler.body.body).code) == normalised("return False")


class KvUniformCatchesValueError(Hotfix):
    id = "kv-uniform-catches-valueerror"
    title = "is_kv_cache_spec_uniform answers False instead of letting ValueError escape from merge"
    why = (
        "FullAttentionSpec.merge raises ValueError (merge_window_sizes) for different sliding windows, "
        "and the function catches only AssertionError; no upstream fix yet (see vllm PR 55187, open)"
    )
    versions = ">=0.19.0"  # Gemma 4 exists from 0.19.0; still needed in 0.33.0
    function = "is_kv_cache_spec_uniform"
    modules = ("vllm.v1.core.kv_cache_planning", "vllm.v1.core.kv_cache_utils")  # moved in 0.33.0

    def inspect(self, function: cst.FunctionDef, module: cst.Module) -> Finding:
        guarded = [t for t in m.findall(function, m.Try()) if m.findall(t.body, _MERGE_CALL)]
        if len(guarded) != 1:
            return Finding(Status.DRIFTED, f"expected one `try:` around `.merge(...)`, found {len(guarded)}")
        handlers = [h for h in guarded[0].handlers if _answers_false(h)]
        if any(_caught(h) & _CATCH_ALL for h in handlers):
            return Finding(Status.APPLIED, "ValueError from merge is caught and answers False")
        anchors = [h for h in handlers if _caught(h) == {"AssertionError"}]
        if len(anchors) != 1 or len(guarded[0].handlers) != 1:
            return Finding(Status.DRIFTED, "expected the only handler to be `except AssertionError: return False`")
        return Finding(Status.PENDING, "`except AssertionError:` lets ValueError escape")

    def rewrite(self, function: cst.FunctionDef) -> cst.FunctionDef:
        (guarded,) = [t for t in m.findall(function, m.Try()) if m.findall(t.body, _MERGE_CALL)]
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
            name="as released (0.19.0 to 0.33.0)",
            status=Status.PENDING,
            before="""\
def is_kv_cache_spec_uniform(kv_cache_spec):
    if not kv_cache_spec:
        return True
    try:
        kv_cache_spec_values = list(kv_cache_spec.values())
        _ = kv_cache_spec_values[0].merge(kv_cache_spec_values)
    except AssertionError:
        return False
    return True
""",
            after="""\
def is_kv_cache_spec_uniform(kv_cache_spec):
    if not kv_cache_spec:
        return True
    try:
        kv_cache_spec_values = list(kv_cache_spec.values())
        _ = kv_cache_spec_values[0].merge(kv_cache_spec_values)
    # specdraft-hotfix: kv-uniform-catches-valueerror (different windows are not uniform)
    except (AssertionError, ValueError):
        return False
    return True
""",
        ),
        Fixture(
            name="upstream catches ValueError itself",
            status=Status.FIXED_UPSTREAM,
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
            name="upstream catches every Exception",
            status=Status.FIXED_UPSTREAM,
            before="""\
def is_kv_cache_spec_uniform(kv_cache_spec):
    try:
        specs = list(kv_cache_spec.values())
        specs[0].merge(specs)
    except Exception:
        return False
    return True
""",
        ),
        Fixture(
            name="merge errors changed to RuntimeError (like vllm PR 55187)",
            status=Status.DRIFTED,
            before="""\
def is_kv_cache_spec_uniform(kv_cache_spec):
    try:
        specs = list(kv_cache_spec.values())
        specs[0].merge(specs)
    except (AssertionError, RuntimeError):
        return False
    return True
""",
        ),
        Fixture(
            name="no merge inside a try any more",
            status=Status.DRIFTED,
            before="""\
def is_kv_cache_spec_uniform(kv_cache_spec):
    return len({type(spec) for spec in kv_cache_spec.values()}) <= 1
""",
        ),
    )
