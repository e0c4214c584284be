"""bench against a server whose stream is not completion chunks: one line, exit 2, never an internal error."""

import json

import pytest

from specdraft.cli import main
from tests.replying_server import replying_server


def vllm_shaped(stream: bytes):
    """A model list and an empty /metrics, and ``stream`` for every completion request."""
    def reply(method: str, path: str, body: dict) -> bytes:
        if method == "POST":
            return stream
        return json.dumps({"data": [{"id": "m"}]}).encode() if path == "/v1/models" else b""
    return reply


@pytest.mark.parametrize("stream", [
    b"data: <html>\n\n",
    b"data: [1, 2]\n\n",
    b'data: {"choices": [{}], "usage": "many"}\n\n',
    b'data: {"choices": [{}], "usage": {"completion_tokens": "three"}}\n\n',
], ids=["html", "json-list", "usage-not-an-object", "token-count-not-a-number"])
def test_a_stream_that_is_not_completion_chunks_is_one_line_exit_2(capsys, stream):
    with replying_server(vllm_shaped(stream)) as url:
        code = main(["bench", "--base-url", url, "--model", "m"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and "internal error" not in err
    assert "streamed something that is not a completion chunk" in err.splitlines()[-2]


def test_a_stream_of_well_formed_chunks_is_timed(capsys):
    chunk = {"choices": [{"text": "x"}]}
    stream = b"".join(b"data: " + json.dumps(chunk).encode() + b"\n\n" for _ in range(4)) + b"data: [DONE]\n\n"
    with replying_server(vllm_shaped(stream)) as url:
        code = main(["bench", "--base-url", url, "--model", "m", "--json", "--requests", "2"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["levels"][0]["output_tokens"] == 2 * 4 and out["speculative"] is False
