"""bench against a server whose stream is not completion chunks: one line, exit 2, never an internal error."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from specdraft.cli import main


def serve(stream: bytes):
    """A real HTTP server with a model list and an empty /metrics, streaming ``stream`` for every request."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({"data": [{"id": "m"}]}).encode() if self.path == "/v1/models" else b""
            self._reply(body)

        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            self._reply(stream)

        def _reply(self, body: bytes):
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize("stream", [
    b"data: <html>\n\n",
    b"data: [1, 2]\n\n",
    b'data: {"choices": [{}], "usage": "many"}\n\n',
    b'data: {"choices": [{}], "usage": {"completion_tokens": "three"}}\n\n',
], ids=["html", "json-list", "usage-not-an-object", "token-count-not-a-number"])
def test_a_stream_that_is_not_completion_chunks_is_one_line_exit_2(capsys, stream):
    server = serve(stream)
    try:
        code = main(["bench", "--base-url", f"http://127.0.0.1:{server.server_port}", "--model", "m"])
    finally:
        server.shutdown()
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and "internal error" not in err
    assert "streamed something that is not a completion chunk" in err.splitlines()[-2]


def test_a_stream_of_well_formed_chunks_is_timed(capsys):
    chunk = {"choices": [{"text": "x"}]}
    stream = b"".join(b"data: " + json.dumps(chunk).encode() + b"\n\n" for _ in range(4)) + b"data: [DONE]\n\n"
    server = serve(stream)
    try:
        code = main(["bench", "--base-url", f"http://127.0.0.1:{server.server_port}", "--model", "m", "--json",
                     "--requests", "2"])
    finally:
        server.shutdown()
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["levels"][0]["output_tokens"] == 2 * 4 and out["speculative"] is False
