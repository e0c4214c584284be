"""Every `specdraft template check/path` command of docs/templates.md runs as documented."""

import re
import shlex
import subprocess
import sys

from tests.documented import REPO, commands, read

PAGE = "docs/templates.md"


def _documented_commands() -> list[tuple[str, int]]:
    documented = []
    for line in commands(read(PAGE)):
        if line.split()[3:5] in (["template", "check"], ["template", "path"]):
            exit_code = re.search(r"# exit (\d)", line)
            documented.append((line.split("#", 1)[0].strip(), int(exit_code.group(1)) if exit_code else 0))
    return documented


def test_the_page_documents_check_and_path():
    assert {command.split()[4] for command, _ in _documented_commands()} == {"check", "path"}


def test_the_page_template_commands_exit_as_documented():
    for command, exit_code in _documented_commands():
        done = subprocess.run([sys.executable, *shlex.split(command)[1:]], capture_output=True, text=True, cwd=REPO,
                              env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
        assert done.returncode == exit_code, (command, done.stdout[-500:], done.stderr[-500:])
