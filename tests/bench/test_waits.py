"""bench against a server that stalls ends after its --timeout with one line, exit 2; sizes it cannot serve
(--concurrency above its bound) and timeouts that are not seconds are refused before any connection."""

import json
import time

import pytest

from specdraft.bench.client import MAX_CONCURRENCY
from specdraft.cli import main
from tests.stalls import stalled_server


def _bench(capsys, url: str, *extra: str) -> tuple[int, str, float]:
    started = time.monotonic()
    code = main(["bench", "--base-url", url, "--model", "m", *extra])
    return code, capsys.readouterr().err, time.monotonic() - started


def test_a_server_that_accepts_and_never_answers_ends_the_run_at_the_timeout(capsys):
    with stalled_server() as url:
        code, err, seconds = _bench(capsys, url, "--timeout", "1")
    assert code == 2 and "Traceback" not in err
    assert err.splitlines()[0] == (f"specdraft: error: the server at {url}/v1/models took the request and sent "
                                   "nothing for 1 s; bench stopped")
    assert "bench --timeout SECONDS" in err.splitlines()[1]
    assert seconds < 10


def test_a_server_that_lists_its_models_and_stalls_on_a_request_ends_at_the_timeout(capsys):
    models = json.dumps({"data": [{"id": "m"}]}).encode()
    with stalled_server({"GET /v1/models": models, "GET /metrics": b""}) as url:
        code, err, seconds = _bench(capsys, url, "--timeout", "1", "--requests", "1", "--warmup", "0")
    assert code == 2 and "Traceback" not in err
    assert f"the server at {url}/v1/completions took the request and sent nothing for 1 s" in err
    assert seconds < 10


@pytest.mark.parametrize("levels", [f"{MAX_CONCURRENCY + 1}", f"1,4,{10**9}"])
def test_a_concurrency_above_the_bound_is_refused_before_any_connection(capsys, levels):
    with stalled_server() as url:
        code, err, seconds = _bench(capsys, url, "--concurrency", levels)
    assert code == 2 and err.startswith(f"specdraft: error: --concurrency {levels.split(',')[-1]}: bench keeps at "
                                        f"most {MAX_CONCURRENCY} requests in flight")
    assert seconds < 5  # refused up front: the stalled server would have held it 30 s


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "1e9"])
def test_a_timeout_that_is_not_seconds_is_refused_before_any_connection(capsys, value):
    with stalled_server() as url:
        code, err, seconds = _bench(capsys, url, "--timeout", value)
    assert code == 2 and err.startswith("specdraft: error: --timeout must be seconds above 0") and seconds < 5

