"""The operations: status, diff, apply, verify, revert, each returning one ``HotfixReport`` per hotfix.

Decisions are made on the tree as it is now (the marker and the fixed form in the parsed source),
never on the journal: the journal serves revert, and tells ``status`` which applied files changed
since apply (``changed_since_apply``). ``apply`` and ``revert`` are all or nothing, hold the
install's lock and decide again under it, so two concurrent runs serialise and the second one sees
the first one's result. They decide every byte before the first write; their writes form one
journal transaction (a failed write puts every file back), and a signal either stops them before
that or waits for its end (``interruptions``). A target file that is a symbolic link is never written. Nothing here
imports the package being patched.
"""

from __future__ import annotations

import ast
import difflib
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from specdraft.errors import UserError
from specdraft.patching import catalog, interruptions
from specdraft.patching.journal import Journal, JournalEntry, drop_bytecode, is_writable, sha256
from specdraft.patching.locate import VllmInstall
from specdraft.patching.reports import HotfixReport, Outcome, Status

from specdraft.patching.status_memo import StatusMemo

if TYPE_CHECKING:
    import libcst as cst

    from specdraft.patching.catalog import CatalogEntry

# libcst is imported where a file must be parsed, so a status answered from the memo never pays
# for it (importing libcst costs about as much as parsing a large vLLM module).


@dataclass
class _Assessment:
    entry: CatalogEntry
    status: Status
    detail: str
    file: Path | None = None
    module_name: str = ""


class _Tree:
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


def status(install: VllmInstall, only: list[str] | None = None) -> list[HotfixReport]:
    """Where each hotfix stands on ``install``: pending, applied, fixed-upstream, drifted or not-applicable.

    Decisions already made on byte-identical files are reused (see ``status_memo``).
    """
    tree = _Tree(install)
    memo = StatusMemo()
    reports = []
    for entry in catalog.select(only):
        if not _version_in_range(install.version, entry.versions):
            reports.append(_report(install, _assess(tree, entry)))
            continue
        files = tree.declaring_files(entry) + [p for p in map(tree.file_of, entry.context) if p.is_file()]
        key = memo.key(entry.sha256, install.root, files)
        known = memo.get(key)
        if known is None:
            assessment = _assess(tree, entry)
            memo.put(key, {
                "status": assessment.status.value, "detail": assessment.detail, "module": assessment.module_name,
                "file": assessment.file.relative_to(install.root).as_posix() if assessment.file else None,
            })
        else:
            assessment = _Assessment(entry, Status(known["status"]), known["detail"],
                                     file=install.root / known["file"] if known["file"] else None,
                                     module_name=known["module"])
        reports.append(_report(install, assessment))
    memo.save()
    return _mark_changed_since_apply(install, reports)


def diff(install: VllmInstall, only: list[str] | None = None) -> list[HotfixReport]:
    """The unified diff ``apply`` would write, per hotfix; changes nothing.

    Hotfixes editing the same file get consecutive diffs, so concatenated they form one patch.
    """
    tree = _Tree(install)
    reports = []
    for assessment in [_assess(tree, entry) for entry in catalog.select(only)]:
        text = ""
        if assessment.status is Status.PENDING:
            before = tree.parse(assessment.file)
            after = _rewrite(before, assessment.entry)
            tree.replace(assessment.file, after)
            relative = assessment.file.relative_to(install.root).as_posix()
            text = "".join(difflib.unified_diff(
                before.code.splitlines(keepends=True), after.code.splitlines(keepends=True),
                fromfile=f"a/{relative}", tofile=f"b/{relative}",
            ))
        reports.append(_report(install, assessment, diff=text))
    return reports


def apply(install: VllmInstall, only: list[str] | None = None) -> list[HotfixReport]:
    """Apply every pending hotfix; all or nothing: if one is drifted, no file is written.

    Every file's new source is made and compiled before the first write. Per file: the pristine
    bytes are backed up and journaled, the new source is written atomically, and the file's cached
    bytecode is dropped; if a write fails, the files written before it are put back. A SIGINT or
    SIGTERM before the first write raises ``Interrupted`` (nothing changed); one that comes while
    writing is held until every file is written, then raised as ``Interrupted`` saying so (see
    ``interruptions``). Already-applied hotfixes change zero bytes.
    """
    selection = catalog.select(only)
    journal = Journal(install.root, install.package_dir)
    return _locked_and_guarded("apply", journal, lambda guard: _apply_locked(install, selection, journal, guard))


def _locked_and_guarded(action: str, journal: Journal,
                        work: Callable[[interruptions.Guard], list[HotfixReport]]) -> list[HotfixReport]:
    """``work`` under the install's lock, with a signal stopping it before its first write and held after."""
    outermost = not interruptions.is_guarded()
    with interruptions.guarded() as guard:
        try:
            with journal.locked():
                reports = work(guard)
        except (KeyboardInterrupt, interruptions.SignalStop):
            raise interruptions.stopped_before_writing(action) from None
    if outermost and guard.received:
        raise interruptions.finished_despite(guard, action, _summary(reports))
    return reports


def _apply_locked(install: VllmInstall, selection: list[CatalogEntry], journal: Journal,
                  guard: interruptions.Guard) -> list[HotfixReport]:
    tree = _Tree(install)
    assessments = [_assess(tree, entry) for entry in selection]
    drifted = [a.entry.id for a in assessments if a.status is Status.DRIFTED]
    if drifted:
        return [
            _report(install, a, outcome=Outcome.REFUSED if a.status in (Status.DRIFTED, Status.PENDING) else Outcome.UNCHANGED,
                    detail=a.detail if a.status is Status.DRIFTED else f"{a.detail}; not applied because {', '.join(drifted)} is drifted")
            for a in assessments
        ]
    pending_files = sorted({a.file for a in assessments if a.status is Status.PENDING})
    for path in pending_files:
        _refuse_unwritable(path, install)
    planned = []
    for path in pending_files:
        original = path.read_bytes()
        module = tree.parse(path)
        fixes = [a.entry for a in assessments if a.status is Status.PENDING and a.file == path]
        for entry in fixes:
            module = _rewrite(module, entry)
        patched = module.code.encode(_encoding_of(module))
        compile(patched, str(path), "exec", dont_inherit=True)
        planned.append((path, original, patched, [entry.id for entry in fixes]))
    if planned:
        guard.hold()
        with journal.transaction("apply"):
            journal.prepare()
            for path, original, patched, ids in planned:
                journal.record_apply(path, original, patched, ids, install.version)
                journal.write(path, patched)
                drop_bytecode(path)
                tree.forget(path)
    reports = []
    for before in assessments:
        after = _assess(tree, before.entry)
        changed = before.status is Status.PENDING
        detail = "patched" if changed else ("already applied" if after.status is Status.APPLIED else after.detail)
        reports.append(_report(install, after, outcome=Outcome.CHANGED if changed else Outcome.UNCHANGED, detail=detail))
    return reports


def verify(install: VllmInstall, only: list[str] | None = None, probe: bool = False) -> list[HotfixReport]:
    """Confirm each fix is in place: statically (re-parse), and with ``probe`` behaviourally.

    The probe runs in the install's interpreter in a subprocess (see ``specdraft.patching.probe``);
    a probe that cannot run there is a failed verification, with the reason.
    """
    from specdraft.patching.probe import run_probes

    tree = _Tree(install)
    assessments = [_assess(tree, entry) for entry in catalog.select(only)]
    probed = {}
    if probe:
        probed = run_probes(install, [(a.entry.load(), a.module_name) for a in assessments if a.file is not None
                                      and a.status is not Status.NOT_APPLICABLE])
    reports = []
    for assessment in assessments:
        if assessment.status is Status.NOT_APPLICABLE:
            reports.append(_report(install, assessment, outcome=Outcome.SKIPPED))
            continue
        passed = assessment.status in (Status.APPLIED, Status.FIXED_UPSTREAM)
        detail = f"fixed form present ({assessment.detail})" if passed else f"fix missing: {assessment.detail}"
        if assessment.entry.id in probed:
            result = probed[assessment.entry.id]
            passed = passed and result.passed
            detail = f"{detail}; probe {result.describe()}"
        reports.append(_report(install, assessment, outcome=Outcome.PASSED if passed else Outcome.FAILED, detail=detail))
    return reports


def revert(install: VllmInstall, only: list[str] | None = None, force: bool = False) -> list[HotfixReport]:
    """Restore the pristine bytes of every file patched by the selected hotfixes; all or nothing.

    The journal decides which files: a patched file that vanished is restored from its backup too,
    and the report says it was missing. If one selected hotfix must be refused, no file is written:
    its file changed since apply (unless ``force``), became a symbolic link, has no intact backup, or
    also carries a hotfix not selected (revert them together). Signals and failed writes are handled
    as in ``apply``: nothing written, or every file restored.
    """
    selection = catalog.select(only)
    journal = Journal(install.root, install.package_dir)
    return _locked_and_guarded("revert", journal,
                               lambda guard: _revert_locked(install, selection, journal, guard, force))


def _revert_locked(install: VllmInstall, selection: list[CatalogEntry], journal: Journal,
                   guard: interruptions.Guard, force: bool) -> list[HotfixReport]:
    tree = _Tree(install)
    assessments = [_assess(tree, entry) for entry in selection]
    plan = _revert_plan(journal, assessments, {entry.id for entry in selection}, force)
    if plan.refusals:
        blocked = f"not reverted: {', '.join(sorted(plan.refusals))} refused, and revert is all or nothing"
        return [
            _report(install, a, outcome=Outcome.REFUSED, detail=plan.refusals.get(a.entry.id, blocked))
            if a.entry.id in plan.refusals or a.entry.id in plan.found else
            _report(install, a, outcome=Outcome.UNCHANGED, detail=f"not applied ({a.detail})")
            for a in assessments
        ]
    for path in sorted(plan.restore):
        if path.exists():
            _refuse_unwritable(path, install)
        elif not is_writable(path.parent):
            raise UserError(f"{path} is missing and its directory is read-only; nothing was changed",
                            hint=f"chmod u+w {path.parent} if it is yours to restore, then run revert again")
    if plan.restore:
        guard.hold()
        with journal.transaction("revert"):
            for path, pristine in sorted(plan.restore.items()):
                journal.write(path, pristine)
                drop_bytecode(path)
                journal.forget(path)
                tree.forget(path)
    reports = []
    for before in assessments:
        after = _assess(tree, before.entry)
        if before.entry.id in plan.found:
            reports.append(_report(install, after, outcome=Outcome.CHANGED, detail=plan.found[before.entry.id]))
        else:
            reports.append(_report(install, after, outcome=Outcome.UNCHANGED, detail=f"not applied ({after.detail})"))
    return reports


@dataclass
class _RevertPlan:
    refusals: dict[str, str]
    """Hotfix id -> why revert must refuse it."""
    restore: dict[Path, bytes]
    """File -> the pristine bytes to write back."""
    found: dict[str, str]
    """Hotfix id -> what revert found and will do (the report's detail once it is done)."""


def _revert_plan(journal: Journal, assessments: list[_Assessment], selected: set[str], force: bool) -> _RevertPlan:
    """What revert must refuse and what it would restore, from the journal (every file it names) and the tree."""
    records = journal.entries()
    plan = _RevertPlan({}, {}, {})
    for a in assessments:
        journaled = {name: record for name, record in records.items() if a.entry.id in record.hotfixes}
        if not journaled:
            if a.status is Status.APPLIED and a.file is not None:
                plan.refusals[a.entry.id] = "applied, but the journal has no backup for it (patched by another tool?)"
            continue
        for name, record in sorted(journaled.items()):
            path = journal.root / name
            others = sorted(set(record.hotfixes) - selected)
            if not _is_inside_package(journal, name):
                plan.refusals[a.entry.id] = (f"the journal names {name!r}, which is not a file of the vllm package; "
                                             f"refusing to write there")
            elif path.is_symlink():
                plan.refusals[a.entry.id] = (f"{path} is now a symbolic link (to {os.readlink(path)}); "
                                             f"refusing to replace the link, even with --force")
            elif others:
                plan.refusals[a.entry.id] = f"{path} also carries {', '.join(others)}; revert them together"
            elif not path.exists():
                plan.found[a.entry.id] = f"{name} was missing; original bytes restored from the journal's backup"
            elif not _is_in(a, path):
                continue  # the file no longer carries this hotfix (a reinstall): nothing of ours to undo there
            elif not force and _changed_since_apply(path, record):
                plan.refusals[a.entry.id] = (f"{path} changed since apply; refusing to overwrite it "
                                             f"(--force restores the original anyway)")
            else:
                plan.found[a.entry.id] = ("original bytes restored (the change made since apply is discarded)"
                                          if _changed_since_apply(path, record) else "original bytes restored")
            if a.entry.id in plan.found and a.entry.id not in plan.refusals:
                try:
                    plan.restore[path] = journal.pristine(record)
                except (UserError, OSError):
                    plan.refusals[a.entry.id] = (f"the journal's backup of {name} ({journal.dir / 'backups' / record.backup}) "
                                                 f"is missing or does not match its hash")
    for hotfix in plan.refusals:
        plan.found.pop(hotfix, None)
    return plan


def _is_inside_package(journal: Journal, name: str) -> bool:
    """Whether the journal's file name stays inside the package (revert writes there)."""
    parts = Path(name).parts
    return (not Path(name).is_absolute() and ".." not in parts and len(parts) > 1
            and journal.root / parts[0] == journal.dir.parent)


def _is_in(assessment: _Assessment, path: Path) -> bool:
    """Whether the tree shows ``assessment``'s hotfix applied in ``path``."""
    return assessment.status is Status.APPLIED and assessment.file == path


def _summary(reports: list[HotfixReport]) -> str:
    """The outcomes of ``reports`` in one phrase (``changed: a, b; unchanged: c``)."""
    by_outcome: dict[str, list[str]] = {}
    for report in reports:
        by_outcome.setdefault(str(report.outcome), []).append(report.id)
    return "; ".join(f"{outcome}: {', '.join(ids)}" for outcome, ids in by_outcome.items())


def _changed_since_apply(path: Path, record: JournalEntry) -> bool:
    return sha256(path.read_bytes()) != record.patched_sha256


def _mark_changed_since_apply(install: VllmInstall, reports: list[HotfixReport]) -> list[HotfixReport]:
    """``reports`` with each applied hotfix whose file no longer has the bytes apply wrote flagged and explained.

    An unreadable journal flags nothing here: ``revert`` is where it matters, and it says so.
    """
    journal = Journal(install.root, install.package_dir)
    try:
        records = journal.entries()
    except UserError:
        return reports
    flagged = []
    for report in reports:
        path = Path(report.file) if report.file else None
        record = records.get(journal.relative(path)) if path else None
        if report.status is Status.APPLIED and record and report.id in record.hotfixes and _changed_since_apply(path, record):
            report = replace(report, changed_since_apply=True, detail=(
                f"{report.detail}; {path.relative_to(install.root).as_posix()} changed since apply "
                f"(revert refuses it unless --force)"))
        flagged.append(report)
    return flagged


def _assess(tree: _Tree, entry: CatalogEntry) -> _Assessment:
    """Decide one hotfix's status on the parsed tree."""
    install = tree.install
    if not _version_in_range(install.version, entry.versions):
        return _Assessment(entry, Status.NOT_APPLICABLE, f"vLLM {install.version} is outside {entry.versions}")
    sites = [
        (path, function)
        for path in tree.declaring_files(entry)
        for function in _top_level_definitions(tree.parse(path).body, entry.function)
    ]
    if not sites:
        places = ", ".join(entry.modules)
        return _Assessment(entry, Status.DRIFTED, f"{entry.function} not found in {places} or sibling modules")
    if len(sites) > 1:
        where = ", ".join(sorted({tree.module_name_of(path) for path, _ in sites}))
        return _Assessment(entry, Status.DRIFTED, f"{entry.function} is defined {len(sites)} times ({where}): ambiguous")
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
    return _Assessment(entry, status_now, detail, file=path, module_name=module_name)


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


def _rewrite(module: cst.Module, entry: CatalogEntry) -> cst.Module:
    (function,) = _top_level_definitions(module.body, entry.function)
    return module.deep_replace(function, entry.load().rewrite(function))


def _version_in_range(version: str | None, specifier: str) -> bool:
    if version is None:
        return True  # unknown version: let the tree decide
    try:
        return SpecifierSet(specifier).contains(Version(version), prereleases=True)
    except InvalidVersion:
        return True


def _encoding_of(module: cst.Module) -> str:
    return module.encoding or "utf-8"


def _refuse_unwritable(path: Path, install: VllmInstall) -> None:
    if path.is_symlink():
        # Writing through the link would change a file other installs may share (uv's cache, a
        # checkout); replacing the link would change what the install is made of.
        raise UserError(
            f"{path} is a symbolic link to {path.resolve()}: patching it would change that file for everything "
            f"that links to it, or replace the link; nothing was changed",
            hint=f"to patch a private copy, replace the link by the file: cp --remove-destination {path.resolve()} {path}",
        )
    if not is_writable(path) or not is_writable(path.parent):
        raise UserError(
            f"{path} is read-only; nothing was changed",
            hint=f"chmod u+w {path} if it is yours to patch, or patch a writable copy: specdraft patch apply --vllm-root DIR",
        )


def _reinstall_command(install: VllmInstall) -> str:
    name = install.distribution or "vllm"
    pin = f"=={install.version}" if install.version else ""
    python = install.python or "python"
    return f"{python} -m pip install --force-reinstall --no-deps {name}{pin}"


def _report(install: VllmInstall, assessment: _Assessment, *, outcome: Outcome | None = None,
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
