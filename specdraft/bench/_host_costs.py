"""Known host costs of a speculative step, per path and vLLM release (``data/host_costs.json``).

Each entry was measured with the torch profiler (see the file's ``_about``); ``tune --host-costs NAME``
turns one into a ``HostCost`` for a given target step time.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

from specdraft.bench._tuner import HostCost, host_cost_from_ms
from specdraft.errors import UserError


@lru_cache(maxsize=1)
def known_host_costs() -> dict[str, dict]:
    """Name -> measured entry (per_step_ms, per_draft_token_ms and where it was measured)."""
    text = resources.files("specdraft.bench").joinpath("data/host_costs.json").read_text()
    return {name: entry for name, entry in json.loads(text).items() if not name.startswith("_")}


def describe(name: str) -> str:
    e = known_host_costs()[name]
    return (f"{name}: {e['per_step_ms']} ms per step + {e['per_draft_token_ms']} ms per drafted token, measured "
            f"for {e['method']} on vLLM {e['vllm']} (async scheduling {'on' if e['async_scheduling'] else 'off'}, "
            f"{e['drafter']}) on {e['gpu']} at K = {e['measured_at_k']}")


def host_cost_named(name: str, target_step_ms: float) -> HostCost:
    """The named entry as a host line in units of ``target_step_ms``."""
    table = known_host_costs()
    if name not in table:
        raise UserError(f"no known host costs named {name!r}", hint=f"choose one of: {', '.join(sorted(table))}")
    e = table[name]
    return host_cost_from_ms(e["per_step_ms"], e["per_draft_token_ms"], target_step_ms,
                             source=f"known: {describe(name)}")
