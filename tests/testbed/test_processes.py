"""Process groups that never outlive their run: stopped on SIGTERM and at the deadline, and found and
stopped by the next run after a SIGKILL, by the ids recorded, never the caller's own group.

The children are a shell with a background grandchild (``sleep``), the shape of a server whose workers sit in
its process group: stopping only the leader would leave the grandchild.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from specdraft.process_groups import group_members
from specdraft.testbed.processes import PORT_RANGE, ProcessGroups, _start_time, free_port, healthy

ROOT = Path(__file__).resolve().parents[2]
DRIVER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from specdraft.testbed.processes import ProcessGroups
    record, deadline = Path(sys.argv[1]), float(sys.argv[2]) or None
    with ProcessGroups(record, deadline_s=deadline, grace_s=2) as groups:
        child = groups.start(["bash", "-c", "sleep 300 & sleep 300; wait"], record.with_suffix(".log"))
        while len(open(f"/proc/{child.pid}/task/{child.pid}/children").read().split()) < 2:
            time.sleep(0.05)
        print(child.pid, flush=True)
        time.sleep(300)
""")


def _driver(tmp_path: Path, deadline_s: float = 0) -> tuple[subprocess.Popen, int]:
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, str(tmp_path / "groups"), str(deadline_s)],
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    pgid = int(driver.stdout.readline())
    assert len(group_members(pgid)) >= 2, "the shell and its background sleep run in the child's group"
    return driver, pgid


def _gone(pgid: int, within_s: float = 10) -> bool:
    end = time.monotonic() + within_s
    while group_members(pgid) and time.monotonic() < end:
        time.sleep(0.1)
    return not group_members(pgid)


def test_sigterm_stops_every_child_group_before_the_run_exits(tmp_path):
    driver, pgid = _driver(tmp_path)
    driver.send_signal(signal.SIGTERM)
    assert driver.wait(timeout=30) == 128 + signal.SIGTERM
    assert _gone(pgid, within_s=0.5)
    assert (tmp_path / "groups").read_text() == "", "stopped groups leave the record"


def test_the_deadline_stops_the_children_and_the_run(tmp_path):
    started = time.monotonic()
    driver, pgid = _driver(tmp_path, deadline_s=3)
    assert driver.wait(timeout=30) == 128 + signal.SIGALRM
    assert _gone(pgid, within_s=0.5) and time.monotonic() - started < 20


def test_a_sigkilled_runs_leftovers_are_stopped_by_the_next_run(tmp_path):
    driver, pgid = _driver(tmp_path)
    driver.kill()  # what a device does at its limit when no handler may run
    driver.wait(timeout=10)
    time.sleep(1)
    assert group_members(pgid), "the grandchild outlives a SIGKILLed run (the leftover that held the GPUs)"
    assert ProcessGroups(tmp_path / "groups", grace_s=2).stop_leftovers() == [pgid]
    assert _gone(pgid)


def test_stop_leftovers_never_stops_the_callers_own_group(tmp_path):
    record = tmp_path / "groups"
    code = ("import os, sys\nfrom pathlib import Path\nfrom specdraft.testbed.processes import ProcessGroups, "
            "_start_time\nrecord = Path(sys.argv[1])\nrecord.write_text(f'{os.getpgrp()} "
            "{_start_time(os.getpgrp())}\\n')\nprint(ProcessGroups(record, grace_s=1).stop_leftovers())")
    done = subprocess.run([sys.executable, "-c", code, str(record)], capture_output=True, text=True, timeout=60,
                          start_new_session=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert (done.returncode, done.stdout.strip()) == (0, "[]")


def test_a_recorded_id_now_owned_by_another_process_is_left_alone(tmp_path):
    other = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        assert _start_time(other.pid) != "1"
        (tmp_path / "groups").write_text(f"{other.pid} 1\n")
        assert ProcessGroups(tmp_path / "groups", grace_s=1).stop_leftovers() == []
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


class _Picks(random.Random):
    def __init__(self, ports):
        super().__init__()
        self.ports = list(ports)

    def randrange(self, *_):
        return self.ports.pop(0)


def test_free_port_skips_a_port_someone_listens_on():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = held.getsockname()[1]
        spare = free_port(rng=random.Random(taken))
        assert free_port(rng=_Picks([taken, spare])) == spare
    assert PORT_RANGE[0] <= free_port() < PORT_RANGE[1]


def test_no_free_port_is_one_clear_error():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = held.getsockname()[1]
        with pytest.raises(OSError, match="no free port"):
            free_port(tries=3, rng=_Picks([taken] * 3))


HEALTH_SERVER = textwrap.dedent("""
    import http.server, sys
    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()
    http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Health).serve_forever()
""")


def test_healthy_answers_when_the_server_does_and_gives_up_when_a_process_exits(tmp_path):
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", HEALTH_SERVER, str(port)])
    exited = subprocess.Popen(["true"])
    exited.wait()
    try:
        assert healthy(port, [server], timeout_s=30)
        started = time.monotonic()
        assert not healthy(free_port(), [server, exited], timeout_s=30) and time.monotonic() - started < 1
    finally:
        server.kill()
        server.wait()
