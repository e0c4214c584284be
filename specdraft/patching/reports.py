"""The words the engine answers in: ``Status`` (where a hotfix stands), ``Outcome`` (what an
operation did) and ``HotfixReport`` (one hotfix on one install). No libcst here: answering from
the status memo must not pay for it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import Enum


class _Words(str, Enum):
    """An enum whose members print as their word, in text output as in JSON."""

    def __str__(self) -> str:
        return self.value


class Status(_Words):
    """The closed vocabulary of a hotfix's state on a vLLM tree; the same words in text and JSON."""

    PENDING = "pending"
    """The anchor is present once and the edit applies cleanly; not applied yet."""
    APPLIED = "applied"
    """Our edit (with its marker) is present."""
    FIXED_UPSTREAM = "fixed-upstream"
    """The fixed behaviour is present without our marker: nothing to do."""
    DRIFTED = "drifted"
    """The anchor is missing or ambiguous: the engine refuses to edit."""
    NOT_APPLICABLE = "not-applicable"
    """The package version is outside the hotfix's range, or the package is absent."""


class Outcome(_Words):
    """What an operation did for one hotfix (``status`` and ``diff`` leave it unset)."""

    CHANGED = "changed"
    """apply patched the file / revert restored the pristine bytes."""
    UNCHANGED = "unchanged"
    """Nothing to do: already applied, fixed upstream, not applicable, or not applied (revert)."""
    REFUSED = "refused"
    """An unsafe state (drifted anchor, file changed since apply); nothing was written."""
    PASSED = "passed"
    """verify: the fixed form is present (and the probe, if run, observed the fixed behaviour)."""
    FAILED = "failed"
    """verify: the fixed form is missing, or the probe observed the bug or could not run."""
    SKIPPED = "skipped"
    """verify: the hotfix does not apply to this version."""


@dataclass(frozen=True)
class HotfixReport:
    """One hotfix on one vLLM install, after an operation."""

    id: str
    status: Status
    file: str | None
    """The file holding the hotfix's function (absolute), or None when it was not found."""
    vllm_version: str | None
    detail: str
    function: str = ""
    """Where the function was found, as ``module.function``."""
    outcome: Outcome | None = None
    diff: str = ""
    """``diff`` only: the unified diff apply would write for this hotfix."""
    changed_since_apply: bool = False
    """``status`` only: the status is ``applied``, but the file no longer has the bytes apply wrote (a hand
    edit, another tool): ``revert`` refuses it unless ``--force``, which discards that change."""

    def to_json(self) -> dict:
        document = asdict(self)
        document["status"] = self.status.value
        document["outcome"] = self.outcome.value if self.outcome else None
        return document
