"""A real HTTP server on localhost that answers with given bytes and status: what a wrong or broken server
sends back (a web page, other JSON, a bad stream, an HTTP error), for the tests of specdraft's network clients."""

import json
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Iterator

Reply = Callable[[str, str, dict], bytes]
"""(method, path, JSON body of a POST or {}) -> the bytes to answer with."""


@contextmanager
def replying_server(reply: Reply, status: int = 200) -> Iterator[str]:
    """Serve ``reply`` with HTTP ``status`` on a free port; yields the root URL (``http://127.0.0.1:PORT``)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            self._answer(reply("GET", self.path, {}))

        def do_POST(self):
            self._answer(reply("POST", self.path, json.loads(self.rfile.read(int(self.headers["Content-Length"])))))

        def _answer(self, body: bytes):
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
