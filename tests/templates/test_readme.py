"""Every `specdraft template check/path` command in the README's "Chat templates" section runs as documented."""

import re
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _documented_commands() -> list[tuple[str, int]]:
    section = REPO.joinpath("README.md").read_text().split("## Chat templates", 1)[1].split("\n## ", 1)[0]
    commands = []
    for line in section.splitlines():
        found = re.match(r"python -m specdraft template (check|path) [^#]*", line)
        if found:
            documented = re.search(r"# exit (\d)", line)
            commands.append((found.group(0).strip(), int(documented.group(1)) if documented else 0))
    return commands


def test_readme_documents_check_and_path():
    assert {command.split()[4] for command, _ in _documented_commands()} == {"check", "path"}


def test_readme_template_commands_exit_as_documented():
    for command, exit_code in _documented_commands():
        done = subprocess.run([sys.executable, *shlex.split(command)[1:]], capture_output=True, text=True, cwd=REPO,
                              env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
        assert done.returncode == exit_code, (command, done.stdout[-500:], done.stderr[-500:])
