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

import difflib
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from specdraft.errors import UserError
from specdraft.patching import catalog, interruptions
from specdraft.patching.assessment import Assessment, SourceTree, assess, report_of, rewrite, version_in_range
from specdraft.patching.file_writes import drop_bytecode, is_writable
from specdraft.patching.journal import Journal
from specdraft.patching.locate import VllmInstall
from specdraft.patching.reports import HotfixReport, Outcome, Status
from specdraft.patching.since_apply import mark_changed_since_apply, revert_plan
from specdraft.patching.status_memo import StatusMemo

if TYPE_CHECKING:
    import libcst as cst

    from specdraft.patching.catalog import CatalogEntry


def status(install: VllmInstall, only: list[str] | None = None) -> list[HotfixReport]:
    """Where each hotfix stands on ``install``: pending, applied, fixed-upstream, drifted or not-applicable.

    Decisions already made on byte-identical files are reused (see ``status_memo``).
    """
    tree = SourceTree(install)
    memo = StatusMemo()
    reports = []
    for entry in catalog.select(only):
        if not version_in_range(install.version, entry.versions):
            reports.append(report_of(install, assess(tree, entry)))
            continue
        files = tree.declaring_files(entry) + [p for p in map(tree.file_of, entry.context) if p.is_file()]
        key = memo.key(entry.sha256, install.root, files)
        known = memo.get(key)
        if known is None:
            assessment = assess(tree, entry)
            memo.put(key, {
                "status": assessment.status.value, "detail": assessment.detail, "module": assessment.module_name,
                "file": assessment.file.relative_to(install.root).as_posix() if assessment.file else None,
            })
        else:
            assessment = Assessment(entry, Status(known["status"]), known["detail"],
                                     file=install.root / known["file"] if known["file"] else None,
                                     module_name=known["module"])
        reports.append(report_of(install, assessment))
    memo.save()
    return mark_changed_since_apply(install, reports)


def diff(install: VllmInstall, only: list[str] | None = None) -> list[HotfixReport]:
    """The unified diff ``apply`` would write, per hotfix; changes nothing.

    Hotfixes editing the same file get consecutive diffs, so concatenated they form one patch.
    """
    tree = SourceTree(install)
    reports = []
    for assessment in [assess(tree, entry) for entry in catalog.select(only)]:
        text = ""
        if assessment.status is Status.PENDING:
            before = tree.parse(assessment.file)
            after = rewrite(before, assessment.entry)
            tree.replace(assessment.file, after)
            relative = assessment.file.relative_to(install.root).as_posix()
            text = "".join(difflib.unified_diff(
                before.code.splitlines(keepends=True), after.code.splitlines(keepends=True),
                fromfile=f"a/{relative}", tofile=f"b/{relative}",
            ))
        reports.append(report_of(install, assessment, diff=text))
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
    tree = SourceTree(install)
    assessments = [assess(tree, entry) for entry in selection]
    drifted = [a.entry.id for a in assessments if a.status is Status.DRIFTED]
    if drifted:
        return [
            report_of(install, a, outcome=Outcome.REFUSED if a.status in (Status.DRIFTED, Status.PENDING) else Outcome.UNCHANGED,
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
            module = rewrite(module, entry)
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
        after = assess(tree, before.entry)
        changed = before.status is Status.PENDING
        detail = "patched" if changed else ("already applied" if after.status is Status.APPLIED else after.detail)
        reports.append(report_of(install, after, outcome=Outcome.CHANGED if changed else Outcome.UNCHANGED, detail=detail))
    return reports


def verify(install: VllmInstall, only: list[str] | None = None, probe: bool = False) -> list[HotfixReport]:
    """Confirm each fix is in place: statically (re-parse), and with ``probe`` behaviourally.

    The probe runs in the install's interpreter in a subprocess (see ``specdraft.patching.probe``);
    a probe that cannot run there is a failed verification, with the reason.
    """
    from specdraft.patching.probe import run_probes

    tree = SourceTree(install)
    assessments = [assess(tree, entry) for entry in catalog.select(only)]
    probed = {}
    if probe:
        probed = run_probes(install, [(a.entry.load(), a.module_name) for a in assessments if a.file is not None
                                      and a.status is not Status.NOT_APPLICABLE])
    reports = []
    for assessment in assessments:
        if assessment.status is Status.NOT_APPLICABLE:
            reports.append(report_of(install, assessment, outcome=Outcome.SKIPPED))
            continue
        passed = assessment.status in (Status.APPLIED, Status.FIXED_UPSTREAM)
        detail = f"fixed form present ({assessment.detail})" if passed else f"fix missing: {assessment.detail}"
        if assessment.entry.id in probed:
            result = probed[assessment.entry.id]
            passed = passed and result.passed
            detail = f"{detail}; probe {result.describe()}"
        reports.append(report_of(install, assessment, outcome=Outcome.PASSED if passed else Outcome.FAILED, detail=detail))
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
    tree = SourceTree(install)
    assessments = [assess(tree, entry) for entry in selection]
    plan = revert_plan(journal, assessments, {entry.id for entry in selection}, force)
    if plan.refusals:
        blocked = f"not reverted: {', '.join(sorted(plan.refusals))} refused, and revert is all or nothing"
        return [
            report_of(install, a, outcome=Outcome.REFUSED, detail=plan.refusals.get(a.entry.id, blocked))
            if a.entry.id in plan.refusals or a.entry.id in plan.found else
            report_of(install, a, outcome=Outcome.UNCHANGED, detail=f"not applied ({a.detail})")
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
        after = assess(tree, before.entry)
        if before.entry.id in plan.found:
            reports.append(report_of(install, after, outcome=Outcome.CHANGED, detail=plan.found[before.entry.id]))
        else:
            reports.append(report_of(install, after, outcome=Outcome.UNCHANGED, detail=f"not applied ({after.detail})"))
    return reports


def _summary(reports: list[HotfixReport]) -> str:
    """The outcomes of ``reports`` in one phrase (``changed: a, b; unchanged: c``)."""
    by_outcome: dict[str, list[str]] = {}
    for report in reports:
        by_outcome.setdefault(str(report.outcome), []).append(report.id)
    return "; ".join(f"{outcome}: {', '.join(ids)}" for outcome, ids in by_outcome.items())


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
