"""Chosen members of a published wheel, read from PyPI without downloading the rest of it.

A vLLM wheel is 300 to 450 MB, nearly all compiled kernels; the Python sources the tests read are a
tenth of it. A zip names every member, with its offset, size and CRC-32, in a central directory at
its end, so a server that honours HTTP ``Range`` lets us read that directory, then only the wanted
members: ``zipfile`` parses the archive through ``RangeFile``, which fetches the byte ranges the
members occupy (neighbours closer than ``GAP`` merged into one request, requests run in parallel)
before they are extracted. A range read cannot hash the whole file, so each member is checked
against the CRC-32 the central directory gives it (``zipfile`` does, as it extracts); a server that
ignores ``Range`` answers the first request with the whole wheel, which is then kept in a spool file
and checked against the sha256 PyPI's index publishes.

The wheel's address, size and sha256 come from PyPI's JSON simple index (PEP 691).
"""

from __future__ import annotations

import bisect
import hashlib
import re
import zipfile
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable

import httpx
from packaging.tags import sys_tags
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version

from specdraft.errors import UserError

SIMPLE_INDEX = "https://pypi.org/simple/{project}/"
# Member ranges closer than this are read in one request: a request costs a round trip (~50-100 ms),
# which buys a few hundred KB at the bandwidth a download gets here.
GAP = 256 * 1024
# The first request reads this much of the wheel's end: the central directory of a vLLM wheel
# (2,000 to 3,000 members) is 200 to 400 KB, so it usually comes in the same request.
TAIL = 512 * 1024
PARALLEL = 8
TIMEOUT = httpx.Timeout(60.0, connect=20.0)
ATTEMPTS = 3


@dataclass(frozen=True)
class WheelFile:
    """One file of a release on the index: where it is, how big, and its published sha256 (if any)."""

    filename: str
    url: str
    size: int
    sha256: str | None = None


@dataclass
class Transfer:
    """What reading the members cost: bytes received, HTTP requests, and whether ranges were honoured."""

    bytes: int = 0
    requests: int = 0
    ranged: bool = True
    members: int = 0


def find_wheel(project: str, version: str, *, index: str = SIMPLE_INDEX) -> WheelFile:
    """The wheel of ``project==version`` pip would pick on this machine (any of them where none fits:
    the members read here are the same on every platform)."""
    url = index.format(project=project)
    files = _index_files(url)
    wanted = Version(version)
    wheels: dict[frozenset, WheelFile] = {}
    for entry in files:
        try:
            _, found, _, tags = parse_wheel_filename(entry["filename"])
        except InvalidWheelFilename:
            continue  # an sdist
        if found == wanted and not entry.get("yanked"):
            wheels[frozenset(tags)] = WheelFile(entry["filename"], entry["url"], int(entry["size"]),
                                                entry.get("hashes", {}).get("sha256"))
    if not wheels:
        raise UserError(f"PyPI lists no wheel of {project}=={version}", hint=f"open {url}")
    for tag in sys_tags():
        for tags, wheel in wheels.items():
            if tag in tags:
                return wheel
    return min(wheels.values(), key=lambda wheel: wheel.filename)


@lru_cache(maxsize=None)
def _index_files(url: str) -> tuple[dict, ...]:
    """The files of one project's index page (read once per process: a test run reads many releases)."""
    try:
        with httpx.Client(timeout=TIMEOUT, follow_redirects=True) as client:
            return tuple(_get(client, url, headers={"Accept": "application/vnd.pypi.simple.v1+json"}).json()["files"])
    except (httpx.HTTPError, ValueError, KeyError) as exc:
        raise UserError(f"could not read PyPI's index at {url}: {exc}",
                        hint=f"curl -H 'Accept: application/vnd.pypi.simple.v1+json' {url}") from None


def extract_members(wheel: WheelFile, dest: Path, wanted: Callable[[str], bool], *, spool: Path,
                    tail: int = TAIL, gap: int = GAP) -> Transfer:
    """Extract the members of ``wheel`` whose names ``wanted`` accepts into ``dest``.

    ``spool`` is a directory for the whole wheel, used only when the server ignores ``Range``; ``tail``
    is how much of the end the first request reads, ``gap`` how far apart two member ranges may be and
    still be read in one request.
    A member whose bytes do not match its CRC-32, or a whole wheel whose sha256 or size differs from
    the index's, is refused (``UserError``); ``dest`` may then hold the members extracted before it, so
    extract into a directory that is discarded on failure.
    """
    try:
        return _extract_members(wheel, dest, wanted, spool, tail, gap)
    except httpx.HTTPError as exc:
        raise UserError(f"could not read {wheel.filename} from {wheel.url}: {exc}",
                        hint=f"curl -sI {wheel.url}") from None


def _extract_members(wheel: WheelFile, dest: Path, wanted: Callable[[str], bool], spool: Path, tail: int,
                     gap: int) -> Transfer:
    transfer = Transfer()
    with httpx.Client(timeout=TIMEOUT, follow_redirects=True,
                      limits=httpx.Limits(max_connections=PARALLEL)) as client:
        source = RangeFile.open(client, wheel, transfer, spool, tail)
        try:
            with zipfile.ZipFile(source) as archive:
                members = [info for info in archive.infolist() if wanted(info.filename) and not info.is_dir()]
                if isinstance(source, RangeFile):
                    source.prefetch(member_spans(archive, members), gap)
                for info in members:
                    archive.extract(info, dest)
        except (zipfile.BadZipFile, zlib.error) as exc:  # a CRC-32 that does not match, or a broken stream
            raise UserError(f"{wheel.filename} from {wheel.url}: {exc}",
                            hint="run the same command again (what went wrong in transit is not kept)") from None
        finally:
            source.close()
    transfer.members = len(members)
    return transfer


def member_spans(archive: zipfile.ZipFile, members: list[zipfile.ZipInfo]) -> list[tuple[int, int]]:
    """Byte ranges ``[start, end)`` of each member: its local header up to the next member's (the local
    header's extra field may differ from the central directory's, so its length is not known before)."""
    starts = sorted({info.header_offset for info in archive.infolist()} | {archive.start_dir})
    return [(info.header_offset, starts[bisect.bisect_right(starts, info.header_offset)]) for info in members]


def coalesce(spans: list[tuple[int, int]], gap: int = GAP) -> list[tuple[int, int]]:
    """The spans sorted, those less than ``gap`` apart merged."""
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start - merged[-1][1] < gap:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(start, end) for start, end in merged]


@dataclass
class RangeFile:
    """A read-only, seekable view of a remote file that holds only the ranges fetched so far."""

    client: httpx.Client
    wheel: WheelFile
    transfer: Transfer
    starts: list[int] = field(default_factory=list)
    chunks: list[bytes] = field(default_factory=list)
    pos: int = 0

    @classmethod
    def open(cls, client: httpx.Client, wheel: WheelFile, transfer: Transfer, spool: Path, tail: int = TAIL):
        """A ``RangeFile`` over ``wheel`` with its end already read, or, where the server answers the
        first range request with the whole file, that file spooled and its sha256 checked."""
        view = cls(client, wheel, transfer)
        start = max(wheel.size - tail, 0)
        with client.stream("GET", wheel.url, headers={"Range": f"bytes={start}-"}) as answer:
            answer.raise_for_status()
            if answer.status_code == 200:
                transfer.ranged = False
                transfer.requests += 1
                return _spool(answer, wheel, transfer, spool / wheel.filename).open("rb")
            answer.read()
            view._add(start, _body(answer, start, wheel.size, wheel.size))
        view._count(wheel.size - start)
        return view

    def prefetch(self, spans: list[tuple[int, int]], gap: int = GAP) -> None:
        """Fetch the bytes of ``spans`` (coalesced, in parallel) so that reads inside them hit no server."""
        wanted = [span for span in coalesce(spans, gap) if not self._holds(*span)]
        with ThreadPoolExecutor(PARALLEL) as pool:
            for (start, end), data in zip(wanted, pool.map(lambda span: self._fetch(*span), wanted)):
                self._add(start, data)
                self._count(end - start)

    def _fetch(self, start: int, end: int) -> bytes:
        for attempt in range(ATTEMPTS):
            try:
                answer = _get(self.client, self.wheel.url, headers={"Range": f"bytes={start}-{end - 1}"})
                return _body(answer, start, end, self.wheel.size)
            except httpx.TransportError:
                if attempt == ATTEMPTS - 1:
                    raise

    def _count(self, size: int) -> None:
        self.transfer.requests += 1
        self.transfer.bytes += size

    def _add(self, start: int, data: bytes) -> None:
        at = bisect.bisect_left(self.starts, start)
        self.starts.insert(at, start)
        self.chunks.insert(at, data)

    def _find(self, start: int, end: int) -> bytes | None:
        for at in range(bisect.bisect_right(self.starts, start) - 1, -1, -1):
            chunk_start, chunk = self.starts[at], self.chunks[at]
            if chunk_start + len(chunk) >= end:
                return chunk[start - chunk_start:end - chunk_start]
        return None

    def _holds(self, start: int, end: int) -> bool:
        return self._find(start, end) is not None

    # the file protocol zipfile uses
    def read(self, size: int | None = -1) -> bytes:
        end = self.wheel.size if size is None or size < 0 else min(self.pos + size, self.wheel.size)
        data = self._find(self.pos, end)
        if data is None:  # outside what was prefetched: the central directory, read on demand
            self._add(self.pos, self._fetch(self.pos, end))
            self._count(end - self.pos)
            data = self._find(self.pos, end)
        self.pos = end
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = {0: offset, 1: self.pos + offset, 2: self.wheel.size + offset}[whence]
        if self.pos < 0:
            raise OSError(f"seek before the start of {self.wheel.filename}")
        return self.pos

    def tell(self) -> int:
        return self.pos

    def seekable(self) -> bool:
        return True

    def close(self) -> None:
        self.chunks.clear()
        self.starts.clear()


def _get(client: httpx.Client, url: str, headers: dict[str, str]) -> httpx.Response:
    answer = client.get(url, headers=headers)
    answer.raise_for_status()
    return answer


_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")


def _body(answer: httpx.Response, start: int, end: int, total: int) -> bytes:
    """The bytes ``[start, end)`` of a 206 answer, refused if the server sent another range, or the
    file it holds is not the size the index gave."""
    got = _CONTENT_RANGE.fullmatch(answer.headers.get("content-range", ""))
    if (answer.status_code != 206 or not got or (int(got[1]), int(got[2]) + 1) != (start, end)
            or got[3] not in ("*", str(total))):
        raise UserError(f"{answer.url} answered bytes {start}-{end - 1} of {total} with status "
                        f"{answer.status_code}, Content-Range {answer.headers.get('content-range')!r}",
                        hint="run the same command again; if it persists the server does not serve ranges")
    data = answer.content
    if len(data) != end - start:
        raise UserError(f"{answer.url}: {len(data)} bytes where {end - start} were asked for",
                        hint="run the same command again")
    return data


def _spool(answer: httpx.Response, wheel: WheelFile, transfer: Transfer, path: Path) -> Path:
    digest = hashlib.sha256()
    with path.open("wb") as out:
        for block in answer.iter_bytes(1 << 20):
            digest.update(block)
            out.write(block)
            transfer.bytes += len(block)
    if transfer.bytes != wheel.size or (wheel.sha256 and digest.hexdigest() != wheel.sha256):
        path.unlink()
        raise UserError(f"{wheel.filename} from {wheel.url}: {transfer.bytes} bytes, sha256 {digest.hexdigest()}; "
                        f"the index lists {wheel.size} bytes, sha256 {wheel.sha256}",
                        hint="run the same command again (the download is not kept)")
    return path
