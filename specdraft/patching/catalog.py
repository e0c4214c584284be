"""The hotfix catalog: one file per hotfix in ``hotfixes/``, loaded by path.

In a source checkout (and an editable install) the files are read from the repository's top-level
``hotfixes/``; a built wheel carries them as ``specdraft/hotfixes/`` (``setup.py`` maps the
directory there). A file ``hotfixes/kv_uniform_catches_valueerror.py`` must define exactly one
``Hotfix`` subclass whose ``id`` is its name with underscores as dashes.

``entries()`` reads each file's identity, "where" and "what for" (``id``, ``versions``,
``function``, ``modules``, ``context``, ``needed_for``, ``failure``) from its syntax tree without
running it, so ``status`` can answer from its cache and planning can ask ``needed_hotfixes`` without
importing libcst; ``CatalogEntry.load()`` runs the file when its edit is needed.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable

import specdraft
from specdraft.errors import UserError
from specdraft.patching.hotfix import Hotfix, Trait

_PACKAGE = Path(specdraft.__file__).resolve().parent


def catalog_dir() -> Path:
    """Where the hotfix files are: inside the installed package, else the source checkout's."""
    for candidate in (_PACKAGE / "hotfixes", _PACKAGE.parent / "hotfixes"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"no hotfixes/ directory beside {_PACKAGE}: specdraft is installed incompletely")


@dataclass(frozen=True)
class CatalogEntry:
    """A hotfix file as read without running it."""

    id: str
    path: Path
    sha256: str
    """Of the file's bytes: a cached status is only valid for the same hotfix code."""
    versions: str
    function: str
    modules: tuple[str, ...]
    context: tuple[str, ...]
    needed_for: frozenset[Trait]
    """The pairing traits that need this hotfix (``Hotfix.needed_for``)."""
    failure: str
    """What vLLM does without it (``Hotfix.failure``)."""

    def load(self) -> Hotfix:
        return _load(self.path)

    def is_needed_for(self, traits: Iterable[Trait]) -> bool:
        """Whether a pairing with ``traits`` needs this hotfix: it has one of ``needed_for``."""
        return not self.needed_for.isdisjoint(Trait(trait) for trait in traits)


@lru_cache(maxsize=None)
def entries() -> tuple[CatalogEntry, ...]:
    """Every hotfix file of the catalog, sorted by id."""
    found = [_read_entry(path) for path in sorted(catalog_dir().glob("*.py")) if path.name != "__init__.py"]
    return tuple(sorted(found, key=lambda entry: entry.id))


def list_hotfixes() -> tuple[Hotfix, ...]:
    """Every hotfix of the catalog, loaded, sorted by id."""
    return tuple(entry.load() for entry in entries())


def needed_hotfixes(traits: Iterable[Trait]) -> tuple[CatalogEntry, ...]:
    """The hotfixes a pairing with ``traits`` needs, in catalog order (empty: it needs none).

    A string that is not a ``Trait`` value raises ``ValueError``: the vocabulary is closed.
    """
    traits = frozenset(Trait(trait) for trait in traits)
    return tuple(entry for entry in entries() if entry.is_needed_for(traits))


def select(only: list[str] | tuple[str, ...] | None) -> tuple[CatalogEntry, ...]:
    """The entries named by ``only`` (all when empty), in catalog order; unknown ids are a user error."""
    catalog = entries()
    if not only:
        return catalog
    known = {entry.id for entry in catalog}
    unknown = [wanted for wanted in only if wanted not in known]
    if unknown:
        raise UserError(
            f"unknown hotfix id {', '.join(map(repr, unknown))}; known: {', '.join(sorted(known))}",
            hint="specdraft patch list",
        )
    return tuple(entry for entry in catalog if entry.id in only)


_DECLARED = ("id", "versions", "function", "modules", "context", "needed_for", "failure")
_OPTIONAL = {"context": ()}
_KNOWN_TRAITS = ", ".join(f"Trait.{trait.name} ({trait.value!r})" for trait in Trait)


def _read_entry(path: Path) -> CatalogEntry:
    source = path.read_bytes()
    values, unreadable = dict(_OPTIONAL), False
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.ClassDef):
            for statement in node.body:
                if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                        and isinstance(statement.targets[0], ast.Name) and statement.targets[0].id in _DECLARED):
                    try:
                        values[statement.targets[0].id] = _literal(statement.value)
                    except KeyError as unknown:
                        raise TypeError(f"{path}: no trait Trait.{unknown.args[0]}; known: {_KNOWN_TRAITS}") from None
                    except ValueError:
                        unreadable = True  # not a literal: the class itself answers below
    if unreadable or not set(_DECLARED) <= set(values):
        hotfix = _load(path)  # attributes not written as literals: ask the class itself
        values = {name: getattr(hotfix, name, None) for name in _DECLARED}
    if values["id"].replace("-", "_") != path.stem:
        raise TypeError(f"{path}: hotfix id {values['id']!r} does not match the file name")
    try:
        needed_for = frozenset(Trait(trait) for trait in values["needed_for"] or ())
    except ValueError as err:
        raise TypeError(f"{path}: needed_for: {err}; known: {_KNOWN_TRAITS}") from None
    if not needed_for or not values["failure"]:
        raise TypeError(f"{path}: a hotfix declares needed_for (at least one Trait) and failure")
    return CatalogEntry(path=path, sha256=hashlib.sha256(source).hexdigest(), **{
        **values, "modules": tuple(values["modules"]), "context": tuple(values["context"]), "needed_for": needed_for})


def _literal(node: ast.expr):
    """A literal, with ``Trait.NAME`` read as that trait (so ``needed_for`` is read without running the file)."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Trait":
        return Trait[node.attr]
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_literal(element) for element in node.elts)
    return ast.literal_eval(node)


@lru_cache(maxsize=None)
def _load(path: Path) -> Hotfix:
    name = f"specdraft._hotfixes.{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and inspect.getsource need the module registered
    spec.loader.exec_module(module)
    classes = [
        value for value in vars(module).values()
        if isinstance(value, type) and issubclass(value, Hotfix) and value is not Hotfix
        and value.__module__ == name
    ]
    if len(classes) != 1:
        raise TypeError(f"{path} must define exactly one Hotfix subclass, found {len(classes)}")
    hotfix = classes[0]()
    if hotfix.id.replace("-", "_") != path.stem:
        raise TypeError(f"{path}: hotfix id {hotfix.id!r} does not match the file name")
    return hotfix
