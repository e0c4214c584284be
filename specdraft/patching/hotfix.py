"""What a hotfix is: a self-describing edit of one function (or one class) of an installed package.

A hotfix file in ``hotfixes/`` defines one subclass of ``Hotfix`` that reads top to bottom:
docstring, identity (``id``, ``title``, ``why``), where it applies (``package``, ``versions``,
``function``, ``modules``), the edit on the libcst tree (``inspect`` + ``rewrite``), fixtures
(``fixtures``: before/after source from which tests are generated) and a behavioural ``probe``.

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
  it adds; it is only called on a function ``inspect`` found ``PENDING``;
- ``probe(module)`` runs in the *target* interpreter (its source is shipped there, so it may only
  import the standard library and the patched package): it returns normally when the fixed
  behaviour is observed and raises ``AssertionError`` when the bug is.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from types import ModuleType
from typing import Callable, ClassVar, Mapping, TypeVar

import libcst as cst

from specdraft.patching.reports import Status

N = TypeVar("N", bound=cst.CSTNode)


@dataclass(frozen=True)
class Inspection:
    """What ``Hotfix.inspect`` saw in the function: a status and why (the engine reports it in a ``HotfixReport``)."""

    status: Status
    detail: str = ""


@dataclass(frozen=True)
class Fixture:
    """A module's source before, the status the engine must report on it, and (when pending) after.

    Tests are generated from these: ``status(before) == status``; for a pending fixture,
    ``apply(before) == after``, ``status(after) == APPLIED`` and applying again changes nothing.
    """

    name: str
    before: str
    status: Status
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
        return cst.EmptyLine(comment=cst.Comment(f"# {self.marker} ({reason})"))

    def has_marker(self, function: cst.FunctionDef | cst.ClassDef) -> bool:
        return self.marker in cst.Module(body=[function]).code


def find_all(node: cst.CSTNode, kind: type[N], where: Callable[[N], bool] = lambda _: True) -> list[N]:
    """Every node of type ``kind`` in ``node``'s subtree (``node`` included) that satisfies ``where``.

    In source order. A plain walk rather than ``libcst.matchers``, whose import alone costs more
    than parsing a large vLLM module.
    """
    found = []
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, kind) and where(current):
            found.append(current)
        pending.extend(reversed(current.children))
    return found


def code_of(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def normalised(code: str | cst.CSTNode) -> str:
    """A statement or expression's code with formatting and comments removed (its AST dump).

    Anchors compare statements by this, so ``x  =  f( a )`` matches ``x = f(a)``.
    """
    if isinstance(code, cst.CSTNode):
        code = code_of(code)
    return ast.dump(ast.parse(code.strip()))
