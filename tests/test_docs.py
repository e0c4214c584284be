"""The README and docs/ cannot drift: every specdraft command they show parses with the real CLI, every page
that shows commands has a test that runs them, every output block is lines of the real output, every link
resolves, and the README stays a front door."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from specdraft.cli import _build_parser
from tests.documented import REPO, ShownOutput, blocks, commands, headings, pages, read, shown_outputs

# Each page that shows specdraft commands or Python examples, and the tests that run them (every command's
# parsing is checked here).
RUN_BY = {
    "README.md": ["tests/test_docs.py", "tests/bench/test_docs_bench_tune.py"],
    "docs/launching.md": ["tests/launch/test_docs_launching.py", "tests/planning/test_k_schedule.py"],
    "docs/methods.md": ["tests/planning/test_methods.py"],
    "docs/gpus-and-nodes.md": ["tests/launch/test_docs_gpus_nodes.py"],
    "docs/patching.md": ["tests/patching/test_docs_patching.py"],
    "docs/templates.md": ["tests/templates/test_docs_templates.py"],
    "docs/bench-and-tune.md": ["tests/bench/test_docs_bench_tune.py", "tests/watch/test_docs_watch.py"],
    "docs/quantize.md": ["tests/quantization/test_quantize.py"],
    "docs/proof.md": ["tests/e2e/test_serve.py"],
}


def _name(page: Path) -> str:
    return str(page.relative_to(REPO))


DOCUMENTED = [(_name(page), command) for page in pages() for command in commands(page.read_text())]


def parse_error(command: str) -> str | None:
    """Why the real parser turns ``command`` (``python -m specdraft ...``) away, or None when it parses."""
    argv = shlex.split(command, comments=True)[3:]
    try:
        _build_parser(argv).parse_args(argv)
    except SystemExit as exit_:  # --help exits 0 once it has printed
        return f"exit {exit_.code}" if exit_.code else None
    return None


@pytest.mark.parametrize(("page", "command"), DOCUMENTED, ids=[f"{p}:{c[18:60]}" for p, c in DOCUMENTED])
def test_every_documented_command_parses_with_the_real_cli(page, command, capsys):
    assert parse_error(command) is None, (page, command, capsys.readouterr().err)


def test_a_command_with_an_option_the_cli_lacks_is_turned_away(capsys):
    assert parse_error("python -m specdraft launch --target google/gemma-4-31B-it --no-such-option --dry-run")
    assert parse_error("python -m specdraft tune --per-position-acceptance 0.8 --cost-ratio") == "exit 2"


def test_every_page_that_shows_commands_has_tests_that_read_it():
    shown = {page for page, _ in DOCUMENTED} | {_name(page) for page in pages() if blocks(page.read_text(), "python")}
    assert shown == set(RUN_BY), "a page with specdraft commands or Python examples needs tests that run them"
    for page, tests in RUN_BY.items():
        for test in tests:
            text = (REPO / test).read_text()
            assert page in text, (page, test)


# What the README's and the pages' commands stand for when a test runs them: a vLLM interpreter becomes the
# source tree of a release the suite caches (the release the GPU results were served with).
PLACEHOLDERS = {"--python /path/to/vllm-venv/bin/python": "--vllm-root {tree}",
                "--python /opt/vllm-venv/bin/python": "--vllm-root {tree}"}
OUTPUTS = [(_name(page), shown) for page in pages() for shown in shown_outputs(page.read_text())]


def is_excerpt_of(shown: list[str], real: list[str]) -> str | None:
    """None when every shown line matches a real line, in order; else the first shown line that does not. A
    shown line matches a real one that starts with its text before the first ``...``, ends with its text after
    the last, and holds the pieces between in order; a line of ``...`` alone, or an empty one, stands for
    lines left out."""
    position = 0
    for line in shown:
        pieces = line.rstrip().split("...")
        if not "".join(pieces).strip():
            continue
        pattern = re.compile(".*?".join(map(re.escape, pieces)) + ("" if len(pieces) > 1 else r"\s*"))
        while position < len(real) and not pattern.fullmatch(real[position].rstrip()):
            position += 1
        if position == len(real):
            return line
        position += 1
    return None


def test_an_excerpt_must_follow_the_real_output():
    real = ["Checks", "  ok     vocab-size   both 262144", "Memory", "  budget 95.8 GiB"]
    assert is_excerpt_of(["Checks", "  ...", "  ok     vocab-size   both ...", "Memory"], real) is None
    assert is_excerpt_of(["Memory", "Checks"], real) == "Checks"  # out of order
    assert is_excerpt_of(["  budget 96.0 GiB"], real) == "  budget 96.0 GiB"  # a figure that drifted
    assert is_excerpt_of(["  ok     vocab-size   ..."], real) is None


def test_the_readme_shows_what_launch_patch_and_tune_print():
    assert [shlex.split(s.command, comments=True)[3] for page, s in OUTPUTS if page == "README.md"] == \
        ["launch", "patch", "tune"]


@pytest.mark.parametrize(("page", "shown"), OUTPUTS, ids=[f"{p}:{s.command[18:50]}" for p, s in OUTPUTS])
def test_every_shown_output_is_an_excerpt_of_the_real_one(page, shown: ShownOutput, tmp_path):
    from tools.release_trees import release_tree

    command = shown.command
    for placeholder, replacement in PLACEHOLDERS.items():
        if placeholder in command:
            command = command.replace(placeholder, replacement.format(tree=release_tree("0.26.0", progress=print)))
    # no vLLM on PATH and an empty Hugging Face cache: what a machine without them prints, the same everywhere
    # and --help wrapped at 80 columns, as argparse wraps it without a terminal
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HF_HOME": str(tmp_path / "hf"),
           "COLUMNS": "80",
           "HF_HUB_OFFLINE": "1", "SPECDRAFT_CACHE": os.environ.get("SPECDRAFT_CACHE", str(Path.home() / ".cache/specdraft"))}
    done = subprocess.run([sys.executable, *shlex.split(command, comments=True)[1:]], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=300)
    assert done.returncode in (0, 1), (command, done.stderr[-2000:])
    missing = is_excerpt_of(shown.lines, done.stdout.splitlines())
    assert missing is None, f"{page}: `{shown.command}` no longer prints\n{missing}\nit prints:\n{done.stdout}"


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def broken_links(page: Path) -> list[str]:
    text = page.read_text()
    for block in reversed(blocks(text)):  # a link inside a code block is code, not a link
        text = text[:block.start] + text[block.end:]
    broken = []
    for match in LINK.finditer(text):
        target = match.group(1) or match.group(2)
        if re.match(r"[a-z]+:", target):  # http(s), mailto: not fetched here
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(target)
        elif anchor and linked.suffix == ".md" and anchor not in {slug(m.group(2)) for m in headings(linked.read_text())}:
            broken.append(target)
    return broken


@pytest.mark.parametrize("page", pages(), ids=_name)
def test_every_link_resolves(page):
    assert broken_links(page) == []


def test_a_link_to_a_missing_page_or_heading_is_broken(tmp_path):
    (tmp_path / "there.md").write_text("# A title: with `code`\n")
    page = tmp_path / "page.md"
    page.write_text("[ok](there.md) [ok](there.md#a-title-with-code) [no](gone.md) [no](there.md#b)\n"
                    "```bash\n[not a link](gone.md)\n```\n")
    assert broken_links(page) == ["gone.md", "there.md#b"]


def test_the_readme_stays_a_front_door_and_links_every_page():
    readme = read("README.md")
    assert len(readme.splitlines()) <= 200
    linked = set(re.findall(r"\]\((docs/[^)#]+)", readme))
    task_pages = {_name(page) for page in (REPO / "docs").glob("*.md")} | {"docs/gpu/README.md"}
    assert task_pages <= linked, task_pages - linked


def test_the_readme_fresh_machine_commands_are_make_targets_and_ci_runs_one():
    (block,) = [b for b in blocks(read("README.md"), "bash") if b.body.startswith("make ")]
    targets = [line.split()[1] for line in block.body.splitlines()]
    assert targets == ["demo", "test"]
    makefile = read("Makefile")
    assert all(re.search(rf"^{target}:", makefile, re.M) for target in targets)
    assert "make test" in read(".ci/run").splitlines()
