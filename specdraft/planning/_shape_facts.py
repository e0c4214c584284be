"""Shape facts shipped with specdraft, for checkpoints that are neither local nor in the HF cache.

``data/models/<owner>__<name>.json`` are Gemma 4 config.json reconstructions (checked against the
hub's parameter totals); ``data/nvfp4_checkpoints.json`` describes NVFP4 repackagings by their base
model; ``data/kv_and_params.json`` holds parameter counts. A repo id resolves, in order, to its own
config, to its base model's config via the NVFP4 table, or to the Gemma 4 size named in the id.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

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
    weight_bytes: int | None = None
    weight_bytes_basis: str | None = None
    language_model_params: int | None = None
    hf_params: int | None = None


def _data(name: str) -> resources.abc.Traversable:
    return resources.files("specdraft.planning").joinpath("data", name)


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


def _model_config(repo_id: str) -> tuple[str, dict] | None:
    name = _model_files().get(repo_id.lower())
    if name is None:
        return None
    return name[: -len(".json")].replace("__", "/"), _json(f"models/{name}")


def _catalogue_entry(repo_id: str) -> tuple[str, dict] | None:
    for key, entry in _json("nvfp4_checkpoints.json").items():
        if key.lower() == repo_id.lower() and isinstance(entry, dict):
            return key, entry
    return None


def _reported_quant_method(entry: dict) -> str | None:
    for section in ("quantization_config_seen", "quantization_reported"):
        info = entry.get(section) or {}
        for key in ("quant_method", "format"):
            if isinstance(info.get(key), str):
                return info[key].split()[0]
    return None


def _reported_footprint(entry: dict) -> tuple[int, str] | None:
    text = entry.get("footprint_reported")
    match = _FOOTPRINT.search(text or "")
    if not match:
        return None
    scale = 2**30 if match.group(2) == "GiB" else 10**9
    return int(float(match.group(1)) * scale), f"reported footprint ({text})"


def _as_text_only(config: dict) -> dict:
    """The config of a repackaging that stripped the vision/audio towers (Gemma 4: Gemma4ForCausalLM)."""
    stripped = {k: v for k, v in config.items() if k not in ("vision_config", "audio_config")}
    stripped["architectures"] = [rules_for(config).text_only_architecture]
    return stripped


def _params(repo_id: str) -> dict:
    return _json("kv_and_params.json").get(repo_id, {})


def find_shape_facts(repo_id: str) -> ShapeFacts | None:
    """Shipped facts standing in for ``repo_id``, or ``None`` when nothing applies."""
    own = _model_config(repo_id)
    if own is not None:
        key, config = own
        params = _params(key)
        return ShapeFacts(
            repo_id=repo_id,
            config=config,
            basis=f"shipped shape facts for {key}",
            quant_method=(config.get("quantization_config") or {}).get("quant_method"),
            language_model_params=params.get("language_model_params"),
            hf_params=params.get("hf_params"),
        )
    entry = _catalogue_entry(repo_id)
    if entry is not None:
        key, info = entry
        base = str(info.get("base", "")).split()[0]
        base_config = _model_config(base)
        if base_config is not None:
            base_key, config = base_config
            architecture = str(info.get("architecture", ""))
            text_only = architecture.startswith(rules_for(config).text_only_architecture)
            if text_only:
                config = _as_text_only(config)
            footprint = _reported_footprint(info)
            params = _params(base_key)
            return ShapeFacts(
                repo_id=repo_id,
                config=config,
                basis=f"shipped shape facts of its base {base_key} (NVFP4 table entry for {key}"
                + (", text-only)" if text_only else ")"),
                quant_method=_reported_quant_method(info),
                weight_bytes=footprint[0] if footprint else None,
                weight_bytes_basis=footprint[1] if footprint else None,
                language_model_params=params.get("language_model_params"),
                hf_params=params.get("hf_params"),
            )
    base = next((b for b in (family.base_repo_for(repo_id) for family in FAMILIES) if b), None)
    if base is not None:
        key, config = _model_config(base) or (None, None)
        if config is not None:
            params = _params(key)
            return ShapeFacts(
                repo_id=repo_id,
                config=config,
                basis=f"shipped shape facts of {key}, guessed from the size in the name",
                language_model_params=params.get("language_model_params"),
                hf_params=params.get("hf_params"),
            )
    return None


def shipped_assistants() -> list[ShapeFacts]:
    """The shape facts of the MTP assistants that ship with specdraft (Google's for Gemma 4), one per size."""
    repos = (family.assistant_repo_for(base) for family in FAMILIES for base in family.base_repos.values())
    found = (find_shape_facts(repo) for repo in repos if repo)
    return [facts for facts in found if facts is not None]
