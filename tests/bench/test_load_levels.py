"""Load levels without a server: the closed loop that keeps each level's batch full, the level shapes bench
turns away, and where speculation stops paying in a saved comparison."""

import json
import math
import socket
import threading
import time

import pytest

from specdraft.bench import BenchResult, LevelResult, Summary, where_speculation_pays
from specdraft.bench.client import RequestTiming, _closed_loop
from specdraft.cli import main
from specdraft.errors import UserError


class Server:
    """Stands in for the network side of one request: sleeps, and counts how many are in flight at once."""

    def __init__(self, seconds: float, fail_at: int | None = None):
        self.seconds, self.fail_at = seconds, fail_at
        self.lock = threading.Lock()
        self.in_flight = self.most_in_flight = 0
        self.sent: list[int] = []

    def __call__(self, index: int) -> RequestTiming:
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            self.sent.append(index)
        time.sleep(self.seconds)
        with self.lock:
            self.in_flight -= 1
        if index == self.fail_at:
            raise UserError(f"request {index} failed")
        return RequestTiming(output_tokens=index + 1, ttft_s=0.001, e2e_s=self.seconds, first_token_s=0.001,
                             last_token_s=self.seconds)


def test_a_level_keeps_every_slot_busy_until_its_count_is_sent():
    server = Server(0.02)
    timings = _closed_loop(server, 3, requests=7)
    assert [t.output_tokens for t in timings] == [1, 2, 3, 4, 5, 6, 7]  # in the order they were sent
    assert server.most_in_flight == 3 and sorted(server.sent) == list(range(7))


def test_a_duration_level_sends_until_time_is_up_and_lets_requests_in_flight_finish():
    server = Server(0.05)
    start = time.perf_counter()
    timings = _closed_loop(server, 2, duration_s=0.3)
    wall = time.perf_counter() - start
    assert 0.3 <= wall < 0.3 + 0.05 + 0.1
    assert server.most_in_flight == 2 and server.in_flight == 0
    assert len(timings) == len(server.sent) >= 2 * 0.3 / 0.05 - 2


def test_a_failed_request_stops_the_level_and_its_error_is_raised():
    server = Server(0.01, fail_at=2)
    with pytest.raises(UserError, match="request 2 failed"):
        _closed_loop(server, 2, requests=50)
    assert len(server.sent) < 50


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("args, message", [
    (["--duration", "0"], "--duration must be a finite number of seconds > 0, got 0.0"),
    (["--duration", "-5"], "--duration must be a finite number of seconds > 0, got -5.0"),
    (["--duration", "nan"], "--duration must be a finite number of seconds > 0, got nan"),
    (["--duration", "inf"], "--duration must be a finite number of seconds > 0, got inf"),
    (["--warmup", "-1"], "--warmup must be 0 or more requests per level, got -1"),
])
def test_a_level_shape_that_cannot_run_is_refused_before_the_server_is_asked(capsys, args, message):
    code = main(["bench", "--base-url", f"http://127.0.0.1:{closed_port()}", "--model", "m", *args])
    err = capsys.readouterr().err
    assert code == 2 and err.splitlines()[0] == f"specdraft: error: {message}"


def test_requests_and_duration_are_one_or_the_other(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "--base-url", "http://127.0.0.1:1", "--model", "m", "--requests", "4", "--duration", "10"])
    assert exit_.value.code == 2
    assert "--duration: not allowed with argument --requests" in capsys.readouterr().err


def level(concurrency: int, *, decode: float, output: float) -> LevelResult:
    e2e = Summary(2.0, 2.0, 2.0, 2.0, 2.0)
    return LevelResult(concurrency, 2 * concurrency, 2 * concurrency * 64, 4.0, output, decode, None, e2e, e2e, None,
                       warmup_requests=concurrency, duration_s=4.0, mean_in_flight=concurrency * 0.98)


def saved(tmp_path, name: str, levels: list[LevelResult]) -> str:
    result = BenchResult(f"http://{name}", name, 64, 0.0, "built-in", 8, tuple(levels), name == "spec")
    path = tmp_path / f"{name}.json"
    result.save(path)
    return str(path)


@pytest.fixture
def spec_and_target(tmp_path):
    # per-sequence speed keeps a gain up to 4; the whole server's throughput stops gaining at 4
    spec = saved(tmp_path, "spec", [level(1, decode=60, output=58), level(2, decode=50, output=95),
                                    level(4, decode=40, output=150), level(8, decode=20, output=150)])
    target = saved(tmp_path, "target", [level(1, decode=30, output=29), level(2, decode=29, output=56),
                                        level(4, decode=28, output=160), level(8, decode=25, output=190)])
    return spec, target


def test_the_json_says_per_level_where_speculation_stops_paying(capsys, spec_and_target):
    assert main(["bench", "--compare-results", *spec_and_target, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["speculation_pays"] == {
        "aggregate": {"pays_at": [1, 2], "loses_at": [4, 8], "stops_paying_at": 4},
        "per_sequence": {"pays_at": [1, 2, 4], "loses_at": [8], "stops_paying_at": 8},
    }
    assert [(lv["warmup_requests"], lv["duration_s"], lv["mean_in_flight"]) for lv in data["levels"]] == [
        (1, 4.0, 0.98), (2, 4.0, 1.96), (4, 4.0, 3.92), (8, 4.0, 7.84)]


def test_the_table_shows_aggregate_and_per_sequence_throughput_and_where_speculation_stops(capsys, spec_and_target):
    assert main(["bench", "--compare-results", *spec_and_target]) == 0
    out = capsys.readouterr().out
    assert "per-seq tok/s  aggregate tok/s" in out
    assert ("aggregate: speculation pays at 1 (2.00x), 2 (1.70x) and stops paying at concurrency 4 "
            "(loses at 4 (0.94x), 8 (0.79x))") in out
    assert "per-sequence: speculation pays at 1 (2.00x), 2 (1.72x), 4 (1.43x) and stops paying at concurrency 8" in out


def test_a_run_without_a_baseline_says_nothing_about_paying(capsys, spec_and_target):
    spec, _ = spec_and_target
    result = BenchResult.from_json(json.loads(open(spec).read()))
    assert result.to_json()["speculation_pays"] is None


def test_unknown_ratios_are_left_out_not_counted_as_losses():
    aggregate, per_sequence = where_speculation_pays([])
    assert aggregate.sentence() == "aggregate: no level to compare"
    from specdraft.bench import Speedup

    _, per_sequence = where_speculation_pays([Speedup(1, None, 1.5, None), Speedup(2, math.nan, 0.5, None)])
    assert (per_sequence.pays_at, per_sequence.loses_at) == ((), ())


def test_a_result_saved_before_load_levels_still_reads(tmp_path):
    path = saved(tmp_path, "old", [level(1, decode=30, output=29)])
    data = json.loads(open(path).read())
    for lv in data["levels"]:
        for key in ("warmup_requests", "duration_s", "mean_in_flight"):
            del lv[key]
    old = BenchResult.from_json(data).levels[0]
    assert (old.warmup_requests, old.duration_s, old.mean_in_flight) == (0, None, None)
