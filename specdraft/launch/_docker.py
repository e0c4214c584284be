"""A ``docker run`` command for the plan: the container installs specdraft, patches and verifies its own
vLLM, then execs ``vllm serve`` with the same argv."""

from __future__ import annotations

import shlex
from pathlib import Path

import specdraft
from specdraft.planning import LaunchPlan
from specdraft.errors import UserError

SOURCE_IN_CONTAINER = "/opt/specdraft-src"
BUILD_IN_CONTAINER = "/tmp/specdraft-build"


def _source_checkout() -> Path | None:
    """The specdraft checkout this package runs from, if it is one (pyproject.toml beside the package)."""
    root = Path(specdraft.__file__).resolve().parent.parent
    return root if (root / "pyproject.toml").is_file() else None


def _host_paths(plan: LaunchPlan) -> list[Path]:
    """Local files and directories the serve argv names: they are mounted at the same path."""
    candidates = [plan.request.target, plan.speculative.model or ""]
    template = plan.serve.flag("--chat-template")
    if template is not None:
        candidates.append(template.value or "")
    paths = []
    for value in candidates:
        path = Path(value).expanduser()
        if value and path.exists() and path.is_absolute() and path not in paths:
            paths.append(path)
        elif value and path.exists():
            raise UserError(f"{value}: docker mounts need an absolute path", hint=f"pass {path.resolve()}")
    return paths


def docker_argv(plan: LaunchPlan, *, image: str | None = None, port: int = 8000) -> list[str]:
    """``docker run`` as a list; its entrypoint runs ``patch apply``, ``patch verify`` and ``vllm serve``."""
    version = plan.vllm.version
    image = image or (f"vllm/vllm-openai:v{version}" if version else "vllm/vllm-openai:latest")
    source = _source_checkout()
    mounts = ["-v", f"{Path.home() / '.cache' / 'huggingface'}:/root/.cache/huggingface"]
    if source is not None:
        mounts += ["-v", f"{source}:{SOURCE_IN_CONTAINER}:ro"]
        install = (f"cp -r {SOURCE_IN_CONTAINER} {BUILD_IN_CONTAINER} && "
                   f"python3 -m pip install --no-deps {BUILD_IN_CONTAINER} libcst")
    else:
        install = f"python3 -m pip install --no-deps specdraft=={specdraft.__version__} libcst"
    for path in _host_paths(plan):
        if ":" in str(path):
            raise UserError(f"{path}: docker -v cannot mount a path containing ':'", hint="move or link it elsewhere")
        mounts += ["-v", f"{path}:{path}:ro"]
    argv = list(plan.argv)
    if "--port" not in argv:
        argv += ["--port", str(port)]
    script = " && ".join([
        install,
        "python3 -m specdraft patch apply",
        "python3 -m specdraft patch verify",
        "exec " + shlex.join(argv),
    ])
    return ["docker", "run", "--rm", "--gpus", "all", "--ipc=host", "-p", f"{port}:{port}", *mounts,
            "--entrypoint", "/bin/bash", image, "-c", script]


def docker_command(plan: LaunchPlan, *, image: str | None = None, port: int = 8000) -> str:
    """``docker_argv`` quoted for a POSIX shell."""
    return shlex.join(docker_argv(plan, image=image, port=port))

