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
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass

from specdraft.patching.hotfix import Hotfix
from specdraft.patching.locate import VllmInstall

_ANSWER = "SPECDRAFT-PROBE "
_TIMEOUT_S = 600

_RUNNER = """
import importlib, json, os, sys

def answer(result, detail=""):
    print({answer!r} + json.dumps({{"result": result, "detail": detail}}), flush=True)
    sys.exit(0)

if {prepend_root}:
    sys.path.insert(0, {root!r})
try:
    module = importlib.import_module({module!r})
except BaseException as err:
    answer("cannot-run", f"cannot import {module}: {{type(err).__name__}}: {{err}}")
located = os.path.realpath({root!r})
if not os.path.realpath(module.__file__).startswith(located + os.sep):
    answer("cannot-run", f"this interpreter imports {module} from {{module.__file__}}, not from {root}")
try:
    probe(module)
except AssertionError as err:
    answer("failed", str(err) or "the probe's assertion failed")
except ImportError as err:
    answer("cannot-run", f"{{type(err).__name__}}: {{err}}")
except BaseException as err:
    answer("failed", f"probe raised {{type(err).__name__}}: {{err}}")
answer("passed")
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


def run_probe(hotfix: Hotfix, install: VllmInstall, module: str) -> ProbeResult:
    """Call ``hotfix.probe`` on ``module`` of ``install``, in the install's interpreter.

    With no known interpreter (``--vllm-root``), the current one runs it with the tree first on
    ``sys.path``.
    """
    python = install.python or sys.executable
    script = "from __future__ import annotations\n" + _probe_source(hotfix) + _RUNNER.format(
        answer=_ANSWER, module=module, root=str(install.root), prepend_root=install.python is None,
    )
    env = {**os.environ, "VLLM_LOGGING_LEVEL": "ERROR", "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        # An empty working directory: `-c` puts it first on sys.path, where nothing may shadow.
        with tempfile.TemporaryDirectory(prefix="specdraft-probe-") as empty:
            done = subprocess.run([str(python), "-c", script], capture_output=True, text=True,
                                  timeout=_TIMEOUT_S, env=env, cwd=empty)
    except subprocess.TimeoutExpired:
        return ProbeResult("cannot-run", f"{python} did not answer within {_TIMEOUT_S} s")
    except OSError as err:
        return ProbeResult("cannot-run", f"cannot start {python}: {err.strerror}")
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(_ANSWER):
            return ProbeResult(**json.loads(line[len(_ANSWER):]))
    last = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return ProbeResult("cannot-run", f"{python} exited {done.returncode} without an answer: {last}")


def _probe_source(hotfix: Hotfix) -> str:
    """The probe as a plain top-level function named ``probe`` (decorator dropped, dedented)."""
    source = textwrap.dedent(inspect.getsource(type(hotfix).probe))
    lines = [line for line in source.splitlines() if line.strip() != "@staticmethod"]
    return "\n".join(lines) + "\n"
