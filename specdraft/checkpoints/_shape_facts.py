"""Shape facts shipped with specdraft, for checkpoints that are neither local nor in the HF cache.

``data/models/<owner>__<name>.json`` are Gemma 4 config.json reconstructions (checked against the
hub's parameter totals) and the published speculators' config.json (RedHatAI's EAGLE-3 and DFlash drafters for
the 31B verbatim, its DSpark drafter reconstructed field by field and checked against the hub's size; sources in
benchmarks/gpu/configs/README.md); ``data/nvfp4_checkpoints.json`` describes NVFP4 repackagings by their base
model; ``data/kv_and_params.json`` holds parameter counts. A repo id resolves, in order, to its own
config, to its base model's config via the NVFP4 table, or to the Gemma 4 size named in the id.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from pydantic import BaseModel, ConfigDict, TypeAdapter

from specdraft.checkpoints._speculator_params import speculator_parameters
from specdraft.families import FAMILIES, rules_for

_FOOTPRINT = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*(GiB|GB)")


@dataclass(frozen=True)
class ShapeFacts:
    """A config.json from the shipped facts, and how it was chosen for the requested repo id."""

    repo_id: str
    config: dict
    basis: str
    """Which shipped fact stands in, in words, for the findings."""
    quant_method: str | None = None
    quant_algo: str | None = None
    """``NVFP4`` for an entry of the NVFP4 table (``data/nvfp4_checkpoints.json``)."""
    weight_bytes: int | None = None
    weight_bytes_basis: str | None = None
    language_model_params: int | None = None
    hf_params: int | None = None


class ParameterCounts(BaseModel):
    """One entry of ``data/kv_and_params.json`` (the KV figures there are documentation and tests' reference)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    language_model_params: int | None = None
    hf_params: int | None = None


class QuantizationRecord(BaseModel):
    """What a repackaging's quantization config says (seen) or its card reports, as far as planning reads it."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    quant_method: str | None = None
    format: str | None = None

    @property
    def method(self) -> str | None:
        """The ``--quantization`` value: the first word of ``quant_method``, else of ``format``."""
        text = self.quant_method or self.format
        return text.split()[0] if text else None


class Repackaging(BaseModel):
    """One entry of ``data/nvfp4_checkpoints.json``: an NVFP4 checkpoint described by its base model."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    base: str
    """The base repo id, sometimes followed by a remark in words."""
    architecture: str = ""
    quantization_config_seen: QuantizationRecord | None = None
    quantization_reported: QuantizationRecord | None = None
    footprint_reported: str | None = None

    @property
    def base_repo(self) -> str:
        return self.base.split()[0]

    @property
    def quant_method(self) -> str | None:
        seen, reported = self.quantization_config_seen, self.quantization_reported
        return (seen.method if seen else None) or (reported.method if reported else None)

    def footprint(self) -> tuple[int, str] | None:
        """Bytes and basis of the reported footprint, when it gives one in GiB or GB."""
        match = _FOOTPRINT.search(self.footprint_reported or "")
        if not match:
            return None
        scale = 2**30 if match.group(2) == "GiB" else 10**9
        return int(float(match.group(1)) * scale), f"reported footprint ({self.footprint_reported})"


def _data(name: str) -> resources.abc.Traversable:
    return resources.files("specdraft.checkpoints").joinpath("data", name)


@lru_cache(maxsize=None)
def _model_files() -> dict[str, str]:
    """Lower-cased repo id -> file name, for every shipped config."""
    files = {}
    for entry in _data("models").iterdir():
        if entry.name.endswith(".json"):
            files[entry.name[: -len(".json")].replace("__", "/").lower()] = entry.name
    return files


@lru_cache(maxsize=None)
def _json(name: str) -> dict:
    return json.loads(_data(name).read_text())


@lru_cache(maxsize=None)
def _repackagings() -> dict[str, tuple[str, Repackaging]]:
    """``data/nvfp4_checkpoints.json``: lower-cased repo id -> (repo id, entry); keys starting with ``_`` are notes."""
    entries = {key: entry for key, entry in _json("nvfp4_checkpoints.json").items() if not key.startswith("_")}
    return {key.lower(): (key, value) for key, value in
            TypeAdapter(dict[str, Repackaging]).validate_python(entries).items()}


@lru_cache(maxsize=None)
def _parameter_counts() -> dict[str, ParameterCounts]:
    return TypeAdapter(dict[str, ParameterCounts]).validate_python(_json("kv_and_params.json"))


def _model_config(repo_id: str) -> tuple[str, dict] | None:
    name = _model_files().get(repo_id.lower())
    if name is None:
        return None
    return name[: -len(".json")].replace("__", "/"), _json(f"models/{name}")


def _as_text_only(config: dict) -> dict:
    """The config of a repackaging that stripped the vision/audio towers (Gemma 4: Gemma4ForCausalLM)."""
    stripped = {k: v for k, v in config.items() if k not in ("vision_config", "audio_config")}
    stripped["architectures"] = [rules_for(config).text_only_architecture]
    return stripped


def _facts(repo_id: str, key: str, config: dict, basis: str, **found) -> ShapeFacts:
    """Shape facts from the shipped config ``key``, with its parameter counts."""
    counts = _parameter_counts().get(key, ParameterCounts())
    # a speculator's count comes from its config (kv_and_params.json holds the Gemma 4 models')
    params = counts.language_model_params or speculator_parameters(config)
    return ShapeFacts(repo_id=repo_id, config=config, basis=basis, language_model_params=params,
                      hf_params=counts.hf_params, **found)


def _from_repackaging(repo_id: str) -> ShapeFacts | None:
    """Facts of an NVFP4 repackaging from its base model's config and its table entry."""
    key, entry = _repackagings().get(repo_id.lower(), (None, None))
    base = _model_config(entry.base_repo) if entry is not None else None
    if base is None:
        return None
    base_key, config = base
    text_only = entry.architecture.startswith(rules_for(config).text_only_architecture)
    footprint = entry.footprint()
    return _facts(repo_id, base_key, _as_text_only(config) if text_only else config,
                  f"shipped shape facts of its base {base_key} (NVFP4 table entry for {key}"
                  + (", text-only)" if text_only else ")"),
                  quant_method=entry.quant_method, quant_algo="NVFP4", weight_bytes=footprint[0] if footprint else None,
                  weight_bytes_basis=footprint[1] if footprint else None)


def find_shape_facts(repo_id: str) -> ShapeFacts | None:
    """Shipped facts standing in for ``repo_id``, or ``None`` when nothing applies."""
    own = _model_config(repo_id)
    if own is not None:
        key, config = own
        return _facts(repo_id, key, config, f"shipped shape facts for {key}",
                      quant_method=(config.get("quantization_config") or {}).get("quant_method"))
    repackaged = _from_repackaging(repo_id)
    if repackaged is not None:
        return repackaged
    base = next((b for b in (family.base_repo_for(repo_id) for family in FAMILIES) if b), None)
    found = _model_config(base) if base is not None else None
    if found is None:
        return None
    key, config = found
    return _facts(repo_id, key, config, f"shipped shape facts of {key}, guessed from the size in the name")


def shipped_assistants() -> list[ShapeFacts]:
    """The shape facts of the MTP assistants that ship with specdraft (Google's for Gemma 4), one per size."""
    repos = (family.assistant_repo_for(base) for family in FAMILIES for base in family.base_repos.values())
    found = (find_shape_facts(repo) for repo in repos if repo)
    return [facts for facts in found if facts is not None]


def shipped_speculators() -> list[ShapeFacts]:
    """The shape facts of the published speculators (EAGLE-3, DFlash, DSpark) that ship with specdraft."""
    repos = (name[: -len(".json")].replace("__", "/") for name in _model_files().values())
    found = (find_shape_facts(repo) for repo in repos)
    return [facts for facts in found if facts is not None and "speculators_model_type" in facts.config]
