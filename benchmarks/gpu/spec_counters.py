"""vLLM's speculative-decoding counters read from an ``LLM`` in the GPU scripts (sweep.py, agree.py)."""

from __future__ import annotations


def spec_counters(llm) -> dict:
    """The ``spec_decode`` metrics of ``llm.get_metrics()``: a number per counter, a list per labelled vector."""
    counters = {}
    for metric in llm.get_metrics():
        if "spec_decode" not in metric.name:
            continue
        if hasattr(metric, "values"):
            counters[metric.name] = list(metric.values)
        elif hasattr(metric, "value"):
            counters[metric.name] = metric.value
    return counters


def counter_delta(before: dict, after: dict) -> dict:
    """``after - before`` per counter (element-wise for vectors)."""
    delta = {}
    for name, value in after.items():
        old = before.get(name)
        if isinstance(value, list):
            delta[name] = [v - (old[i] if old else 0) for i, v in enumerate(value)]
        else:
            delta[name] = value - (old or 0)
    return delta
