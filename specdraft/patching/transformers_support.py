"""Whether the serving vLLM release reads Gemma 4 configs with the transformers installed beside it.

The rules are data (``data/transformers_gemma4.json``: per range of vLLM releases, the transformers releases
that work, the failure outside them and how that was found); ``transformers_finding`` is the one check, read by
``specdraft launch`` (a plan finding) and ``specdraft patch status`` (a warning line). Pure: the versions come
from ``locate`` (``VllmInstall.transformers_version``), which asks the serving interpreter.
"""

from __future__ import annotations

import json
import shlex
from functools import cache
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict

from specdraft.findings import Finding

DATA = Path(__file__).with_name("data") / "transformers_gemma4.json"
CHECK = "transformers"


class TransformersRule(BaseModel):
    """One range of vLLM releases and the transformers releases it reads Gemma 4 configs with."""

    model_config = ConfigDict(frozen=True)

    vllm: str
    """The vLLM releases the rule covers (a PEP 440 specifier)."""
    works: str
    """The transformers releases that read Gemma 4 configs there (a specifier); outside it, the rule warns."""
    install: str
    """What the fix installs: ``works`` narrowed to the release's own Requires-Dist, so the fix never fights it."""
    flags: str
    """A transformers version the rule flags (its test)."""
    accepts: str
    """A transformers version the rule accepts (its test)."""
    failure: str
    """What vLLM does with a transformers outside ``works``."""
    source: str
    """How the range was found: what was run, which release files were read."""

    def covers(self, vllm_version: Version) -> bool:
        return SpecifierSet(self.vllm).contains(vllm_version, prereleases=True)

    def reads_with(self, transformers_version: Version) -> bool:
        return SpecifierSet(self.works).contains(transformers_version, prereleases=True)


@cache
def transformers_rules() -> tuple[TransformersRule, ...]:
    return tuple(TransformersRule(**rule) for rule in json.loads(DATA.read_text(encoding="utf-8"))["rules"])


def rule_for(vllm_version: str) -> TransformersRule | None:
    """The rule covering that vLLM release (its ``+cpu``-style local part ignored); None where none is known."""
    try:
        release = Version(Version(vllm_version).public)
    except InvalidVersion:
        return None
    return next((rule for rule in transformers_rules() if rule.covers(release)), None)


def transformers_finding(vllm_version: str | None, transformers_version: str | None,
                         python: str | Path | None = None) -> Finding | None:
    """A warning when that vLLM release cannot read Gemma 4 configs with that transformers; None when it can,
    or when either version is unknown or no rule covers the release."""
    if vllm_version is None or transformers_version is None:
        return None
    rule = rule_for(vllm_version)
    try:
        installed = Version(transformers_version)
    except InvalidVersion:
        return None
    if rule is None or rule.reads_with(installed):
        return None
    where = f" in {python}" if python else ""
    pip = f"{shlex.quote(str(python))} -m pip install" if python else "pip install"
    return Finding(level="warning", check=CHECK,
                   message=f"transformers {transformers_version}{where} cannot read Gemma 4 configs with vLLM "
                           f"{vllm_version}: vLLM {rule.vllm} reads them with transformers {rule.works} "
                           f"(outside it, engine start fails with {rule.failure})",
                   hint=f"{pip} {shlex.quote('transformers' + rule.install)}")
