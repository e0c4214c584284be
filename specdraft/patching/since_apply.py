"""What changed since apply, read from the journal: the applied files ``status`` flags, and what ``revert`` may
restore or must refuse."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from specdraft.errors import UserError
from specdraft.patching.assessment import Assessment
from specdraft.patching.journal import Journal, JournalEntry, sha256
from specdraft.patching.locate import VllmInstall
from specdraft.patching.reports import HotfixReport, Status


@dataclass
class RevertPlan:
    refusals: dict[str, str]
    """Hotfix id -> why revert must refuse it."""
    restore: dict[Path, bytes]
    """File -> the pristine bytes to write back."""
    found: dict[str, str]
    """Hotfix id -> what revert found and will do (the report's detail once it is done)."""


def revert_plan(journal: Journal, assessments: list[Assessment], selected: set[str], force: bool) -> RevertPlan:
    """What revert must refuse and what it would restore, from the journal (every file it names) and the tree."""
    records = journal.entries()
    plan = RevertPlan({}, {}, {})
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
            elif not force and changed_since_apply(path, record):
                plan.refusals[a.entry.id] = (f"{path} changed since apply; refusing to overwrite it "
                                             f"(--force restores the original anyway)")
            else:
                plan.found[a.entry.id] = ("original bytes restored (the change made since apply is discarded)"
                                          if changed_since_apply(path, record) else "original bytes restored")
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


def _is_in(assessment: Assessment, path: Path) -> bool:
    """Whether the tree shows ``assessment``'s hotfix applied in ``path``."""
    return assessment.status is Status.APPLIED and assessment.file == path


def changed_since_apply(path: Path, record: JournalEntry) -> bool:
    return sha256(path.read_bytes()) != record.patched_sha256


def mark_changed_since_apply(install: VllmInstall, reports: list[HotfixReport]) -> list[HotfixReport]:
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
        if report.status is Status.APPLIED and record and report.id in record.hotfixes and changed_since_apply(path, record):
            report = replace(report, changed_since_apply=True, detail=(
                f"{report.detail}; {path.relative_to(install.root).as_posix()} changed since apply "
                f"(revert refuses it unless --force)"))
        flagged.append(report)
    return flagged
