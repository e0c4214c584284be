"""Speculators-format drafters (EAGLE-3, DFlash, DSpark; https://github.com/vllm-project/speculators): what their
``config.json`` says and whether it fits the target beside it.

A speculators checkpoint names the model it was trained on in ``speculators_config.verifier`` and carries
its drafter's shape in ``transformer_layer_config``; vLLM maps ``speculators_model_type`` to a method
(``SpeculatorsConfig.build_vllm_speculative_config``: ``peagle`` -> ``eagle3``, ``dflash2`` -> ``dflash``,
``dspark`` -> ``dspark``). An EAGLE-3, DFlash or DSpark drafter reads the target's hidden states at
``eagle_aux_hidden_state_layer_ids`` / ``aux_hidden_state_layer_ids``, so it only works beside the verifier it
was trained for.

vLLM loads a speculators ``dspark`` config as ``Qwen3DSparkModel`` in every release that registers the type
(``update_dspark`` in vllm/transformers_utils/configs/speculators/algos.py, 0.25.0-0.33.0); ``Gemma4DSparkModel``
(vllm/model_executor/models/gemma4_dspark.py, 0.26.0 on) serves a Gemma 4 DSpark drafter in its own format: a
config whose ``architectures`` name that class, with ``target_layer_ids`` and ``block_size`` at its top level.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict

from specdraft.families import rules_for
from specdraft.findings import Finding
from specdraft.checkpoints import Checkpoint

# vLLM's renaming of speculators types to methods (vllm/transformers_utils/configs/speculators/base.py).
_METHOD_OF_TYPE = {"peagle": "eagle3", "dflash2": "dflash"}


class Speculator(BaseModel):
    """The parts of a speculators ``config.json`` a plan needs."""

    model_config = ConfigDict(frozen=True)

    speculators_type: str
    """``speculators_model_type``: what vLLM's speculators loader must know."""
    method: str
    """The vLLM method it serves as."""
    verifier: str | None
    """``speculators_config.verifier.name_or_path``: the model it was trained beside."""
    speculative_tokens: int | None
    """The first proposal method's ``speculative_tokens`` (vLLM's K when none is given)."""
    hidden_size: int | None
    """The target hidden width it reads (``target_hidden_size``, else the drafter layer's ``hidden_size``)."""
    aux_layer_ids: tuple[int, ...]
    """The target layers whose hidden states it reads."""
    speculators_format: bool = True
    """False for a DFlash checkpoint in its own format (a ``dflash_config``, e.g. z-lab's) or a Gemma 4 DSpark
    drafter in its own (``Gemma4DSparkModel``), which vLLM reads without its speculators loader."""
    architecture: str | None = None
    """The drafter class a checkpoint in its own format names (``Gemma4DSparkModel``): the release must have it."""


def _mapping(value: object) -> Mapping:
    return value if isinstance(value, Mapping) else {}


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def read_speculator(config: Mapping) -> Speculator | None:
    """The speculator described by ``config`` (None: not a speculators-format checkpoint); a malformed field
    reads as unknown (None or empty), never as an error here: vLLM's loader and the checks judge it."""
    kind = config.get("speculators_model_type")
    if not isinstance(kind, str):
        return _native_dspark(config) or _native_dflash(config)
    spec = _mapping(config.get("speculators_config"))
    proposals = spec.get("proposal_methods")
    first = _mapping(proposals[0]) if isinstance(proposals, list) and proposals else {}
    verifier = _mapping(spec.get("verifier")).get("name_or_path")
    aux = config.get("eagle_aux_hidden_state_layer_ids") or config.get("aux_hidden_state_layer_ids")
    return Speculator(
        speculators_type=kind, method=_METHOD_OF_TYPE.get(kind, kind),
        verifier=verifier if isinstance(verifier, str) else None,
        speculative_tokens=_int(first.get("speculative_tokens")),
        hidden_size=_int(config.get("target_hidden_size")) or _int(
            _mapping(config.get("transformer_layer_config")).get("hidden_size")),
        aux_layer_ids=tuple(i for i in aux if _int(i) is not None or i == 0) if isinstance(aux, list) else (),
    )


def _native_dflash(config: Mapping) -> Speculator | None:
    """A DFlash drafter in its own format: ``dflash_config.target_layer_ids`` (vllm/config/speculative.py reads it
    there for ``method: dflash``), its own layers as wide as the target's."""
    dflash = config.get("dflash_config")
    if not isinstance(dflash, Mapping):
        return None
    ids = dflash.get("target_layer_ids")
    return Speculator(speculators_type="dflash", method="dflash", verifier=None, speculative_tokens=None,
                      hidden_size=_int(config.get("hidden_size")), speculators_format=False,
                      aux_layer_ids=tuple(i for i in ids if isinstance(i, int)) if isinstance(ids, list) else ())


GEMMA4_DSPARK = "Gemma4DSparkModel"


def _native_dspark(config: Mapping) -> Speculator | None:
    """A Gemma 4 DSpark drafter in its own format (``architectures: [Gemma4DSparkModel]``): vLLM reads its
    zero-based ``target_layer_ids`` (or ``dspark_target_layer_ids``) and, with no K given, drafts ``block_size``
    tokens (``SpeculativeConfig.__post_init__``, ``use_dspark()``)."""
    architectures = config.get("architectures")
    if not isinstance(architectures, list) or GEMMA4_DSPARK not in architectures:
        return None
    ids = config.get("dspark_target_layer_ids") or config.get("target_layer_ids")
    return Speculator(speculators_type="dspark", method="dspark", verifier=None,
                      speculative_tokens=_int(config.get("block_size")) or _int(config.get("dspark_block_size")),
                      hidden_size=_int(config.get("hidden_size")), speculators_format=False, architecture=GEMMA4_DSPARK,
                      aux_layer_ids=tuple(i for i in ids if isinstance(i, int)) if isinstance(ids, list) else ())


# Name markers of published speculators, most specific first (".dflash2" also contains "dflash").
_NAMED_TYPES = ("dflash2", "dflash", "dspark", "eagle3")


def speculator_from_name(ref: str) -> Speculator | None:
    """What a speculator's repo name says (``RedHatAI/gemma-4-31B-it-speculator.eagle3``): its speculators type and
    method, and its verifier where the name carries a Gemma 4 size; None for a name that marks no speculator."""
    name = ref.lower()
    kind = next((k for k in _NAMED_TYPES if k in name), None)
    if kind is None:
        return None
    return Speculator(speculators_type=kind, method=_METHOD_OF_TYPE.get(kind, kind),
                      verifier=rules_for({}).base_repo_for(ref), speculative_tokens=None, hidden_size=None,
                      aux_layer_ids=())


def speculator_of(checkpoint: Checkpoint) -> Speculator | None:
    """The speculator a drafter checkpoint is: its config where it was read (or shipped), else what its name says."""
    if checkpoint.source in ("local", "hf-cache") or "speculators_model_type" in checkpoint.config:
        return read_speculator(checkpoint.config)
    return speculator_from_name(checkpoint.ref)


def _base(ref: str | None, config: Mapping | None = None) -> str | None:
    return rules_for(config or {}).base_repo_for(ref) if ref else None


def _shape_problems(speculator: Speculator, target_text: Mapping) -> list[str]:
    problems = []
    width, layers = target_text.get("hidden_size"), target_text.get("num_hidden_layers")
    if speculator.hidden_size and width and speculator.hidden_size != width:
        problems.append(f"it reads hidden states {speculator.hidden_size} wide, the target's are {width}")
    # speculators number DFlash's and DSpark's layers from 1 (vLLM subtracts one), EAGLE-3's, dflash_config's and
    # Gemma4DSparkModel's target_layer_ids from 0:
    # an id above the target's layer count is out of range either way
    beyond = [i for i in speculator.aux_layer_ids if layers and i > layers]
    if beyond:
        problems.append(f"it reads layers {', '.join(map(str, beyond))}; the target has {layers}")
    return problems


def check_verifier(target_ref: str, target_config: Mapping, speculator_ref: str, speculator: Speculator) -> Finding:
    """A speculator trained beside another model than the target drafts for hidden states it never saw: an
    error when its verifier names another size or its shape does not fit the target's."""
    verifier = speculator.verifier or "(no verifier named)"
    ours, theirs = _base(target_ref, target_config), _base(speculator.verifier)
    text = target_config.get("text_config") or target_config
    problems = _shape_problems(speculator, text) if text else []
    if ours and theirs and ours != theirs:
        named = speculator.verifier if speculator.verifier == theirs else f"{speculator.verifier} ({theirs})"
        problems.insert(0, f"its verifier is {named}, the target is {ours}")
    if problems:
        return Finding(level="error", check="speculator-verifier",
                       message=f"speculator {speculator_ref} was trained beside {verifier}, not {target_ref}: "
                               + "; ".join(problems),
                       hint=f"use the speculator published for {ours or target_ref}, or serve {verifier}")
    if not text and not (ours and theirs):
        return Finding(level="warning", check="speculator-verifier",
                       message=f"speculator {speculator_ref} names verifier {verifier}; the target {target_ref} is "
                               "not on this machine, so its shape was not compared",
                       hint="download the target (or pass its local directory) to check the pairing")
    return Finding(level="ok", check="speculator-verifier",
                   message=f"{speculator_ref} ({speculator.speculators_type}) was trained beside {verifier}, "
                           f"which fits {target_ref}")

