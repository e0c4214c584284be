"""Remembered ``status`` decisions, keyed by the exact bytes they were made on.

Parsing vLLM's larger modules with libcst costs most of a ``status`` run. A decision depends only
on the bytes of the files that declare the hotfix's function, the hotfix file and the engine's
deciding code, so it is stored under a hash of all of them in ``$SPECDRAFT_CACHE/patch-status.json``
and reused when every byte is the same; any change (an apply, a hand edit, a reinstall, a new
hotfix version) is a new key, decided afresh on the tree. An unwritable cache is ignored.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from specdraft.cache import cache_root
from specdraft.patching.file_writes import write_atomically

_ENGINE_SOURCES = ("assessment.py", "engine.py", "hotfix.py", "anchors.py", "status_memo.py")
_KEEP = 256


class StatusMemo:
    def __init__(self, path: Path | None = None):
        self.path = path or cache_root() / "patch-status.json"
        try:
            self._decisions: dict[str, dict] = json.loads(self.path.read_text())
        except (OSError, ValueError):
            self._decisions = {}
        self._dirty = False

    @staticmethod
    def key(hotfix_sha256: str, install_root: Path, files: list[Path]) -> str:
        digest = hashlib.sha256(_engine_fingerprint().encode() + hotfix_sha256.encode())
        for path in sorted(files):
            digest.update(path.relative_to(install_root).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
        return digest.hexdigest()

    def get(self, key: str) -> dict | None:
        return self._decisions.get(key)

    def put(self, key: str, decision: dict) -> None:
        self._decisions.pop(key, None)
        self._decisions[key] = decision
        self._dirty = True

    def save(self) -> None:
        if not self._dirty:
            return
        kept = dict(list(self._decisions.items())[-_KEEP:])
        try:
            write_atomically(self.path, json.dumps(kept).encode(), mode=0o644)
        except OSError:
            pass  # a cache, nothing more


_fingerprint: str | None = None


def _engine_fingerprint() -> str:
    global _fingerprint
    if _fingerprint is None:
        here = Path(__file__).parent
        _fingerprint = hashlib.sha256(b"".join((here / name).read_bytes() for name in _ENGINE_SOURCES)).hexdigest()
    return _fingerprint
