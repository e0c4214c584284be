"""A ``docker run`` command for the plan: the container installs specdraft, patches and verifies its own
vLLM, then execs ``vllm serve`` with the same argv.

The install inside the image must not change the image's vLLM environment: specdraft goes in with
``--no-deps`` (``patch apply`` and ``patch verify`` import only specdraft, libcst and packaging), and
libcst and packaging are installed under constraints that pin every distribution the image already has, so pip can
add them but never up- or downgrade a package vLLM was built with; if it would have to, the install
fails and the container stops before serving.
"""

from __future__ import annotations

import ipaddress
import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

from packaging.version import InvalidVersion, Version

import specdraft
from specdraft.errors import UserError
from specdraft.paths import expand_user
from specdraft.planning import API_KEY_VARIABLE, LaunchPlan, NodeCommand

SOURCE_IN_CONTAINER = "/opt/specdraft-src"
BUILD_IN_CONTAINER = "/tmp/specdraft-build"
HF_HOME_IN_CONTAINER = "/root/.cache/huggingface"
IMAGE_PACKAGES = "/tmp/specdraft-image-packages.txt"
PATCH_REQUIREMENTS = ("libcst>=1.0", "packaging>=23")
"""specdraft's own pins (pyproject.toml) of what ``patch apply`` / ``patch verify`` import besides specdraft."""
DEFAULT_PORT = 8000
DEFAULT_PUBLISH_ADDRESS = "127.0.0.1"
"""The host address ``--docker`` publishes the port on: this machine alone, unless the user asks for more."""
IMAGE_HINT = "pass --image vllm/vllm-openai:vX.Y.Z (the release you mean to serve with)"


def _source_checkout() -> Path | None:
    """The specdraft checkout this package runs from, if it is one (pyproject.toml beside the package)."""
    root = Path(specdraft.__file__).resolve().parent.parent
    return root if (root / "pyproject.toml").is_file() else None


def _mount(host: Path, container: str | Path, read_only: bool = False) -> list[str]:
    if ":" in str(host):
        raise UserError(f"{host}: docker -v cannot mount a path containing ':'", hint="move or link it elsewhere")
    return ["-v", f"{host}:{container}" + (":ro" if read_only else "")]


def _host_paths(plan: LaunchPlan, with_template: bool = True) -> list[Path]:
    """Local files and directories the serve argv names: they are mounted at the same path (a node's command
    carries the template itself, so a node mounts no template)."""
    candidates = [plan.request.target, (plan.speculative.model if plan.speculative is not None else None) or ""]
    template = plan.serve.flag("--chat-template")
    if template is not None and with_template:
        candidates.append(template.value or "")
    paths = []
    for value in candidates:
        path = Path(value).expanduser()
        if value and path.exists() and path.is_absolute() and path not in paths:
            paths.append(path)
        elif value and path.exists():
            raise UserError(f"{value}: docker mounts need an absolute path", hint=f"pass {path.resolve()}")
    return paths


def served_port(argv: Sequence[str]) -> int | None:
    """The ``--port`` the serve argv sets (``--port N`` or ``--port=N``; the last one wins, as in argparse)."""
    port = None
    for index, arg in enumerate(argv):
        value = arg.split("=", 1)[1] if arg.startswith("--port=") else (
            argv[index + 1] if arg == "--port" and index + 1 < len(argv) else None)
        if value is None:
            continue
        if not value.isdigit() or not 0 < int(value) < 65536:
            raise UserError(f"--port {value!r} after -- is not a TCP port", hint="pass -- --port 8001")
        port = int(value)
    return port


def image_for(plan: LaunchPlan, image: str | None) -> str:
    """``image`` if given, else the vllm/vllm-openai tag of the planned release; refused when that is unknown."""
    if image:
        return image
    version, distribution = plan.vllm.version, plan.vllm.distribution or "vllm"
    if not version:
        raise UserError("--docker: the vLLM version is unknown here, so no vllm/vllm-openai tag follows from it"
                        + (f" ({plan.vllm.note})" if plan.vllm.note else ""), hint=IMAGE_HINT)
    if plan.vllm.is_cpu_build:
        raise UserError(f"--docker: the planned vLLM is {distribution} {version}; vllm/vllm-openai images are "
                        "the CUDA builds", hint=IMAGE_HINT)
    try:
        parsed = Version(version)
    except InvalidVersion:
        raise UserError(f"--docker: vLLM version {version!r} is not a version", hint=IMAGE_HINT) from None
    if str(parsed) != parsed.base_version:
        raise UserError(f"--docker: vLLM {version} is not a published release, so it has no vllm/vllm-openai tag",
                        hint=IMAGE_HINT)
    return f"vllm/vllm-openai:v{parsed.base_version}"


def _hf_mounts(environ: Mapping[str, str]) -> list[str]:
    """The host's Hugging Face home (``HF_HOME``, else ~/.cache/huggingface) and, if set apart, ``HF_HUB_CACHE``.

    ``-e HF_TOKEN`` and ``-e VLLM_API_KEY`` name the variables without their values: docker copies each from this
    environment when set (the token for the gated google/ repos, the API key vLLM then asks every request for), so
    neither is printed; a token saved by ``hf auth login`` comes with the mounted home.
    """
    home = expand_user(environ.get("HF_HOME") or Path.home() / ".cache" / "huggingface", option="HF_HOME")
    args = [*_mount(home, HF_HOME_IN_CONTAINER), "-e", f"HF_HOME={HF_HOME_IN_CONTAINER}", "-e", "HF_TOKEN",
            "-e", API_KEY_VARIABLE]
    if environ.get("HF_HUB_CACHE"):
        hub = f"{HF_HOME_IN_CONTAINER}/hub"
        args += [*_mount(expand_user(environ["HF_HUB_CACHE"], option="HF_HUB_CACHE"), hub), "-e", f"HF_HUB_CACHE={hub}"]
    return args


def install_commands(source_in_container: str | None) -> list[str]:
    """The entrypoint's install steps: specdraft without dependencies, then what its patch steps import, with every
    distribution already in the image pinned (pip adds what is missing, changes nothing vLLM has)."""
    specdraft_install = (f"cp -r {SOURCE_IN_CONTAINER} {BUILD_IN_CONTAINER} && "
                         f"python3 -m pip install --no-deps {BUILD_IN_CONTAINER}" if source_in_container
                         else f"python3 -m pip install --no-deps specdraft=={specdraft.__version__}")
    return [f"python3 -m pip list --format=freeze > {IMAGE_PACKAGES}", specdraft_install,
            f"python3 -m pip install -c {IMAGE_PACKAGES} {shlex.join(PATCH_REQUIREMENTS)}"]


def _container(plan: LaunchPlan, image: str | None, environ: Mapping[str, str] | None,
               with_template: bool = True) -> tuple[str, list[str], list[str]]:
    """The image, the mounts (Hugging Face home, this checkout, the plan's local paths) and the install steps."""
    environ = os.environ if environ is None else environ
    source = _source_checkout()
    mounts = _hf_mounts(environ)
    if source is not None:
        mounts += _mount(source, SOURCE_IN_CONTAINER, read_only=True)
    for path in _host_paths(plan, with_template):
        mounts += _mount(path, path, read_only=True)
    return image_for(plan, image), mounts, install_commands(SOURCE_IN_CONTAINER if source is not None else None)


def publish_address(text: str | None) -> str:
    """The host address to publish on, as ``docker -p`` takes it (an IPv6 address in brackets); 127.0.0.1 unless
    given."""
    if text is None:
        return DEFAULT_PUBLISH_ADDRESS
    try:
        address = ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        raise UserError(f"--publish-address {text!r} is not an IP address",
                        hint="pass 127.0.0.1 (this machine alone, the default), a LAN address, or 0.0.0.0 "
                             "(every interface)") from None
    return f"[{address}]" if address.version == 6 else str(address)


def docker_argv(plan: LaunchPlan, *, image: str | None = None, environ: Mapping[str, str] | None = None,
                publish: str | None = None) -> list[str]:
    """``docker run`` as a list; its entrypoint runs ``patch apply``, ``patch verify`` and ``vllm serve``. The port is
    published on ``publish`` (``publish_address``: 127.0.0.1 unless given); inside the container vLLM listens on
    every interface of the container, which is what docker forwards to."""
    address = publish_address(publish)
    image, mounts, install = _container(plan, image, environ)
    argv = list(plan.argv)
    host = _served_host(argv)
    if host is not None and host.startswith(("127.", "localhost", "::1", "[::1]")):
        raise UserError(f"--host {host} after -- would make vLLM listen inside the container only, where docker "
                        "cannot forward to it",
                        hint=f"drop it: --docker publishes on {DEFAULT_PUBLISH_ADDRESS} already "
                             "(--publish-address ADDR for another)")
    port = served_port(argv)
    if port is None:
        port = DEFAULT_PORT
        argv += ["--port", str(port)]
    script = " && ".join([
        *install,
        "python3 -m specdraft patch apply",
        "python3 -m specdraft patch verify",
        "exec " + shlex.join(argv),
    ])
    return ["docker", "run", "--rm", "--gpus", "all", "--ipc=host", "-p", f"{address}:{port}:{port}", *mounts,
            "--entrypoint", "/bin/bash", image, "-c", script]


def _served_host(argv: Sequence[str]) -> str | None:
    """The ``--host`` the serve argv sets (the last one wins), None when it sets none."""
    host = None
    for index, arg in enumerate(argv):
        if arg.startswith("--host="):
            host = arg.split("=", 1)[1]
        elif arg == "--host" and index + 1 < len(argv):
            host = argv[index + 1]
    return host


def docker_command(plan: LaunchPlan, *, image: str | None = None, environ: Mapping[str, str] | None = None,
                   publish: str | None = None) -> str:
    """``docker_argv`` quoted for a POSIX shell."""
    return shlex.join(docker_argv(plan, image=image, environ=environ, publish=publish))


def docker_node_argv(plan: LaunchPlan, node: NodeCommand, *, image: str | None = None,
                     environ: Mapping[str, str] | None = None) -> list[str]:
    """``docker run`` for one node (one of ``plan.container_nodes``) of a multi-node plan: host networking (the
    nodes reach each other and node 0's API port directly); the container installs specdraft, then runs the
    node's own script, whose hotfix step patches the container's vLLM before it starts or joins (and whose
    template step writes the chat template inside the container: the planning machine's file is not there)."""
    image, mounts, install = _container(plan, image, environ, with_template=False)
    return ["docker", "run", "--rm", "--gpus", "all", "--ipc=host", "--network", "host", "--shm-size", "16g",
            *mounts, "--entrypoint", "/bin/bash", image, "-c", " && ".join([*install, node.script])]
