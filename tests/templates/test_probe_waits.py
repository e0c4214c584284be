"""template probe against a server that never answers ends at its --timeout: one line, exit 2."""

import time

import pytest

from specdraft.cli import main
from tests.stalls import stalled_server


def test_template_probe_against_a_server_that_never_answers_ends_at_its_timeout(capsys):
    with stalled_server() as url:
        started = time.monotonic()
        code = main(["template", "probe", "--base-url", f"{url}/v1", "--model", "m", "--timeout", "1"])
        seconds = time.monotonic() - started
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"specdraft: error: {url}/v1 sent nothing for 1 s") and seconds < 10


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
def test_a_probe_timeout_that_is_not_seconds_is_refused(capsys, value):
    code = main(["template", "probe", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--timeout", value])
    assert code == 2 and capsys.readouterr().err.startswith("specdraft: error: --timeout must be seconds above 0")
