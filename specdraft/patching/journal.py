"""Changing files that are not ours, safely: a lock, atomic writes, pristine backups and a journal.

Everything lives beside the patched package, in ``<root>/vllm/.specdraft/``, so it travels with
the install (a container layer, a copied venv):

- the lock: an exclusive ``flock`` on the ``vllm`` package directory itself, held for the whole of
  an apply or revert; a second process waits, then sees the state the first one left (locking
  the directory, not a file in it, means a refused or empty run leaves no trace);
- ``journal.json``: per patched file (path relative to ``<root>``), the hotfixes applied, the
  SHA-256 of the pristine and of the patched bytes, and the backup's name;
- ``backups/<relative path with / as __>.<sha256[:12]>.orig``: the pristine bytes.

A file is only ever replaced by rename (temporary file in the same directory, fsync, rename, mode
and owner preserved), so readers see the old or the new file, never a torn one. The writes of one
apply or revert happen inside ``Journal.transaction()``: if one of them fails, every file written
before it (target files, the journal, its backups and directories) is put back as it was.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

from specdraft.errors import UserError
from specdraft.patching.file_writes import drop_bytecode, is_writable, write_atomically

JOURNAL_DIR = ".specdraft"
LOCK_TIMEOUT_S = 300.0
"""How long an apply or revert waits for another one on the same install (which takes seconds) before it gives up:
a holder stopped or hung past that is not coming back on its own."""


def _wait_for_lock(handle: int, directory: Path, timeout_s: float) -> None:
    end = time.monotonic() + timeout_s
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= end:
                raise UserError(f"another process has held the lock on {directory} for {timeout_s:g} s; "
                                "nothing was changed",
                                hint=f"find it (fuser -v {directory}) and let it finish or stop it, then run "
                                     "this again") from None
            time.sleep(0.1)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class JournalEntry:
    """What specdraft did to one file."""

    pristine_sha256: str
    patched_sha256: str
    backup: str
    hotfixes: list[str] = field(default_factory=list)
    vllm_version: str | None = None
    applied_at: str = ""


class Journal:
    """The journal of one vLLM install (see the module docstring for the layout)."""

    def __init__(self, root: Path, package_dir: Path):
        self.root = root
        self.dir = package_dir / JOURNAL_DIR
        self.path = self.dir / "journal.json"
        self._undo: list[tuple[Path, bytes | None]] | None = None
        """Inside a transaction: each file written, with its bytes before (None: it did not exist)."""
        self._created: list[Path] = []
        self._unlink_after: list[Path] = []

    def entries(self) -> dict[str, JournalEntry]:
        if not self.path.is_file():
            return {}
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            entries = {name: JournalEntry(**entry) for name, entry in raw.get("files", {}).items()}
            for entry in entries.values():
                _check_entry(entry)
            return entries
        except (OSError, ValueError, TypeError, AttributeError) as err:
            raise UserError(
                f"specdraft's journal {self.path} is unreadable ({type(err).__name__}); nothing was changed",
                hint="reinstall vLLM to get pristine files, then remove that directory",
            ) from None

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the install's exclusive lock, waiting at most ``LOCK_TIMEOUT_S`` for another run to let go of it."""
        handle = os.open(self.dir.parent, os.O_RDONLY)
        try:
            _wait_for_lock(handle, self.dir.parent, LOCK_TIMEOUT_S)
            yield
        finally:
            os.close(handle)  # releases the lock

    def prepare(self) -> None:
        """Create the journal directory, or refuse (``UserError``) before anything is written."""
        if not self.dir.exists() and not is_writable(self.dir.parent):
            raise _not_writable(self.dir, None)
        missing = [d for d in (self.dir, self.dir / "backups") if not d.exists()]
        try:
            (self.dir / "backups").mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise _not_writable(self.dir, err) from None
        self._created += missing
        if not is_writable(self.dir) or not is_writable(self.dir / "backups"):
            raise _not_writable(self.dir, None)

    def record_apply(self, path: Path, pristine: bytes, patched: bytes, hotfix_ids: list[str], version: str | None) -> None:
        """Keep the pristine bytes (once per file) and note the patched file's hash and hotfixes."""
        entries = self.entries()
        name = self.relative(path)
        entry = entries.get(name)
        if entry is None or entry.patched_sha256 != sha256(pristine):
            # First patch of this file, or the file was replaced since (a reinstall): start afresh.
            backup = f"{name.replace('/', '__')}.{sha256(pristine)[:12]}.orig"
            self.write(self.dir / "backups" / backup, pristine, mode=0o644)
            entry = JournalEntry(pristine_sha256=sha256(pristine), patched_sha256="", backup=backup,
                                 vllm_version=version)
        entry.patched_sha256 = sha256(patched)
        entry.hotfixes = sorted(set(entry.hotfixes) | set(hotfix_ids))
        entry.applied_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        entries[name] = entry
        self._save(entries)

    def pristine(self, entry: JournalEntry) -> bytes:
        data = (self.dir / "backups" / entry.backup).read_bytes()
        if sha256(data) != entry.pristine_sha256:
            raise UserError(
                f"backup {self.dir / 'backups' / entry.backup} does not match its journal hash",
                hint="reinstall vLLM (pip install --force-reinstall --no-deps vllm) to get pristine files",
            )
        return data

    def forget(self, path: Path) -> None:
        entries = self.entries()
        entry = entries.pop(self.relative(path), None)
        if entry is not None:
            backup = self.dir / "backups" / entry.backup
            if self._undo is None:
                backup.unlink(missing_ok=True)
            else:
                self._unlink_after.append(backup)  # a rollback may still need it
            self._save(entries)

    def write(self, path: Path, data: bytes, *, mode: int | None = None) -> None:
        """``write_atomically``, undone by a failing transaction."""
        if self._undo is not None:
            try:
                self._undo.append((path, path.read_bytes()))
            except FileNotFoundError:
                self._undo.append((path, None))
        write_atomically(path, data, mode=mode)

    @contextmanager
    def transaction(self, action: str) -> Iterator[None]:
        """The writes of one ``action`` (apply, revert), all or nothing.

        If the block raises, every file written through ``write`` (and the journal, its backups and the
        directories ``prepare`` made) is put back as it was before the error goes on; an ``OSError`` becomes
        a ``UserError`` that says so. Backups ``forget`` drops are deleted only once the block succeeded.
        """
        self._undo, self._created, self._unlink_after = [], [], []
        try:
            yield
        except BaseException as err:
            left = self._roll_back()
            if isinstance(err, OSError) and not left:
                raise UserError(
                    f"{action} could not write {err.filename or 'a file'} ({err.strerror or err}) and was rolled back: "
                    f"every file is as it was before",
                    hint="free space or fix permissions there, then run the same command again",
                ) from None
            if left:
                raise UserError(
                    f"{action} failed ({err}) and could not put back {', '.join(map(str, left))}: "
                    f"those files are half changed",
                    hint="reinstall vLLM to get pristine files (pip install --force-reinstall --no-deps vllm), "
                         f"then remove {self.dir}",
                ) from None
            raise
        else:
            for backup in self._unlink_after:
                backup.unlink(missing_ok=True)
        finally:
            self._undo, self._created, self._unlink_after = None, [], []

    def _roll_back(self) -> list[Path]:
        """Put every file written in this transaction back; the files that could not be put back."""
        left = []
        for path, before in reversed(self._undo or []):
            try:
                if before is None:
                    path.unlink(missing_ok=True)
                else:
                    write_atomically(path, before)
                if path.suffix == ".py":
                    drop_bytecode(path)
            except OSError:
                left.append(path)
        for directory in reversed(self._created):
            try:
                directory.rmdir()
            except OSError:
                pass  # not empty (a file left above) or already gone: nothing more to undo
        return left

    def _save(self, entries: dict[str, JournalEntry]) -> None:
        document = {"files": {name: asdict(entry) for name, entry in sorted(entries.items())}}
        self.write(self.path, (json.dumps(document, indent=2) + "\n").encode(), mode=0o644)


def _check_entry(entry: JournalEntry) -> None:
    """Raise ``ValueError`` unless ``entry`` has the types written by ``record_apply`` and a backup name
    that stays in the backups directory (revert deletes it)."""
    texts = (entry.pristine_sha256, entry.patched_sha256, entry.backup)
    if not all(isinstance(text, str) for text in texts) or not isinstance(entry.hotfixes, list):
        raise ValueError("a journal entry has fields of the wrong type")
    if not all(isinstance(hotfix, str) for hotfix in entry.hotfixes):
        raise ValueError("a journal entry names a hotfix that is not a string")
    if not entry.backup or Path(entry.backup).name != entry.backup or entry.backup in (".", ".."):
        raise ValueError(f"backup name {entry.backup!r} is not a file name")


def _not_writable(path: Path, err: OSError | None) -> UserError:
    why = f": {err.strerror}" if err else ""
    return UserError(
        f"cannot write specdraft's journal directory {path}{why}",
        hint="run as the owner of the vLLM install, or patch a writable copy (--vllm-root DIR)",
    )
