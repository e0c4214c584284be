"""Reads ``data/release_support.json``'s facts from one vLLM release tree (statically: vLLM is never imported);
``specdraft/planning/knowledge/release_support.py`` says which fact is read where. Run

    python -m tools.release_tables.release_support VERSION=TREE ...

to print the table's rules for unpacked release trees, oldest first.
"""

from __future__ import annotations

import ast
from pathlib import Path

from specdraft.planning.knowledge.release_support import METHOD_OPTION_PREFIXES, ReleaseSupport
from specdraft.planning.facts.vllm_arguments import _package_dir, _parse

GEMMA4_MTP = "gemma4_mtp"


def _literal_aliases(tree: ast.Module) -> dict[str, ast.expr]:
    """Module-level ``Name = Literal[...]`` assignments."""
    aliases = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            if isinstance(value, ast.Subscript) and ast.unparse(value.value) in ("Literal", "typing.Literal"):
                aliases[node.targets[0].id] = value.slice
    return aliases


def _expand_literal(name: str, aliases: dict[str, ast.expr]) -> list[str]:
    """The strings of literal alias ``name``, nested aliases expanded in place."""
    found: list[str] = []
    entry = aliases.get(name)
    items = entry.elts if isinstance(entry, ast.Tuple) else [entry] if entry is not None else []
    for item in items:
        if isinstance(item, ast.Constant) and isinstance(item.value, str):
            found.append(item.value)
        elif isinstance(item, ast.Name):
            found += _expand_literal(item.id, aliases)
    return found


def _assistant_model_types(tree: ast.Module) -> list[str]:
    """The strings ``hf_config.model_type`` is compared with right before being set to ``gemma4_mtp``."""
    found: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
            continue
        sets_mtp = any(isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant) and s.value.value == GEMMA4_MTP
                       and ast.unparse(s.targets[0]).endswith("model_type") for s in node.body)
        if sets_mtp and ast.unparse(node.test.left).endswith("model_type"):
            for comparator in node.test.comparators:
                found += [c.value for c in ast.walk(comparator)
                          if isinstance(c, ast.Constant) and isinstance(c.value, str)]
    return found


def _gemma4_architectures(tree: ast.Module) -> list[str]:
    return sorted({key.value for node in ast.walk(tree) if isinstance(node, ast.Dict) for key in node.keys
                   if isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value.startswith("Gemma4")})


def _cudagraph_ceiling(tree: ast.Module) -> int | None:
    """``N`` of ``min(max_num_seqs * decode_query_len * 2, N)``; a name bound to ``A if blackwell else N``."""
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef) or function.name != "_set_cudagraph_sizes":
            continue
        constants = {ast.unparse(n.targets[0]): n.value for n in ast.walk(function)
                     if isinstance(n, ast.Assign) and len(n.targets) == 1}
        for call in ast.walk(function):
            if (isinstance(call, ast.Call) and ast.unparse(call.func) == "min" and len(call.args) == 2
                    and "decode_query_len" in ast.unparse(call.args[0])):
                bound = call.args[1]
                bound = constants.get(bound.id, bound) if isinstance(bound, ast.Name) else bound
                bound = bound.orelse if isinstance(bound, ast.IfExp) else bound
                if isinstance(bound, ast.Constant) and isinstance(bound.value, int):
                    return bound.value
    return None


def _registered_speculators(tree: ast.Module) -> list[str]:
    """The names of ``@register_speculator("name")`` decorators."""
    return [decorator.args[0].value for node in tree.body if isinstance(node, ast.FunctionDef)
            for decorator in node.decorator_list
            if isinstance(decorator, ast.Call) and ast.unparse(decorator.func) == "register_speculator"
            and decorator.args and isinstance(decorator.args[0], ast.Constant)]


def _eagle3_classes(trees: list[ast.Module]) -> set[str]:
    """The classes of ``trees`` that list ``SupportsEagle3`` among their bases."""
    return {node.name for tree in trees for node in tree.body if isinstance(node, ast.ClassDef)
            and any(ast.unparse(base).endswith("SupportsEagle3") for base in node.bases)}


def _method_options(speculative: ast.Module, methods: set[str]) -> dict[str, tuple[str, ...]]:
    """``SpeculativeConfig``'s annotated fields with each draft-less method's prefix."""
    fields = [node.target.id for cls in speculative.body if isinstance(cls, ast.ClassDef)
              and cls.name == "SpeculativeConfig" for node in cls.body
              if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)]
    return {method: tuple(f for f in fields if f.startswith(prefix))
            for method, prefix in METHOD_OPTION_PREFIXES.items() if method in methods}


def read_release_support(vllm_root: Path) -> ReleaseSupport | None:
    """The facts of the vLLM source tree at ``vllm_root`` (package dir or site-packages); None if unreadable."""
    package = _package_dir(Path(vllm_root))
    speculative = _parse(package / "config" / "speculative.py")
    registry = _parse(package / "model_executor" / "models" / "registry.py")
    cache = _parse(package / "config" / "cache.py")
    config = _parse(package / "config" / "vllm.py")
    speculators = _parse(package / "transformers_utils" / "configs" / "speculators" / "algos.py")
    models = [_parse(path) for path in sorted((package / "model_executor" / "models").glob("gemma4*.py"))]
    if None in (speculative, registry, cache, config, speculators) or None in models:
        return None
    aliases = _literal_aliases(speculative)
    mtp_types = _expand_literal("MTPModelTypes", aliases)
    methods = {m for m in _expand_literal("SpeculativeMethod", aliases) if not m.endswith("_mtp")}
    architectures = _gemma4_architectures(registry)
    return ReleaseSupport(
        speculative_methods=tuple(sorted(methods)),
        gemma4_assistant_model_types=tuple(sorted(set(_assistant_model_types(speculative)))
                                           if GEMMA4_MTP in mtp_types else ()),
        gemma4_architectures=tuple(architectures),
        kv_cache_dtypes=tuple(_expand_literal("CacheDType", _literal_aliases(cache))),
        cudagraph_capture_ceiling=_cudagraph_ceiling(config),
        speculators_types=tuple(sorted(set(_registered_speculators(speculators)))),
        gemma4_eagle3_architectures=tuple(a for a in architectures if a in _eagle3_classes(models)),
        method_options=_method_options(speculative, methods),
        rejection_sample_methods=tuple(_expand_literal("RejectionSampleMethod", aliases)),
    )


if __name__ == "__main__":
    import json
    import sys

    from tools.release_tables import table_rules

    trees = dict(arg.split("=", 1) for arg in sys.argv[1:])
    print(json.dumps(table_rules({v: Path(t) for v, t in trees.items()}, read_release_support), indent=2))
