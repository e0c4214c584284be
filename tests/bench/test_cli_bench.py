"""`specdraft bench` errors and saved-result comparisons that need no server."""

import json
import socket

import pytest

from specdraft.bench import BenchResult, LevelResult, SpecDecodeCounters, Summary, load_prompts
from specdraft.cli import main
from specdraft.errors import UserError


def bench(capsys, *args):
    code = main(["bench", *args])
    out, err = capsys.readouterr()
    return code, out, err


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once the socket is closed


def saved(tmp_path, name, *, decode, output, e2e, spec=None, max_tokens=64) -> str:
    summary = Summary(e2e, e2e, e2e, e2e, e2e)
    level = LevelResult(1, 4, 4 * max_tokens, 1.0, output, decode, Summary(1000 / decode, 0, 0, 0, 0), summary,
                        summary, spec)
    result = BenchResult(f"http://{name}", name, max_tokens, 0.0, "built-in", 8, (level,), spec is not None)
    path = tmp_path / f"{name}.json"
    result.save(path)
    return str(path)


def test_an_unreachable_server_is_one_line_with_the_next_step(capsys):
    code, out, err = bench(capsys, "--base-url", f"http://127.0.0.1:{closed_port()}", "--model", "m")
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert lines[0].startswith("specdraft: error: cannot reach the server at http://127.0.0.1:")
    assert lines[1] == "specdraft: next: start it (python -m specdraft launch ...) or check --base-url"


def test_base_url_and_model_are_required_without_saved_results(capsys):
    code, _, err = bench(capsys, "--model", "m")
    assert code == 2 and "needs --base-url and --model" in err


def test_compare_results_gives_candidate_over_baseline(capsys, tmp_path):
    spec = SpecDecodeCounters(100, 400, 250, (90, 70, 55, 35))
    fast = saved(tmp_path, "spec", decode=30.0, output=100.0, e2e=2.0, spec=spec)
    slow = saved(tmp_path, "base", decode=15.0, output=40.0, e2e=5.0)
    code, out, _ = bench(capsys, "--compare-results", fast, slow, "--json")
    data = json.loads(out)
    assert code == 0
    assert data["speedups"] == [{"concurrency": 1, "decode_tok_s": 2.0, "output_tok_s": 2.5, "e2e": 2.5}]
    assert data["spec_decode"]["mean_acceptance_length"] == 3.5


def test_compare_results_refuses_different_workloads(capsys, tmp_path):
    a = saved(tmp_path, "a", decode=30.0, output=100.0, e2e=2.0, max_tokens=64)
    b = saved(tmp_path, "b", decode=15.0, output=40.0, e2e=5.0, max_tokens=128)
    code, _, err = bench(capsys, "--compare-results", a, b)
    assert code == 2 and "not the same workload" in err


def test_table_shows_acceptance_and_speedup(capsys, tmp_path):
    spec = SpecDecodeCounters(100, 400, 250, (90, 70, 55, 35))
    fast = saved(tmp_path, "spec", decode=30.0, output=100.0, e2e=2.0, spec=spec)
    slow = saved(tmp_path, "base", decode=15.0, output=40.0, e2e=5.0)
    code, out, _ = bench(capsys, "--compare-results", fast, slow)
    assert code == 0
    assert "0.900, 0.700, 0.550, 0.350" in out and "3.50" in out
    assert "2.00x" in out and "2.50x" in out


def test_a_saved_result_round_trips_through_json(tmp_path):
    spec = SpecDecodeCounters(100, 400, 250, (90, 70, 55, 35))
    path = saved(tmp_path, "spec", decode=30.0, output=100.0, e2e=2.0, spec=spec)
    data = json.loads(open(path).read())
    assert BenchResult.from_json(data).to_json() == data


def test_prompt_files_take_prompts_or_chat_messages(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"prompt": "hello"}\n\n{"messages": [{"role": "user", "content": "hi"}]}\n{"prompt": [2, 17, 9]}\n')
    prompts = load_prompts(path)
    assert prompts[0].text == "hello" and prompts[1].messages == ({"role": "user", "content": "hi"},)
    assert prompts[2].text == (2, 17, 9)  # token ids, for servers without a tokenizer


@pytest.mark.parametrize("line,message", [("not json", "p.jsonl:1: not JSON"),
                                          ('{"text": "x"}', 'expected {"prompt": "..."}'),
                                          ('{"prompt": [1, "a"]}', "token ids")])
def test_a_bad_prompt_line_is_named_by_file_and_line(tmp_path, line, message):
    path = tmp_path / "p.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(UserError, match=message.replace("{", r"\{").replace("[", r"\[")):
        load_prompts(path)
