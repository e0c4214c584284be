"""Real things that never answer, for the tests of specdraft's bounded waits: an executable that sleeps after
starting a child that sleeps (an interpreter or a node command that hangs), a server that takes connections
and never replies; and whether any of their processes outlived the wait."""

from __future__ import annotations

import os
import socket
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


def hanging_executable(directory: Path, name: str = "python") -> tuple[Path, Path]:
    """An executable script that starts ``sleep 300`` in the background, writes both pids, and waits forever.

    Returns (the script, the file its pids go to)."""
    pids = directory / f"{name}.pids"
    script = directory / name
    script.write_text(f"#!/bin/sh\nsleep 300 &\necho $! > {pids}.tmp\necho $$ >> {pids}.tmp\n"
                      f"mv {pids}.tmp {pids}\nwait\n")
    script.chmod(0o755)
    return script, pids


def started_pids(pids: Path, wait_s: float = 5.0) -> list[int]:
    """The pids a ``hanging_executable`` wrote (waiting for them briefly: it writes them as it starts)."""
    end = time.monotonic() + wait_s
    while not pids.exists() and time.monotonic() < end:
        time.sleep(0.05)
    return [int(line) for line in pids.read_text().split()] if pids.exists() else []


def is_running(pid: int) -> bool:
    """True while ``pid`` runs (a zombie left for a parent that does not reap it counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def still_running(pids: list[int], grace_s: float = 2.0) -> list[int]:
    """The pids still running after ``grace_s`` (a killed process takes a moment to go)."""
    end = time.monotonic() + grace_s
    while any(is_running(p) for p in pids) and time.monotonic() < end:
        time.sleep(0.05)
    return [p for p in pids if is_running(p)]


@contextmanager
def stalled_server(answers: dict[str, bytes] | None = None, otherwise: bytes | None = None) -> Iterator[str]:
    """A socket on localhost that accepts every connection and never answers; yields ``http://127.0.0.1:PORT``.

    ``answers``: requests (``GET /v1/models``) it does answer, with these bytes as a 200 JSON reply; every other
    request is held unanswered (a server whose engine is stuck while its HTTP front still lists models), or
    answered with the raw bytes ``otherwise`` (an HTTP error, or what is no HTTP at all) when given."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    listener.settimeout(0.1)
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve(connection: socket.socket) -> None:
        connection.settimeout(0.1)
        data = b""
        while not stop.is_set():
            try:
                chunk = connection.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                return
            if not chunk:
                return
            data += chunk
            while b"\r\n\r\n" in data:
                head, data = data.split(b"\r\n\r\n", 1)
                words = head.split(b" ", 2)
                body = (answers or {}).get(f"{words[0].decode()} {words[1].decode().split('?')[0]}")
                if body is None and otherwise is not None:
                    connection.sendall(otherwise)
                    connection.shutdown(socket.SHUT_WR)
                    return
                if body is None:
                    return  # held: the connection stays open, unanswered, until the server stops
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                                   + str(len(body)).encode() + b"\r\n\r\n" + body)

    def accept() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                continue
            held.append(connection)
            threading.Thread(target=serve, args=(connection,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        for connection in held:
            connection.close()
        listener.close()


def kill_leftovers(pids: list[int]) -> None:
    """Stop what a failed test left running (only the pids it started)."""
    for pid in pids:
        try:
            os.kill(pid, 9)
        except OSError:
            pass
