"""The `launch` commands of docs/launching.md, on a machine with no models and no vLLM on PATH: each one that
starts nothing plans (the `--from-bench` one runs in tests/planning/test_k_schedule.py, on a load test), and the
one that would serve says, in one line, which interpreter to name."""

from __future__ import annotations

import shlex

from tools.release_trees import release_tree
from tests.documented import commands, read

PAGE = "docs/launching.md"
UNPACKED_RELEASE = "/tmp/vllm-0.19.0"  # what the page's pip download + unzip lines make


def _launches() -> list[list[str]]:
    return [shlex.split(line, comments=True)[3:] for line in commands(read(PAGE)) if line.split()[3] == "launch"]


def starts_nothing(argv: list[str]) -> bool:
    return any(flag in argv for flag in ("--dry-run", "--print", "--docker"))


def test_the_page_shows_plans_json_a_schedule_print_docker_a_release_tree_and_a_serve():
    launches = _launches()
    for wanted in ("--json", "--from-bench", "--print", "--docker", "--vllm-root"):
        assert any(wanted in argv for argv in launches), wanted
    assert [argv for argv in launches if not starts_nothing(argv)], "the page shows how to serve"


def test_every_launch_that_starts_nothing_plans_without_errors(specdraft_cli):
    tree = str(release_tree("0.19.0", progress=lambda _: None))
    for argv in _launches():
        if starts_nothing(argv) and "--from-bench" not in argv:
            done = specdraft_cli(*[tree if word == UNPACKED_RELEASE else word for word in argv])
            assert done.returncode == 0, (argv, done.stderr[-2000:])


def test_the_serving_launch_without_a_vllm_names_the_interpreter_to_pass(specdraft_cli):
    (argv,) = [argv for argv in _launches() if not starts_nothing(argv)]
    done = specdraft_cli(*argv)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.rstrip().endswith("next: pass --python /path/to/venv/bin/python")
