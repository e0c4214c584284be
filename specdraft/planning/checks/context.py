"""The expected context (``--expected-context``) against what each method served at long contexts.

Launch's plans were served beside each measured size at prompts of 1K, 16K and 64K tokens
(``specdraft/families/data/gemma4.contexts.json``). Some methods keep their speedup as the context grows, others
lose it: beside the 31B on vLLM 0.26.0 the E2B ``draft_model`` plan served 1.60x at 1K and 0.76x at 16K, DSpark
4.31x at 1K and 1.13x at 64K, while MTP and DFlash held above 4x. So where requests carry long contexts the check
says what the planned method served there and which served fastest; without the flag it points out a method that
was measured to lose at a long context.
"""

from __future__ import annotations

import shlex

from specdraft.checkpoints import Checkpoint, published_assistant, published_drafters
from specdraft.families import ContextReading
from specdraft.findings import Finding
from specdraft.planning.facts.method_ranking import measured_size
from specdraft.planning.knowledge.speculators import speculator_from_name

CHECK = "expected-context"
HOPPER = ("h100", "h200")
LOST_SHARE = 0.8
FAR_BEHIND = 1.5
"""A method that kept less than ``LOST_SHARE`` of its short-context speedup at the expected context while another
served ``FAR_BEHIND`` times as much there is worth a warning (one that merely trails at every length is not a
context question: the method checks speak to it)."""


def readings_at(target: Checkpoint, tokens: int) -> dict[str, ContextReading]:
    """Every method served beside ``target``'s measured size, read at ``tokens`` of context (empty: none served)."""
    family, size = measured_size(target)
    return family.contexts.readings(size, tokens) if family.contexts is not None else {}


def check_expected_context(target: Checkpoint, method: str, expected: int | None, max_model_len: int,
                           profile: str | None) -> Finding | None:
    """What ``method`` (the decided one; ``none``: the target alone) served at the expected context; an error
    where that context does not fit the planned ``--max-model-len``. None: nothing to say."""
    if expected is not None and expected > max_model_len:
        return Finding(level="error", check=CHECK,
                       message=f"{expected} tokens of expected context do not fit the planned --max-model-len "
                               f"{max_model_len}",
                       hint=f"pass --max-model-len {expected} or more (memory and the model's longest context "
                            "allowing), or a shorter --expected-context")
    if method == "none":
        return None
    if expected is None:
        return _loses_somewhere(target, method)
    readings = readings_at(target, expected)
    reading = readings.get(method)
    if reading is None:
        return Finding(level="info", check=CHECK,
                       message=f"{method} was not served at long contexts beside {target.ref}: the plan does not "
                               f"account for {expected} tokens of context")
    best = max(readings.values(), key=lambda r: r.speedup)
    where = _where(reading, expected, profile)
    if reading.speedup < 1 or (reading.factor < LOST_SHARE and best.speedup >= FAR_BEHIND * reading.speedup):
        faster = (f"; {best.method} served {best.speedup:.2f}x there ({best.measured_text()})"
                  if best is not reading else "")
        # measured on H200s: on a GPU of another kind (a DGX Spark's bandwidth-bound step) it points, it is no verdict
        return Finding(level="warning" if profile in HOPPER else "info", check=CHECK,
                       message=f"{where}: {method} served {reading.speedup:.2f}x of the target alone "
                               f"({reading.measured_text()}){faster}",
                       hint=f"specdraft launch --target {shlex.quote(target.ref)} --method auto "
                            f"--expected-context {expected} (ranks by the speedups served at that context), or "
                            + _drafter_hint(target, best.method))
    return Finding.ok(CHECK, f"{where}: {method} served {reading.speedup:.2f}x ({reading.measured_text()})")


def _drafter_hint(target: Checkpoint, method: str) -> str:
    """How to serve ``method`` instead: its published drafter for the target where one is known (a speculator's
    method read from its name as everywhere else, ``speculator_from_name``; the assistant runs ``mtp``)."""
    assistant = published_assistant(target)
    drafter = next((repo for repo in published_drafters(target)
                    if ("mtp" if repo == assistant else getattr(speculator_from_name(repo), "method", None)) == method),
                   None)
    return f"--draft {drafter}" if drafter else f"give {method}'s drafter as --draft"


def _where(reading: ContextReading, expected: int, profile: str | None) -> str:
    beyond = " (past the longest length served: its figure)" if reading.beyond else ""
    measured_on = "" if profile == "h200" else f", measured on H200, not {profile}"
    return f"at {expected} tokens of context{beyond}, K = {reading.k}, forced acceptance {reading.alpha}{measured_on}"


def _loses_somewhere(target: Checkpoint, method: str) -> Finding | None:
    """Without ``--expected-context``: an info line where ``method`` was served slower than the target alone at one
    of the measured lengths, so a user with long prompts knows to say so."""
    reading = readings_at(target, 1024).get(method)
    if reading is None:
        return None
    losing = [length for length, speedup in zip(reading.lengths, reading.speedups) if speedup < 1]
    if not losing:
        return None
    return Finding(level="info", check=CHECK,
                   message=f"{method} beside {target.ref} served slower than the target alone from "
                           f"{losing[0] // 1024}K tokens of context ({reading.measured_text()})",
                   hint="if requests carry long prompts or histories, pass --expected-context TOKENS")
