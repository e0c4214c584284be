"""Where one hotfix stands on an install's sources: its site found by name on the parsed tree, its status decided.

``SourceTree`` reads and parses each file at most once per operation; ``assess`` gives one hotfix's
``Assessment``; ``rewrite`` applies a hotfix to a parsed module; ``report_of`` turns an assessment into the
``HotfixReport`` users see. Nothing here writes a file or imports the package being patched.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from specdraft.errors import UserError
from specdraft.patching.locate import VllmInstall
from specdraft.patching.reports import HotfixReport, Outcome, Status

if TYPE_CHECKING:
    import libcst as cst

    from specdraft.patching.catalog import CatalogEntry

# libcst is imported where a file must be parsed, so a status answered from the memo never pays
# for it (importing libcst costs about as much as parsing a large vLLM module).


@dataclass
class Assessment:
    entry: CatalogEntry
    status: Status
    detail: str
    file: Path | None = None
    module_name: str = ""


class SourceTree:
    """The install's sources as read during one operation: each file read and parsed at most once."""

    def __init__(self, install: VllmInstall):
        self.install = install
        self._parsed: dict[Path, cst.Module] = {}

    def file_of(self, module_name: str) -> Path:
        return self.install.root.joinpath(*module_name.split(".")).with_suffix(".py")

    def module_name_of(self, path: Path) -> str:
        return ".".join(path.relative_to(self.install.root).with_suffix("").parts)

    def parse(self, path: Path) -> cst.Module:
        import libcst as cst

        if path not in self._parsed:
            try:
                source = path.read_bytes()
            except OSError as err:
                raise UserError(f"cannot read {path}: {err.strerror}", hint="check the file's permissions") from None
            try:
                self._parsed[path] = cst.parse_module(source)
            except cst.ParserSyntaxError as err:
                raise UserError(
                    f"{path} does not parse as Python (line {err.raw_line}, column {err.raw_column}): nothing was changed",
                    hint=f"reinstall vLLM to get an intact file: {_reinstall_command(self.install)}",
                ) from None
        return self._parsed[path]

    def read_ast(self, path: Path) -> ast.Module:
        """``path`` as an ``ast`` tree: for code that is only read (much faster than libcst)."""
        try:
            return ast.parse(self._read(path), str(path))
        except SyntaxError as err:
            raise UserError(
                f"{path} does not parse as Python (line {err.lineno}): nothing was changed",
                hint=f"reinstall vLLM to get an intact file: {_reinstall_command(self.install)}",
            ) from None

    def replace(self, path: Path, module: cst.Module) -> None:
        """Continue with ``module`` as the file's content (diff chains hotfixes of one file)."""
        self._parsed[path] = module

    def forget(self, path: Path) -> None:
        self._parsed.pop(path, None)

    def declaring_files(self, entry: CatalogEntry) -> list[Path]:
        """Files whose text declares ``def`` or ``class entry.function``: the expected modules, else their siblings.

        Cheap text search decides only which files to parse; whether a declaration is a real
        top-level function or class is decided on the parsed tree.
        """
        declares = re.compile(
            rb"^[ \t]*(?:(?:async[ \t]+)?def|class)[ \t]+" + re.escape(entry.function.encode()) + rb"\b", re.M)
        expected = [self.file_of(name) for name in entry.modules]

        def declaring(paths: list[Path]) -> list[Path]:
            return [path for path in paths if path.is_file() and declares.search(self._read(path))]

        found = declaring(expected)
        if not found:
            directories = {path.parent for path in expected if path.parent.is_dir()}
            siblings = sorted({p for d in directories for p in d.glob("*.py")} - set(expected))
            found = declaring(siblings)
        return found

    def _read(self, path: Path) -> bytes:
        try:
            return path.read_bytes()
        except OSError as err:
            raise UserError(f"cannot read {path}: {err.strerror}", hint="check the file's permissions") from None


def assess(tree: SourceTree, entry: CatalogEntry) -> Assessment:
    """Decide one hotfix's status on the parsed tree."""
    install = tree.install
    if not version_in_range(install.version, entry.versions):
        return Assessment(entry, Status.NOT_APPLICABLE, f"vLLM {install.version} is outside {entry.versions}")
    sites = [
        (path, function)
        for path in tree.declaring_files(entry)
        for function in _top_level_definitions(tree.parse(path).body, entry.function)
    ]
    if not sites:
        places = ", ".join(entry.modules)
        return Assessment(entry, Status.DRIFTED, f"{entry.function} not found in {places} or sibling modules")
    if len(sites) > 1:
        where = ", ".join(sorted({tree.module_name_of(path) for path, _ in sites}))
        return Assessment(entry, Status.DRIFTED, f"{entry.function} is defined {len(sites)} times ({where}): ambiguous")
    ((path, function),) = sites
    hotfix = entry.load()
    context = {name: tree.read_ast(tree.file_of(name)) if tree.file_of(name).is_file() else None for name in entry.context}
    inspection = hotfix.inspect(function, tree.parse(path), context)
    status_now, detail = inspection.status, inspection.detail
    if status_now is Status.APPLIED and not hotfix.has_marker(function):
        status_now = Status.FIXED_UPSTREAM
    elif status_now is not Status.APPLIED and hotfix.has_marker(function):
        status_now, detail = Status.DRIFTED, f"our marker is present but the fix is not: {detail}"
    module_name = tree.module_name_of(path)
    if module_name not in entry.modules:
        detail = f"{detail}; found in {module_name}, moved from {', '.join(entry.modules)}"
    return Assessment(entry, status_now, detail, file=path, module_name=module_name)


def _top_level_definitions(body, name: str) -> list[cst.FunctionDef | cst.ClassDef]:
    """Module-level ``def name`` / ``class name`` nodes, including those in the blocks of a top-level if/try/with."""
    import libcst as cst

    found = []
    for statement in body:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)) and statement.name.value == name:
            found.append(statement)
        elif isinstance(statement, (cst.If, cst.Try, cst.With)):
            for block in _blocks_of(statement):
                found += _top_level_definitions(block.body, name)
    return found


def _blocks_of(statement) -> list:
    """The indented blocks of a compound statement: body, elif/else, except, finally."""
    import libcst as cst

    blocks = [statement.body]
    if isinstance(statement, cst.If) and statement.orelse is not None:
        blocks += _blocks_of(statement.orelse) if isinstance(statement.orelse, cst.If) else [statement.orelse.body]
    if isinstance(statement, cst.Try):
        blocks += [handler.body for handler in statement.handlers]
        blocks += [part.body for part in (statement.orelse, statement.finalbody) if part is not None]
    return blocks


def rewrite(module: cst.Module, entry: CatalogEntry) -> cst.Module:
    (function,) = _top_level_definitions(module.body, entry.function)
    return module.deep_replace(function, entry.load().rewrite(function))


def version_in_range(version: str | None, specifier: str) -> bool:
    if version is None:
        return True  # unknown version: let the tree decide
    try:
        return SpecifierSet(specifier).contains(Version(version), prereleases=True)
    except InvalidVersion:
        return True


def _reinstall_command(install: VllmInstall) -> str:
    name = install.distribution or "vllm"
    pin = f"=={install.version}" if install.version else ""
    python = install.python or "python"
    return f"{python} -m pip install --force-reinstall --no-deps {name}{pin}"


def report_of(install: VllmInstall, assessment: Assessment, *, outcome: Outcome | None = None,
            detail: str | None = None, diff: str = "") -> HotfixReport:
    return HotfixReport(
        id=assessment.entry.id,
        status=assessment.status,
        file=str(assessment.file) if assessment.file else None,
        vllm_version=install.version,
        detail=assessment.detail if detail is None else detail,
        function=f"{assessment.module_name}.{assessment.entry.function}" if assessment.module_name else assessment.entry.function,
        outcome=outcome,
        diff=diff,
    )
