"""Members of a wheel read over HTTP ranges are what a full download holds; a member or a wheel that does not
match what the archive or the index says is refused."""

from __future__ import annotations

import hashlib
import io
import re
import struct
import threading
import zipfile
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from specdraft.errors import UserError
from tools.remote_wheel import WheelFile, coalesce, extract_members, find_wheel

PUBLISHED = ("packaging", "24.2")  # a small pure-Python wheel on PyPI (54 KB, 16 modules)


def is_source(name: str) -> bool:
    return name.endswith(".py")


@pytest.fixture(scope="module")
def published() -> tuple[WheelFile, bytes]:
    wheel = find_wheel(*PUBLISHED)
    body = httpx.get(wheel.url, follow_redirects=True, timeout=60).content
    assert len(body) == wheel.size and hashlib.sha256(body).hexdigest() == wheel.sha256
    return wheel, body


def full_extraction(body: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        return {name: archive.read(name) for name in archive.namelist() if is_source(name)}


def extracted(dest: Path) -> dict[str, bytes]:
    return {path.relative_to(dest).as_posix(): path.read_bytes() for path in dest.rglob("*") if path.is_file()}


@contextmanager
def serving(body: bytes, *, honours_range: bool) -> Iterator[str]:
    """A real HTTP server on localhost holding ``body``, answering ``Range`` (206) or ignoring it (200)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            asked = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range", ""))
            if not honours_range or not asked:
                self._answer(200, body, {})
                return
            first, last = asked.groups()
            start = len(body) - int(last) if not first else int(first)
            end = len(body) if not first or not last else min(int(last) + 1, len(body))
            self._answer(206, body[start:end], {"Content-Range": f"bytes {start}-{end - 1}/{len(body)}"})

        def _answer(self, status: int, data: bytes, headers: dict[str, str]):
            self.send_response(status)
            for key, value in {**headers, "Content-Length": str(len(data))}.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True  # a handler still writing to a client that gave up must not hold the test
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/wheel.whl"
    finally:
        server.shutdown()
        server.server_close()


def test_a_range_read_of_a_published_wheel_holds_what_its_full_extraction_holds(published, tmp_path):
    wheel, body = published
    # a small first read and no merging: every member is a range request of its own
    transfer = extract_members(wheel, tmp_path / "out", is_source, spool=tmp_path, tail=4096, gap=0)
    assert extracted(tmp_path / "out") == full_extraction(body) != {}
    assert transfer.ranged and transfer.requests > len(full_extraction(body)) // 2
    assert transfer.bytes < wheel.size and not (tmp_path / wheel.filename).exists()


def test_nearby_members_are_read_in_one_request(published, tmp_path):
    wheel, body = published
    transfer = extract_members(wheel, tmp_path / "out", is_source, spool=tmp_path, tail=4096)
    assert transfer.requests == 2  # the end of the file, then every member at once
    assert extracted(tmp_path / "out") == full_extraction(body)


def test_ranges_closer_than_the_gap_merge_and_others_stay_apart():
    assert coalesce([(50, 60), (0, 10), (12, 20), (100, 110)], gap=5) == [(0, 20), (50, 60), (100, 110)]


def test_a_server_that_ignores_range_gives_the_whole_wheel_checked_by_its_sha256(published, tmp_path):
    _, body = published
    with serving(body, honours_range=False) as url:
        wheel = WheelFile("wheel.whl", url, len(body), hashlib.sha256(body).hexdigest())
        transfer = extract_members(wheel, tmp_path / "out", is_source, spool=tmp_path)
    assert not transfer.ranged and transfer.bytes == len(body) and transfer.requests == 1
    assert extracted(tmp_path / "out") == full_extraction(body)


def test_a_whole_wheel_whose_sha256_is_not_the_index_s_is_refused(published, tmp_path):
    _, body = published
    with serving(body, honours_range=False) as url:
        wheel = WheelFile("wheel.whl", url, len(body), hashlib.sha256(b"another file").hexdigest())
        with pytest.raises(UserError, match="sha256"):
            extract_members(wheel, tmp_path / "out", is_source, spool=tmp_path)
    assert not (tmp_path / "wheel.whl").exists()


def test_a_local_server_that_honours_range_gives_the_same_members(published, tmp_path):
    _, body = published
    with serving(body, honours_range=True) as url:
        transfer = extract_members(WheelFile("wheel.whl", url, len(body)), tmp_path / "out", is_source,
                                   spool=tmp_path, tail=4096, gap=0)
    assert transfer.ranged and extracted(tmp_path / "out") == full_extraction(body)


def with_wrong_crc(body: bytes, member: str) -> bytes:
    """``body`` with the CRC-32 the central directory gives ``member`` changed (its bytes left as they are)."""
    entry = _central_entry(body, member)
    (crc,) = struct.unpack_from("<I", body, entry + 16)
    return body[:entry + 16] + struct.pack("<I", crc ^ 1) + body[entry + 20:]


def _central_entry(body: bytes, member: str) -> int:
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        start = archive.start_dir
    at = start
    while body[at:at + 4] == b"PK\x01\x02":
        name_len, extra_len, comment_len = struct.unpack_from("<HHH", body, at + 28)
        if body[at + 46:at + 46 + name_len].decode() == member:
            return at
        at += 46 + name_len + extra_len + comment_len
    raise AssertionError(f"{member} is not in the archive")


def test_a_member_whose_bytes_do_not_match_its_crc_is_refused(published, tmp_path):
    _, body = published
    member = sorted(full_extraction(body))[0]
    with serving(with_wrong_crc(body, member), honours_range=True) as url:
        with pytest.raises(UserError, match=f"CRC-32 for file '{member}'"):
            extract_members(WheelFile("wheel.whl", url, len(body)), tmp_path / "out", is_source, spool=tmp_path)


def test_a_release_the_index_does_not_list_is_one_user_error():
    with pytest.raises(UserError, match="PyPI lists no wheel of packaging==0.0.1"):
        find_wheel("packaging", "0.0.1")


def test_a_server_that_cannot_be_reached_is_one_user_error(tmp_path):
    with serving(b"", honours_range=True) as url:
        pass  # the port is closed again: nothing answers there
    with pytest.raises(UserError, match="could not read wheel.whl"):
        extract_members(WheelFile("wheel.whl", url, 100), tmp_path / "out", is_source, spool=tmp_path)
