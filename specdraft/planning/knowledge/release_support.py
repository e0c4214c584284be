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
- ``rejection_sample_methods``: the ``RejectionSampleMethod`` literal of ``vllm/config/speculative.py`` (the
  ``rejection_sample_method`` values ``--speculative-config`` accepts; ``fly``, lossy, from 0.33.0);
- ``method_options``: per method without a draft checkpoint, the ``SpeculativeConfig`` fields that tune it
  (``prompt_lookup_*`` for ``ngram`` / ``ngram_gpu``, ``suffix_decoding_*`` for ``suffix``).

The shipped table ``data/release_support.json`` holds these per release 0.19.0-0.33.0; the reader that derives
it from a release's tree is ``tools/release_tables/release_support.py`` (not shipped: ``python -m
tools.release_tables.release_support VERSION=TREE ...`` prints the rules), and
``tests/planning/test_release_support.py`` re-derives the table from real release trees with it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from pydantic import BaseModel, ConfigDict

from specdraft.planning.knowledge.release_tables import ReleaseRule, ReleaseTable, data_text

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
    rejection_sample_methods: tuple[str, ...]


# The SpeculativeConfig fields that belong to a method without a draft checkpoint, by name prefix.
METHOD_OPTION_PREFIXES = {"ngram": "prompt_lookup_", "ngram_gpu": "prompt_lookup_", "suffix": "suffix_decoding_"}


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
