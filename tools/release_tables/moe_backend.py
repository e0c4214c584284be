"""Reads ``data/moe_backend.json``'s facts from one vLLM release tree (``specdraft/planning/decisions/moe_backend.py``
says what they mean). Run

    python -m tools.release_tables.moe_backend VERSION=TREE ...

to print the table's rules for unpacked release trees, oldest first.
"""

from __future__ import annotations

from pathlib import Path

from specdraft.planning.decisions.moe_backend import PROFILE_CAPABILITY, MoeBackendSupport
from specdraft.planning.facts.vllm_arguments import _package_dir, _parse
from tools.release_tables.moe_kernels import Unreadable, gemma4_moe_activation, nvfp4_pick
from tools.release_tables.release_support import _expand_literal, _literal_aliases


def read_moe_backend_support(vllm_root: Path) -> MoeBackendSupport | None:
    """The facts of the vLLM source tree at ``vllm_root``; None if unreadable."""
    package = _package_dir(Path(vllm_root))
    kernel = _parse(package / "config" / "kernel.py")
    if kernel is None:
        return None
    try:
        picks = {f"sm{cc}": nvfp4_pick(package, cc) for cc in sorted(set(PROFILE_CAPABILITY.values()))}
        activation = gemma4_moe_activation(package)
    except Unreadable:
        return None
    return MoeBackendSupport(moe_backend_choices=tuple(_expand_literal("MoEBackend", _literal_aliases(kernel))),
                             gemma4_moe_activation=activation, nvfp4_pick=picks)


if __name__ == "__main__":
    import json
    import sys

    from tools.release_tables import table_rules

    trees = dict(arg.split("=", 1) for arg in sys.argv[1:])
    print(json.dumps(table_rules({v: Path(t) for v, t in trees.items()}, read_moe_backend_support), indent=2))
