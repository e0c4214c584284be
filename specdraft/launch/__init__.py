"""Launching a checked plan: preflight report, hotfix step, ``docker run`` rendering, exec of
``vllm serve``, and the tiny-pair demo. The plan itself comes from ``specdraft.planning``."""

from specdraft.launch._demo import run_demo
from specdraft.launch._docker import docker_argv, docker_command, docker_node_argv
from specdraft.launch._preflight import apply_hotfixes, render_report
from specdraft.launch._serve import exec_serve, serve_command

__all__ = ["apply_hotfixes", "docker_argv", "docker_command", "docker_node_argv", "exec_serve", "render_report",
           "run_demo", "serve_command"]
