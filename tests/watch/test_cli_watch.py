"""``specdraft watch`` against a real HTTP server answering with vLLM's /metrics pages (recorded data): output, the
exit codes of docs/bench-and-tune.md's contract (0 pays, 1 attention, 2 unreadable) and never a traceback."""

import json
import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specdraft.cli import main
from specdraft.testbed.processes import free_port
from tools.release_trees import release_tree
from tests.replying_server import replying_server
from tests.watch.release_metrics import DATA, ENGINES, MODEL, metric_definitions, render_page

PAGE = (DATA / "vllm-0.19.0..0.33.0.metrics.txt").read_text()
DEFINITIONS = metric_definitions(release_tree("0.33.0", progress=lambda _: None))
MODELS = json.dumps({"object": "list", "data": [{"id": MODEL, "root": "google/gemma-4-31B-it"}]}).encode()
ROOT = Path(__file__).resolve().parents[2]


def serving(*pages: str):
    """A server whose /metrics answers each page in turn (the last one from then on)."""
    left = list(pages)

    def reply(method, path, body):
        if path == "/v1/models":
            return MODELS
        return (left.pop(0) if len(left) > 1 else left[0]).encode()

    return replying_server(reply)


def scaled(factor: float, accepted_per_position=None) -> dict:
    return {engine: (d * factor, t * factor, (sum(accepted_per_position) if accepted_per_position else a) * factor,
                     tuple(x * factor for x in (accepted_per_position or p)), g * factor, r)
            for engine, (d, t, a, p, g, r) in ENGINES.items()}


def test_once_judges_the_counters_since_the_server_started(capsys):
    with serving(PAGE) as url:
        code = main(["watch", "--base-url", url, "--once", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["exit_code"] == 0
    (model,) = report["models"]
    assert model["model"] == MODEL and model["engines"] == ["0", "1"]
    since = model["since_start"]
    assert since["verdict"] == "pays" and since["mean_acceptance_length"] == pytest.approx(1 + 330 / 160)
    assert since["spec_decode"]["per_position_acceptance"] == pytest.approx([140 / 160, 110 / 160, 80 / 160], abs=1e-6)
    assert since["launch_flag"] == f"--num-speculative-tokens {since['tuned_k']}"
    assert since["requests_running"] == 3 and since["generation_tokens"] == 540
    assert "measured: host-cost entry" in model["costs"]


def test_rule_no_speculative_decoding_exits_1():
    without = "\n".join(line for line in PAGE.splitlines() if "spec_decode" not in line) + "\n"
    with serving(without) as url:
        done = subprocess.run([sys.executable, "-m", "specdraft", "watch", "--base-url", url, "--once"],
                              capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 1, done.stderr
    assert "ATTENTION no-speculation" in done.stdout and "--speculative-config" in done.stdout


def test_rule_acceptance_below_the_floor_exits_1(capsys):
    low = render_page(DEFINITIONS, scaled(1, accepted_per_position=(8, 2, 0)))  # length ~1.06
    with serving(low) as url:
        code = main(["watch", "--base-url", url, "--once"])
    out = capsys.readouterr().out
    assert code == 1 and "ATTENTION loses" in out and "below the floor" in out and "serve the target alone" in out


def test_rule_a_given_floor_flags_what_would_pass(capsys):
    with serving(PAGE) as url:
        assert main(["watch", "--base-url", url, "--once"]) == 0
        assert main(["watch", "--base-url", url, "--once", "--min-acceptance", "3.5"]) == 1
    assert "below the floor 3.50 (--min-acceptance)" in capsys.readouterr().out


def test_every_interval_is_a_plain_line_and_its_window_the_counters_that_moved(capsys):
    moving = [render_page(DEFINITIONS, scaled(f)) for f in (1, 2, 4)]
    with serving(*moving) as url:
        code = main(["watch", "--base-url", url, "--interval", "0.05", "--count", "2", "--json"])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0 and len(lines) == 2
    first, second = (json.loads(line)["models"][0] for line in lines)
    assert first["interval"]["spec_decode"]["num_drafts"] == 160  # 2x page - 1x page
    assert second["interval"]["spec_decode"]["num_drafts"] == 320
    assert second["since_start"]["spec_decode"]["num_drafts"] == 480
    assert second["interval"]["generation_tok_s"] > 0 and second["interval"]["seconds"] >= 0.05


def test_a_restarted_server_starts_the_window_again(capsys):
    with serving(render_page(DEFINITIONS, scaled(4)), PAGE) as url:
        main(["watch", "--base-url", url, "--interval", "0.01", "--count", "1", "--json"])
    interval = json.loads(capsys.readouterr().out)["models"][0]["interval"]
    assert interval["restarted"] and interval["spec_decode"]["num_drafts"] == 160


def test_on_a_terminal_one_line_is_rewritten_in_place():
    moving = [render_page(DEFINITIONS, scaled(f)) for f in (1, 2, 3, 4)]
    with serving(*moving) as url:
        controller, terminal = pty.openpty()
        done = subprocess.run([sys.executable, "-m", "specdraft", "watch", "--base-url", url, "--interval", "0.05",
                               "--count", "3"], stdout=terminal, stderr=subprocess.PIPE, cwd=ROOT, timeout=120)
        os.close(terminal)
        out = b""
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    text = out.decode()
    assert done.returncode == 0, done.stderr
    assert text.count("\r") >= 3 and "\x1b[K" in text
    first_line = text.split("\n")[0]
    assert first_line.count("drafts 160") >= 2  # three readings on one line, each rewriting the last


def test_a_server_that_is_not_there_exits_2_with_the_reason():
    done = subprocess.run([sys.executable, "-m", "specdraft", "watch", "--base-url", f"http://127.0.0.1:{free_port()}",
                           "--once"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2 and "cannot read" in done.stderr and "ConnectError" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


def test_a_server_slower_than_the_timeout_exits_2():
    def slow(method, path, body):
        time.sleep(3)
        return MODELS

    with replying_server(slow) as url:
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "specdraft", "watch", "--base-url", url, "--once",
                               "--timeout", "0.5"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2 and "did not answer within 0.5 s" in done.stderr
    assert time.monotonic() - started < 3 + 15  # bounded by the timeout, not by the server


@pytest.mark.parametrize("page, message", [
    ("<html><body>nginx</body></html>\n", "not in the Prometheus text format"),
    ("# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 7.4\n", "no vLLM engine metrics"),
])
def test_a_page_that_is_not_vllms_exits_2(page, message, capsys):
    with serving(page) as url:
        assert main(["watch", "--base-url", url, "--once"]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--model", "other"], "not 'other'"),
    (["--min-acceptance", "0.2"], "--min-acceptance"),
    (["--interval", "0"], "--interval"),
    (["--timeout", "-1"], "--timeout"),
    (["--plan", "/nonexistent/plan.json"], "does not exist"),
])
def test_bad_options_exit_2_with_one_line(argv, message, capsys):
    with serving(PAGE) as url:
        assert main(["watch", "--base-url", url, "--count", "1", *argv]) == 2
    assert message in capsys.readouterr().err


def test_a_plan_is_judged_against(tmp_path, capsys):
    assert main(["launch", "--target", "google/gemma-4-31B-it", "--draft", "google/gemma-4-E2B-it", "--profile",
                 "h100", "--num-speculative-tokens", "3", "--dry-run", "--json"]) in (0, 1)
    plan = tmp_path / "plan.json"
    plan.write_text(capsys.readouterr().out)
    with serving(PAGE) as url:
        assert main(["watch", "--base-url", url, "--once", "--plan", str(plan), "--json"]) == 0
    since = json.loads(capsys.readouterr().out)["models"][0]["since_start"]
    assert since["k"] == 3 and since["planned_speedup"] < since["speedup"]


def test_each_model_is_judged_apart_and_one_that_does_not_speculate_flags_the_run(capsys):
    plain = "\n".join(line for line in PAGE.replace(MODEL, "plain-model").splitlines()
                      if not line.startswith("#") and "spec_decode" not in line)
    with serving(PAGE + plain + "\n") as url:
        code = main(["watch", "--base-url", url, "--once", "--json"])
        report = json.loads(capsys.readouterr().out)
        verdicts = {m["model"]: m["since_start"]["verdict"] for m in report["models"]}
        assert code == 1 and verdicts == {MODEL: "pays", "plain-model": "no-speculation"}
        assert "not a measured shape" in next(m for m in report["models"] if m["model"] == "plain-model")["costs"]
        assert main(["watch", "--base-url", url, "--once", "--model", MODEL]) == 0
