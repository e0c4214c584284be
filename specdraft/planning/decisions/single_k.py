"""One K over several batch sizes: which one (``single_k``), and why a launch takes it rather than a K per batch
size (``why_single_k``): the release takes one K, or drops the schedule for the method or with data parallelism,
or the CUDA graphs a schedule costs on the server's model runner outweigh its predicted gain (measured on a GPU,
the constants below).
"""

from __future__ import annotations

import math

from specdraft.planning.decisions.k_levels import LevelChoice
from specdraft.planning.knowledge.release_tables import KPerBatchSizeRule

PIECEWISE_SPEED = 0.73
"""What is left of a FULL-graph engine's aggregate speed at the same K once a schedule makes the V1 model runner
capture PIECEWISE CUDA graphs only: the 31B-shaped target's MTP assistant at K = 8 on an H200, vLLM 0.26.0, the
schedule engine's fixed K = 8 over a plain K = 8 engine, geometric mean over 1-32 sequences at acceptance 0.85 and
0.70 (0.55-1.05 per level; docs/gpu/README.md section 7.1, ``docs/gpu/load_31b.schedule.json``). Measured for that
path and release only; taken for every release whose V1 runner does the same, since no other was measured."""
V2_BELOW_LARGEST_K_SPEED = 0.86
"""On Model Runner V2 a schedule keeps FULL CUDA graphs, but in 0.25.0-0.31.x its speculator drafts the largest K
every step, so a K below the schedule's largest runs slower than a plain engine of that K. What is left of the
plain engine's aggregate speed: the same 31B-shaped MTP pair, H200, vLLM 0.26.0 with the v2-schedule-drafter-graphs
hotfix, K = 3 and 5 through a K = 8 schedule engine over plain K = 3 and 5 engines, geometric mean over 1-32
sequences at acceptance 0.85 and 0.70, 16 and 32 sequences pooled over two runs (0.49-1.02 per level; K = 8
itself: 0.98; docs/gpu/README.md section 7.3, ``docs/gpu/load_31b.v2.schedule.json``)."""

V2_SCHEDULED_K_SPEED = 1.02
"""What a schedule keeps of a plain engine's speed at the same K where Model Runner V2 drafts only the scheduled K
(0.32.0 on) and captures FULL CUDA graphs for every K the schedule names: a schedule's rows over a plain engine of
the K it ran at that batch size, geometric mean over 11 batch-size/acceptance pairs (0.91-1.09 each); vLLM 0.33.0,
4 x H200, the 31B-shaped target with its MTP assistant at forced acceptance 0.85 and 0.70, 1-32 sequences. Launch's
modelled schedule ran at 1.007 and 1.015 of the best plain fixed K of each batch size, and at 1.07 and 1.035 of the
single K (6) the plan had taken (docs/gpu/README.md section 7.4, ``docs/gpu/v0.33/load_31b.v2.schedule.json``).
Nothing measurable is lost, so there a schedule is planned wherever the batch sizes want different K."""


def single_k(levels: list[LevelChoice], max_k: int) -> tuple[int, list[tuple[int, float]]]:
    """The K >= 1 with the highest geometric-mean predicted speedup over the measured batch sizes, and what
    it gives up at each against that batch size's own best K."""
    def mean_log(k: int) -> float:
        return sum(math.log(level.speedup_at(k)) for level in levels) / len(levels)

    k = max(range(1, max_k + 1), key=lambda candidate: (round(mean_log(candidate), 9), -candidate))
    lost = [(level.batch_size, 1.0 - level.speedup_at(k) / level.speedup_at(level.best_k)) for level in levels]
    return k, lost


def schedule_unavailable(rule: KPerBatchSizeRule | None, version: str | None, method: str,
                         data_parallel_size: int) -> str | None:
    """Why this launch cannot pass a schedule on ``version`` (whose table rule is ``rule``); None: it can."""
    if rule is None:
        where = f"vLLM {version} is not in" if version else "the vLLM version is unknown to"
        return f"{where} specdraft's K-per-batch-size table (0.19.0-0.33.0)"
    if not rule.supported:
        return f"vLLM {version} takes one K for every batch size (num_speculative_tokens_per_batch_size came in 0.24.0)"
    if rule.v1_methods is not None and method not in rule.v1_methods:
        return f"vLLM {version} drops the schedule for method {method} on its V1 model runner"
    if rule.drops_with_data_parallel and data_parallel_size > 1:
        return (f"vLLM {version} drops the schedule with data parallelism ({data_parallel_size} ranks could pick "
                f"different K and deadlock)")
    return None


def data_parallel_size_of(extra_args: list[str]) -> int:
    """``--data-parallel-size`` / ``-dp`` among the flags passed through after ``--`` (1 when absent)."""
    for i, arg in enumerate(extra_args):
        name, _, value = arg.partition("=")
        if name in ("--data-parallel-size", "-dp"):
            value = value or (extra_args[i + 1] if i + 1 < len(extra_args) else "1")
            return int(value) if value.isdigit() else 1
    return 1


def why_single_k(levels: list[LevelChoice], rule: KPerBatchSizeRule | None, *, version: str | None, method: str,
                 max_k: int, data_parallel_size: int, on_v2: bool) -> str | None:
    """Why a launch whose batch sizes want different K takes one K on ``version`` (whose table rule is ``rule``);
    None: the schedule pays there."""
    why_not = schedule_unavailable(rule, version, method, data_parallel_size)
    if why_not is not None:
        return why_not
    if on_v2:
        return _below_largest_k_costs_more(levels, max_k) if rule.v2_drafts_largest_k else None
    return _graphs_cost_more(levels, rule, version, max_k)


def _predicted_gain(levels: list[LevelChoice], max_k: int, below_largest: float = 1.0) -> float:
    """The schedule's predicted speed over the best single K, geometric mean over the batch sizes; each batch size
    whose K is below the schedule's largest keeps ``below_largest`` of its predicted speed."""
    k, _ = single_k(levels, max_k)
    largest = max(level.best_k for level in levels)

    def scheduled(level: LevelChoice) -> float:
        speed = level.speedup_at(level.best_k)
        return speed if level.best_k == largest else speed * below_largest

    return math.exp(sum(math.log(scheduled(level) / level.speedup_at(k)) for level in levels) / len(levels))


def _graphs_cost_more(levels: list[LevelChoice], rule: KPerBatchSizeRule, version: str | None,
                      max_k: int) -> str | None:
    """Why a schedule would run slower than one K on a FULL-graph engine (None: its predicted gain covers its
    PIECEWISE graphs): on the GPU a schedule on vLLM 0.26.0's V1 runner lost to a plain fixed-K engine at every
    batch size, because its predicted gain over one K is smaller than what PIECEWISE graphs cost."""
    if "PIECEWISE" not in rule.full_cudagraphs:
        return None
    gain = _predicted_gain(levels, max_k)
    if gain * PIECEWISE_SPEED > 1.0:
        return None
    return (f"a schedule makes vLLM {version}'s V1 model runner capture PIECEWISE CUDA graphs only, which left "
            f"{PIECEWISE_SPEED:.0%} of a FULL-graph engine's speed at the same K (measured: 31B MTP assistant, "
            f"vLLM 0.26.0, H200); the schedule's predicted gain over one K ({gain - 1:+.0%}, geometric mean over the "
            f"batch sizes) does not cover that")


def _below_largest_k_costs_more(levels: list[LevelChoice], max_k: int) -> str | None:
    """Why a schedule on a Model Runner V2 that drafts the largest K every step (0.25.0-0.31.x: its speculator's
    loop runs num_speculative_tokens steps, the schedule trims what is verified) would run slower than one K (None:
    it pays): each batch size whose K is below the schedule's largest keeps ``V2_BELOW_LARGEST_K_SPEED`` of its
    predicted speed (measured on vLLM 0.26.0: the schedules there ran within -6% / +2% of the best single K over 1-32
    sequences, and 11-19% below a plain engine of their own K at 32 sequences)."""
    gain = _predicted_gain(levels, max_k, below_largest=V2_BELOW_LARGEST_K_SPEED)
    if gain > 1.0:
        return None
    return (f"on Model Runner V2 a schedule's K below its largest ran at {V2_BELOW_LARGEST_K_SPEED:.0%} of a plain "
            f"engine of that K (measured: 31B MTP assistant, vLLM 0.26.0, H200); with that, the schedule's predicted "
            f"speed is {gain - 1:+.0%} against one K (geometric mean over the batch sizes)")
