"""What one vLLM release can serve for a Gemma 4 pairing, read statically from its source.

Four facts per release, each from one place in the tree (vLLM is never imported):

- ``speculative_methods``: the ``SpeculativeMethod`` literal of ``vllm/config/speculative.py``, its nested
  literal aliases (``EagleModelTypes``, ...) expanded, less other families' MTP types (``deepseek_mtp``, ...:
  ``method: mtp`` covers Gemma 4's);
- ``gemma4_assistant_model_types``: the draft ``model_type`` values ``SpeculativeConfig`` rewrites to
  ``gemma4_mtp`` (Google's MTP assistants, ``method: mtp``); empty where the release has no Gemma 4 MTP;
- ``gemma4_architectures``: the ``Gemma4*`` keys of ``vllm/model_executor/models/registry.py``;
- ``kv_cache_dtypes``: the ``CacheDType`` literal of ``vllm/config/cache.py`` (``--kv-cache-dtype`` choices);
- ``cudagraph_capture_ceiling``: the default largest CUDA-graph batch in tokens (``min(max_num_seqs *
  decode_query_len * 2, N)`` in ``VllmConfig._set_cudagraph_sizes``, the non-Blackwell ``N``); a decode step of
  ``num_speculative_tokens + 1`` tokens above it is refused ("No valid cudagraph sizes after rounding");
- ``speculators_types``: the ``speculators_model_type`` values vLLM loads (``@register_speculator(...)`` in
  ``vllm/transformers_utils/configs/speculators/algos.py``): which speculators-format checkpoints it serves;
- ``gemma4_eagle3_architectures``: the Gemma 4 model classes that implement ``SupportsEagle3`` (bases in
  ``vllm/model_executor/models/gemma4*.py``): only they give EAGLE-3 and DFlash drafters the target's hidden
  states ("Model does not support EAGLE3 interface but aux_hidden_state_outputs was requested" otherwise);
- ``method_options``: per method without a draft checkpoint, the ``SpeculativeConfig`` fields that tune it
  (``prompt_lookup_*`` for ``ngram`` / ``ngram_gpu``, ``suffix_decoding_*`` for ``suffix``).

The shipped table ``data/release_support.json`` holds these per release 0.19.0-0.33.0 (its rules:
``python -m specdraft.planning._release_support VERSION=TREE ...`` prints them for unpacked release trees);
``tests/planning/test_release_support.py`` re-derives it from real release trees.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from specdraft.planning._release_tables import ReleaseRule, ReleaseTable, data_text
from specdraft.planning._vllm_flags import _package_dir, _parse

GEMMA4_MTP = "gemma4_mtp"


class ReleaseSupport(BaseModel):
    """One release's Gemma 4 speculative-decoding support (see the module docstring for where each is read)."""

    model_config = ConfigDict(frozen=True)

    speculative_methods: tuple[str, ...]
    gemma4_assistant_model_types: tuple[str, ...]
    gemma4_architectures: tuple[str, ...]
    kv_cache_dtypes: tuple[str, ...]
    cudagraph_capture_ceiling: int | None
    speculators_types: tuple[str, ...]
    gemma4_eagle3_architectures: tuple[str, ...]
    method_options: dict[str, tuple[str, ...]]


# The SpeculativeConfig fields that belong to a method without a draft checkpoint, by name prefix.
METHOD_OPTION_PREFIXES = {"ngram": "prompt_lookup_", "ngram_gpu": "prompt_lookup_", "suffix": "suffix_decoding_"}


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
    )


class ReleaseSupportRule(ReleaseRule, ReleaseSupport):
    read: list[str]
    """The releases whose source was read for this rule."""


@lru_cache(maxsize=None)
def release_support_table() -> ReleaseTable[ReleaseSupportRule]:
    """``data/release_support.json``."""
    return ReleaseTable[ReleaseSupportRule].model_validate_json(data_text("release_support.json"))


def _facts(rule: ReleaseSupportRule) -> ReleaseSupport:
    return ReleaseSupport(**rule.model_dump(include=set(ReleaseSupport.model_fields)))


def release_support(version: str | None) -> ReleaseSupport | None:
    """The shipped facts for ``version``; None for an unknown release or one outside 0.19.0-0.33.0."""
    rule = release_support_table().rule_for(version)
    return _facts(rule) if rule is not None else None


def every_release() -> list[tuple[str, ReleaseSupport]]:
    """(first release read, its facts) for every rule of the table, oldest first."""
    return [(rule.read[0], _facts(rule)) for rule in release_support_table().rules]


def first_release(has: Callable[[ReleaseSupport], bool]) -> str | None:
    """The earliest release in the table whose facts satisfy ``has``; None when none does."""
    return next((version for version, support in every_release() if has(support)), None)


def table_rules(trees: dict[str, Path], read: Callable[[Path], BaseModel | None] = None) -> list[dict]:
    """A per-release table's rules for release trees given oldest first (``read``: one tree's facts, by default
    ``read_release_support``): consecutive releases with equal facts share one."""
    groups: list[tuple[list[str], dict]] = []
    for version, tree in trees.items():
        support = (read or read_release_support)(tree)
        if support is None:
            raise SystemExit(f"{tree}: no readable vLLM source")
        facts = support.model_dump(mode="json")
        if groups and groups[-1][1] == facts:
            groups[-1][0].append(version)
        else:
            groups.append(([version], facts))
    rules = []
    for index, (read, facts) in enumerate(groups):
        if index + 1 < len(groups):
            upper = groups[index + 1][0][0]
        else:
            major, minor = read[-1].split(".")[:2]
            upper = f"{major}.{int(minor) + 1}.0"
        rules.append({"versions": f">={read[0]},<{upper}", "read": read, **facts})
    return rules


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(table_rules(dict(arg.split("=", 1) for arg in sys.argv[1:])), indent=2))
