"""Is speculation paying right now? Read a running vLLM server's counters and judge them with tune's model.

- ``watch(WatchRequest(base_url=...)) -> Iterator[WatchReport]``: what ``specdraft watch`` does, as a call: one
  report per reading (``once``: the counters since the server started; else per ``interval``, beside the whole
  watch so far), each model's window with its ``Judgement``; ``WatchReport.exit_code`` is the command's.
- ``read_metrics(text) -> {model: ModelReading}``: one ``/metrics`` page, engines (data-parallel ranks) summed.
- ``judge(counters, PairCosts) -> Judgement``: pays / marginal / loses / idle / no-speculation, the floor, the
  plan's prediction and tune's K; ``costs_for(method, target, profile=...)`` and ``costs_from_plan(PLAN.json)``
  give the step model (launch's own).
"""

from specdraft.watch._scrape import ModelReading, ServerReading, read_metrics, read_server
from specdraft.watch._verdict import (
    MARGIN,
    Judgement,
    PairCosts,
    Verdict,
    break_even_length,
    costs_for,
    costs_from_plan,
    judge,
)
from specdraft.watch._watch import ModelReport, WatchReport, WatchRequest, Window, watch, window

__all__ = [
    "break_even_length", "costs_for", "costs_from_plan", "judge", "Judgement", "MARGIN", "ModelReading",
    "ModelReport", "PairCosts", "read_metrics", "read_server", "ServerReading", "Verdict", "watch", "WatchReport",
    "WatchRequest", "Window", "window",
]
