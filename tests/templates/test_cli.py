"""`specdraft template ...` as a user runs it: exit codes, messages and JSON."""

import json
import subprocess
import sys
from pathlib import Path

from specdraft.templates import shipped_template

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
