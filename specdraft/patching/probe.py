"""Run a hotfix's behavioural probe inside the target interpreter, in a subprocess.

The probe's own source (``Hotfix.probe``) is shipped to the interpreter that owns the install,
which imports the module where the engine found the function and calls ``probe(module)``. The
answer is one JSON line: ``passed``, ``failed`` (the probe observed the bug) or ``cannot-run`` (the
module does not import there, e.g. a GPU wheel's tree without torch, or it imports another copy of
vLLM than the one located). The engine counts anything but ``passed`` as a failed verification.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import tempfile
import textwrap
from dataclasses import dataclass

from specdraft.patching.hotfix import Hotfix
from specdraft.patching.locate import VllmInstall
from specdraft.process_groups import run_bounded

_ANSWER = "SPECDRAFT-PROBE "
_TIMEOUT_S = 600

_RUNNER = """
import importlib, json, os, sys

def answer(hotfix_id, result, detail=""):
    print({answer!r} + json.dumps({{"id": hotfix_id, "result": result, "detail": detail}}), flush=True)

if {prepend_root}:
    sys.path.insert(0, {root!r})
located = os.path.realpath({root!r})
for hotfix_id, module_name, probe in PROBES:
    try:
        module = importlib.import_module(module_name)
    except BaseException as err:
        answer(hotfix_id, "cannot-run", f"cannot import {{module_name}}: {{type(err).__name__}}: {{err}}")
        continue
    if not os.path.realpath(module.__file__).startswith(located + os.sep):
        answer(hotfix_id, "cannot-run", f"this interpreter imports {{module_name}} from {{module.__file__}}, not from {root}")
        continue
    try:
        probe(module)
    except AssertionError as err:
        answer(hotfix_id, "failed", str(err) or "the probe's assertion failed")
    except ImportError as err:
        answer(hotfix_id, "cannot-run", f"{{type(err).__name__}}: {{err}}")
    except BaseException as err:
        answer(hotfix_id, "failed", f"probe raised {{type(err).__name__}}: {{err}}")
    else:
        answer(hotfix_id, "passed")
"""


@dataclass(frozen=True)
class ProbeResult:
    result: str
    """``passed``, ``failed`` or ``cannot-run``."""
    detail: str = ""

    @property
    def passed(self) -> bool:
        return self.result == "passed"

    def describe(self) -> str:
        if self.result == "cannot-run":
            return f"cannot run here: {self.detail}"
        return self.result + (f": {self.detail}" if self.detail else "")


def run_probes(install: VllmInstall, probes: list[tuple[Hotfix, str]]) -> dict[str, ProbeResult]:
    """Run each ``(hotfix, module)``'s probe on ``install``, in the install's interpreter.

    One subprocess runs them all (importing vLLM costs seconds); each probe's failure is its own.
    With no known interpreter (``--vllm-root``), the current one runs them with the tree first on
    ``sys.path``. Returns a result per hotfix id.
    """
    python = install.python or sys.executable
    functions, table = [], []
    for index, (hotfix, module) in enumerate(probes):
        functions.append(_probe_source(hotfix, f"probe_{index}"))
        table.append(f"({hotfix.id!r}, {module!r}, probe_{index})")
    script = "\n".join([
        "from __future__ import annotations", *functions, f"PROBES = [{', '.join(table)}]",
        _RUNNER.format(answer=_ANSWER, root=str(install.root), prepend_root=install.python is None),
    ])
    env = {**os.environ, "VLLM_LOGGING_LEVEL": "ERROR", "PYTHONDONTWRITEBYTECODE": "1"}
    wanted = [hotfix.id for hotfix, _ in probes]
    try:
        # An empty working directory: `-c` puts it first on sys.path, where nothing may shadow.
        with tempfile.TemporaryDirectory(prefix="specdraft-probe-") as empty:
            done = run_bounded([str(python), "-c", script], timeout_s=_TIMEOUT_S, env=env, cwd=empty)
    except OSError as err:
        return {i: ProbeResult("cannot-run", f"cannot start {python}: {err.strerror}") for i in wanted}
    if done.timed_out:
        return {i: ProbeResult("cannot-run", f"{python} did not answer within {_TIMEOUT_S} s") for i in wanted}
    stdout, stderr = done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")
    results = {}
    for line in stdout.splitlines():
        if line.startswith(_ANSWER):
            answer = json.loads(line[len(_ANSWER):])
            hotfix_id = answer.pop("id")
            results[hotfix_id] = ProbeResult(**answer)
    last = (stderr.strip().splitlines() or ["no output"])[-1]
    for missing in set(wanted) - set(results):
        results[missing] = ProbeResult("cannot-run", f"{python} exited {done.returncode} without an answer: {last}")
    return results


def _probe_source(hotfix: Hotfix, name: str) -> str:
    """The hotfix's probe as a plain top-level function called ``name`` (decorator dropped, dedented)."""
    source = textwrap.dedent(inspect.getsource(type(hotfix).probe))
    lines = [line for line in source.splitlines() if line.strip() != "@staticmethod"]
    if not lines[0].startswith("def probe("):
        raise TypeError(f"{hotfix.id}: probe must be a plain `def probe(module)` staticmethod")
    lines[0] = lines[0].replace("def probe(", f"def {name}(", 1)
    return "\n".join(lines) + "\n"
