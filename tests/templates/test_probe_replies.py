"""template probe against a server whose replies are not OpenAI chat completions: one line, exit 2."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from specdraft.cli import main

GOOD = {"choices": [{"message": {"role": "assistant", "content": "hello"}}]}


def serve(plain: bytes, stream: bytes):
    """A real HTTP server that answers every POST with ``plain``, or ``stream`` when streaming is asked."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            reply = stream if body.get("stream") else plain
            self.send_response(200)
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize("plain, stream, expected", [
    (b"<html>It works!</html>", b"", "answered with something that is not an OpenAI chat completion"),
    (b'{"object": "list", "data": []}', b"", "the server's reply has no choices[0].message"),
    (json.dumps(GOOD).encode(), b"data: <html>\n\n", "answered with something that is not an OpenAI chat completion"),
    (json.dumps(GOOD).encode(), b"data: [1, 2]\n\n", "answered with something that is not an OpenAI chat completion"),
], ids=["html", "json-not-a-completion", "stream-html", "stream-json-list"])
def test_a_reply_that_is_not_a_chat_completion_is_one_line_exit_2(capsys, plain, stream, expected):
    server = serve(plain, stream)
    try:
        code = main(["template", "probe", "--base-url", f"http://127.0.0.1:{server.server_port}/v1", "--model", "m"])
    finally:
        server.shutdown()
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and "internal error" not in err
    assert expected in err.splitlines()[0] and err.splitlines()[1].startswith("specdraft: next: point --base-url")
