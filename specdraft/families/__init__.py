"""Model families: what a checkpoint's config.json says about its tokens, chat template, parsers and layers.

- ``family_of(config)`` is the family a config.json (or a bare text config) belongs to, or None;
- ``ModelFamily`` is the contract a family fills in (``kind``, ``template_variant``, ``kv_layers``,
  ``count_parameters``, ``quantization_exclusions``, parser names, special tokens, base repos);
- ``specdraft.families.gemma4`` holds Gemma 4's facts, including the marker tokens the chat-template
  rules and the test tokenizer use.

Adding a family is one module defining a ``ModelFamily`` instance, listed in ``FAMILIES`` (shipped) or
passed to ``register`` (a family defined outside specdraft), with its templates and its speed tables
(``costs_file``, read by ``specdraft.families._costs``) and served speeds by context length (``contexts_file``,
``specdraft.families._contexts``).
"""

from __future__ import annotations

from typing import Mapping

from specdraft.families._contexts import ContextReading, FamilyContexts
from specdraft.families._costs import DefaultK, FamilyCosts
from specdraft.families._family import LayerKV, ModelFamily, ParameterCount, text_config
from specdraft.families.gemma4 import GEMMA4

FAMILIES: list[ModelFamily] = [GEMMA4]
"""The families specdraft plans, in the order ``family_of`` asks them; ``register`` adds one."""

DEFAULT_FAMILY: ModelFamily = GEMMA4
"""The family whose rules read a config no family claims. Gemma 4's layer rules need keys only Gemma 4
configs carry (``num_kv_shared_layers``, ``global_head_dim``, ``attention_k_eq_v``); without them they
read a config the plain transformers way, so specdraft plans such a model as before."""


def register(family: ModelFamily) -> ModelFamily:
    """Add ``family`` to ``FAMILIES`` (after the shipped ones); ``ValueError`` when its name or one of its
    ``model_types`` is another family's."""
    for known in FAMILIES:
        clash = known.model_types & family.model_types
        if known.name == family.name or clash:
            raise ValueError(f"family {family.name!r} clashes with {known.name!r} "
                             f"({'its name' if known.name == family.name else 'model_type ' + ', '.join(sorted(clash))})")
    FAMILIES.append(family)
    return family


def unregister(family: ModelFamily) -> None:
    """Remove a family ``register`` added (the shipped ones stay)."""
    if family is not DEFAULT_FAMILY and family in FAMILIES:
        FAMILIES.remove(family)


def family_of(config: Mapping) -> ModelFamily | None:
    """The family ``config`` belongs to (by ``model_type``, top level or ``text_config``), None when unknown."""
    return next((family for family in FAMILIES if family.is_member(config)), None)


def rules_for(config: Mapping) -> ModelFamily:
    """The family whose layer and template rules apply to ``config``: its own, else ``DEFAULT_FAMILY``."""
    return family_of(config) or DEFAULT_FAMILY


def family_with_layer_formula(config: Mapping) -> ModelFamily | None:
    """The family that can count the parameters of ``config``'s language model, None when none can."""
    return next((family for family in FAMILIES if family.has_layer_formula(config)), None)


__all__ = ["DEFAULT_FAMILY", "DefaultK", "FamilyCosts", "FAMILIES", "GEMMA4", "LayerKV", "ModelFamily", "ParameterCount", "family_of",
           "family_with_layer_formula", "register", "rules_for", "text_config", "unregister"]
