"""`specdraft template ...` as a user runs it: exit codes, messages and JSON."""

import json
import subprocess
import sys
from pathlib import Path

from specdraft.templates import shipped_template
from tests.replying_server import replying_server

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures"


def specdraft(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "specdraft", "template", *args], capture_output=True, text=True, cwd=REPO,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )


def test_check_of_a_shipped_template_exits_0():
    done = specdraft("check", str(shipped_template("large")), "--variant", "large")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("variant large: no findings")


def test_check_of_a_leaking_template_exits_1_and_names_rule_scenario_and_format():
    done = specdraft("check", str(FIXTURES / "official_like_e.jinja"), "--variant", "e")
    assert done.returncode == 1
    assert "thought-replayed  history-bare-thought-label [string]:" in done.stdout
    assert "fix: " in done.stdout
    assert "--chat-template" in done.stderr


def test_check_json_lists_findings():
    done = specdraft("check", str(FIXTURES / "official_like_e.jinja"), "--variant", "e", "--json")
    report = json.loads(done.stdout)
    assert done.returncode == 1 and report["ok"] is False and report["variant"] == "e"
    assert {"rule", "scenario", "content_format", "excerpt", "fix", "message"} <= set(report["findings"][0])


def test_check_of_a_broken_template_exits_2_with_the_line_number(tmp_path):
    broken = tmp_path / "broken.jinja"
    broken.write_text("{{ bos_token }}\n{% for m in messages %}\n{{ m.content }\n{% endfor %}\n")
    done = specdraft("check", str(broken))
    assert done.returncode == 2
    assert f"{broken}:3: template syntax error" in done.stderr
    assert "Traceback" not in done.stderr


def test_check_of_a_missing_file_exits_2(tmp_path):
    done = specdraft("check", str(tmp_path / "missing.jinja"))
    assert done.returncode == 2 and "cannot read" in done.stderr


def test_probe_of_an_unreachable_server_exits_2_with_a_hint():
    done = specdraft("probe", "--base-url", "http://127.0.0.1:9/v1", "--model", "m")
    assert done.returncode == 2
    assert "cannot reach http://127.0.0.1:9/v1" in done.stderr and "next:" in done.stderr


def test_path_prints_the_shipped_template():
    done = specdraft("path", "--variant", "e")
    assert done.returncode == 0 and Path(done.stdout.strip()) == shipped_template("e")


def test_check_with_a_reference_reports_format_drift_with_a_diff(tmp_path):
    unsorted = tmp_path / "unsorted.jinja"
    unsorted.write_text(shipped_template("large").read_text().replace(
        "(arguments if arguments is mapping else {})|dictsort", "(arguments if arguments is mapping else {}).items()"))
    done = specdraft("check", str(unsorted), "--variant", "large", "--reference", str(shipped_template("large")))
    assert done.returncode == 1, done.stderr
    assert "format-drift  tool-call-nested-arguments [string]: our prompt differs" in done.stdout
    assert "    --- reference" in done.stdout and "    +++ ours" in done.stdout
    assert "2 finding(s): format-drift" in done.stdout
    assert "render what the reference renders" in done.stderr


def test_check_with_a_checkpoint_directory_as_reference_reads_its_template(tmp_path):
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": shipped_template("e").read_text()}))
    done = specdraft("check", str(shipped_template("e")), "--reference", str(tmp_path), "--json")
    report = json.loads(done.stdout)
    assert done.returncode == 0 and report["ok"] is True
    assert report["reference"] == {"file": str(tmp_path / "tokenizer_config.json"), "findings": []}


def test_check_with_a_reference_directory_without_a_template_exits_2(tmp_path):
    done = specdraft("check", str(shipped_template("e")), "--reference", str(tmp_path))
    assert done.returncode == 2 and "carries no chat template" in done.stderr and "Traceback" not in done.stderr


def test_check_of_a_hostile_template_ends_in_one_render_limit_finding(tmp_path):
    hostile = tmp_path / "hostile.jinja"
    hostile.write_text('{{ bos_token }}{{ "x" * 10**9 }}')
    done = specdraft("check", str(hostile), "--variant", "e")
    assert done.returncode == 1
    assert done.stdout.strip().endswith("1 finding(s): render-limit")


def test_check_of_an_empty_template_is_one_finding(tmp_path):
    empty = tmp_path / "empty.jinja"
    empty.write_text("")
    done = specdraft("check", str(empty))
    assert done.returncode == 1
    assert done.stdout.splitlines()[0] == "empty-template  (template): the template is empty (or only whitespace)"
    assert done.stdout.strip().endswith("1 finding(s): empty-template")


def test_probe_of_a_server_that_answers_errors_says_the_server_failed_not_that_it_leaked():
    # what a broken vLLM answers to every request
    with replying_server(lambda method, path, body: b'{"error": {"message": "the model crashed"}}', 500) as root:
        url = f"{root}/v1"
        done = specdraft("probe", "--base-url", url, "--model", "m")
        as_json = json.loads(specdraft("probe", "--base-url", url, "--model", "m", "--json").stdout)
    assert done.returncode == 1
    summary = done.stdout.strip().splitlines()[-1]
    assert summary.startswith(f"{url}: the server failed all ") and "HTTP 500" in summary
    assert "nothing was checked for leaks" in summary and "clean" not in summary
    assert "check the server's log" in done.stderr and "reasoning-parser" not in done.stderr
    assert as_json["failed"] == len(as_json["results"]) and as_json["leaked"] == 0 and not as_json["ok"]
