"""template probe against a server whose replies are not OpenAI chat completions: one line, exit 2."""

import json

import pytest

from specdraft.cli import main
from tests.replying_server import replying_server

GOOD = {"choices": [{"message": {"role": "assistant", "content": "hello"}}]}


@pytest.mark.parametrize("plain, stream, expected", [
    (b"<html>It works!</html>", b"", "answered with something that is not an OpenAI chat completion"),
    (b'{"object": "list", "data": []}', b"", "the server's reply has no choices[0].message"),
    (json.dumps(GOOD).encode(), b"data: <html>\n\n", "answered with something that is not an OpenAI chat completion"),
    (json.dumps(GOOD).encode(), b"data: [1, 2]\n\n", "answered with something that is not an OpenAI chat completion"),
], ids=["html", "json-not-a-completion", "stream-html", "stream-json-list"])
def test_a_reply_that_is_not_a_chat_completion_is_one_line_exit_2(capsys, plain, stream, expected):
    with replying_server(lambda method, path, body: stream if body.get("stream") else plain) as url:
        code = main(["template", "probe", "--base-url", f"{url}/v1", "--model", "m"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and "internal error" not in err
    assert expected in err.splitlines()[0] and err.splitlines()[1].startswith("specdraft: next: point --base-url")
