"""What a hotfix is: a self-describing edit of one function (or one class) of an installed package.

A hotfix file in ``hotfixes/`` defines one subclass of ``Hotfix`` that reads top to bottom:
docstring, identity (``id``, ``title``, ``why``), what it is for (``needed_for``: the pairing
traits that need it; ``failure``: what vLLM does without it), where it applies (``package``,
``versions``, ``function``, ``modules``), the edit on the libcst tree (``inspect`` + ``rewrite``),
fixtures (``fixtures``: before/after source, the vLLM release it was taken from and the expected
status and detail; tests are generated from them) and a behavioural ``probe``. Adding a hotfix is
adding that one file: the catalog finds it, the tests are generated from it, planning asks it.

What it is for, as planning asks it (no libcst is imported, no hotfix file is run)::

    from specdraft.patching import Trait, needed_hotfixes

    needed = needed_hotfixes({Trait.GEMMA4_MTP_ASSISTANT})   # -> tuple[CatalogEntry, ...], catalog order
    [entry.id for entry in needed]                            # ['gemma4-mtp-shares-backbone-embeddings']
    needed[0].failure                                         # what vLLM does without it, one line
    needed_hotfixes(set())                                    # () : a pairing with no traits needs none

``Trait`` is the closed vocabulary of pairing traits a hotfix can be needed for; a hotfix is
needed by a pairing that has any of its ``needed_for`` traits (whether it is then pending on the
serving vLLM is ``status``'s answer). A trait the pairing cannot rule out (an unknown draft) is
passed as present. Tree helpers for ``inspect`` and ``rewrite`` are in ``specdraft.patching.anchors``.

The contract between a hotfix and the engine:

- the engine finds the single top-level ``def function`` (or ``class function``, for an edit that
  adds a method) in the expected modules (or, if a release moved it, in a sibling module of the
  same package) and hands its ``FunctionDef`` (``ClassDef``) to ``inspect``;
- ``inspect`` answers an ``Inspection``: ``PENDING`` (the anchor is there once, ``rewrite`` will apply),
  ``APPLIED`` / ``FIXED_UPSTREAM`` (the fixed form is there, with / without our marker; the engine
  tells the two apart with ``has_marker``), or ``DRIFTED`` with a reason; it also gets the whole
  module, to check what the edit relies on there (an import, say), and the ``context`` modules
  (code elsewhere that decides whether the edit is right: what a called function raises, say) as
  ``ast`` trees, None when absent: they are only read, and ``ast`` parses them 20 times faster;
- ``rewrite`` returns the edited function (class), and must put ``self.marker`` in a comment of the code
  it adds (``marked`` builds such a statement); it is only called on a function ``inspect`` found ``PENDING``;
- ``probe(module)`` runs in the *target* interpreter (its source is shipped there, so it may only
  import the standard library and the patched package): it returns normally when the fixed
  behaviour is observed and raises ``AssertionError`` when the bug is.

``id``, ``versions``, ``function``, ``modules``, ``context``, ``needed_for`` and ``failure`` are read
from the file's syntax tree without running it (see ``catalog``): write them as literals
(``needed_for`` as a tuple of ``Trait.NAME``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, ClassVar, Mapping

from specdraft.patching.reports import Status, _Words

if TYPE_CHECKING:
    import libcst as cst

# libcst is imported inside the methods that build code: planning reads this module (``Trait``)
# and must not pay for libcst.


class Trait(_Words):
    """The closed vocabulary of what a draft/target pairing is, as far as hotfixes care."""

    HYBRID_KV_CACHE_MANAGER_OFF = "hybrid-kv-cache-manager-off"
    """The pair runs with ``--disable-hybrid-kv-cache-manager``: on the V1 model runner its draft shares KV across
    layers, or its sliding window differs from the target's (a Gemma 4 E2B/E4B draft beside the 31B), or the flag was
    given (Model Runner V2 keeps the manager on for such a draft)."""
    GEMMA4_MTP_ASSISTANT = "gemma4-mtp-assistant"
    """The draft is a Gemma 4 MTP assistant (``speculative_config.method: mtp``)."""
    MOE_PER_EXPERT_WEIGHTS = "moe-per-expert-weights"
    """The target is a mixture-of-experts model whose checkpoint stores each expert's weights apart
    (``experts.{id}.``), not fused."""
    K_SCHEDULE_ON_MODEL_RUNNER_V2 = "k-schedule-on-model-runner-v2"
    """The server passes a K schedule (``num_speculative_tokens_per_batch_size``) and starts on Model Runner V2,
    which captures CUDA graphs for each K of the schedule."""


@dataclass(frozen=True)
class Inspection:
    """What ``Hotfix.inspect`` saw in the function: a status and why (the engine reports it in a ``HotfixReport``)."""

    status: Status
    detail: str = ""


@dataclass(frozen=True, kw_only=True)
class Fixture:
    """A module's source before, the vLLM release it was taken from, the status and detail the engine
    must report on it, and (when pending) the source after.

    Tests are generated from these, on a tree whose version is ``vllm``: ``status(before)`` is
    ``status`` with ``detail``; for a pending fixture, ``apply(before) == after``,
    ``status(after) == APPLIED`` and applying again changes nothing, and the real release ``vllm``
    (whose code the pending fixture is, cut down) reports the same status and detail.
    """

    name: str
    vllm: str
    """The release whose source this fixture was cut from (a variant: the release it was derived from)."""
    before: str
    status: Status
    detail: str
    """The report's ``detail`` on ``before``, exactly."""
    after: str | None = None
    context: Mapping[str, str] = field(default_factory=dict)
    """Source of the hotfix's ``context`` modules in this fixture, by dotted name."""


class Hotfix:
    """Base class of every hotfix in ``hotfixes/`` (see the module docstring for the contract)."""

    id: ClassVar[str]
    """Stable identifier, also the hotfix file's name (dashes become underscores there)."""
    title: ClassVar[str]
    """One line: the behaviour after the fix."""
    why: ClassVar[str]
    """Why vLLM needs it, with the upstream reference."""
    needed_for: ClassVar[tuple[Trait, ...]]
    """The pairings that need it: one with any of these traits fails without it where it is pending."""
    failure: ClassVar[str]
    """What vLLM does without it, one line: the error it dies with and where (planning quotes it)."""
    package: ClassVar[str] = "vllm"
    versions: ClassVar[str]
    """PEP 440 specifier of the package versions the hotfix applies to."""
    function: ClassVar[str]
    """Name of the top-level function the edit lives in (or of the top-level class, when it adds a method)."""
    modules: ClassVar[tuple[str, ...]]
    """Dotted modules where ``function`` is expected, most recent home first."""
    context: ClassVar[tuple[str, ...]] = ()
    """Dotted modules whose code decides whether the edit is right; ``inspect`` gets their ``ast`` trees."""
    fixtures: ClassVar[tuple[Fixture, ...]] = ()

    @property
    def marker(self) -> str:
        """The comment text that identifies code we added."""
        return f"specdraft-hotfix: {self.id}"

    def inspect(self, function: cst.FunctionDef | cst.ClassDef, module: cst.Module,
                context: Mapping[str, ast.Module | None]) -> Inspection:
        """Where the function stands; ``module`` is its whole module, ``context`` the ``context`` modules."""
        raise NotImplementedError

    def rewrite(self, function: cst.FunctionDef | cst.ClassDef) -> cst.FunctionDef | cst.ClassDef:
        raise NotImplementedError

    @staticmethod
    def probe(module: ModuleType) -> None:
        raise NotImplementedError

    def marker_comment(self, reason: str) -> cst.EmptyLine:
        """A full-line comment carrying the marker, to put in the ``leading_lines`` of added code."""
        import libcst as cst

        return cst.EmptyLine(comment=cst.Comment(f"# {self.marker} ({reason})"))

    def marked(self, code: str, reason: str) -> cst.BaseStatement:
        """The statement ``code``, after a blank line and the marker comment: what ``rewrite`` adds."""
        import libcst as cst

        return cst.parse_statement(code).with_changes(
            leading_lines=[cst.EmptyLine(indent=False), self.marker_comment(reason)])

    def has_marker(self, function: cst.FunctionDef | cst.ClassDef) -> bool:
        import libcst as cst

        return self.marker in cst.Module(body=[function]).code
