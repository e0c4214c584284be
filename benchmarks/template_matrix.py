"""How long `check_template` takes for one template (the whole scenario matrix, both content formats), and how
long `compare_to_reference` takes for it and a reference template.

Goals: the matrix <= 0.5 s per template once transformers is imported; the reference comparison (which
renders both templates and compares every prompt) at most twice that budget, 1 s. The ratio to the measured
matrix time is printed too: it is above 2 because the reference, not being specdraft's own, is compiled
afresh in the rendering child on every call (see specdraft/templates/limits.py).
Run: python benchmarks/template_matrix.py [--variant e|large] [--reference FILE] [--repeat N]
(the default reference is tests/templates/fixtures/official_like_<variant>.jinja, which leaks like Google's
templates and formats tools differently, so most scenarios are compared in full).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from specdraft.templates import SCENARIOS, check_template, shipped_template
from specdraft.templates.reference import compare_to_reference

GOAL_S = 0.5
FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "templates" / "fixtures"


def _median_seconds(run, repeat: int) -> float:
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=["e", "large"], default="large")
    parser.add_argument("--reference", type=Path, help="the reference template (default: the official-like fixture)")
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    source = shipped_template(args.variant).read_text()
    reference = (args.reference or FIXTURES / f"official_like_{args.variant}.jinja").read_text()

    started = time.perf_counter()
    findings = check_template(source, args.variant)  # cold: imports transformers, compiles the template
    cold = time.perf_counter() - started
    matrix = _median_seconds(lambda: check_template(source, args.variant), args.repeat)
    comparison = compare_to_reference(source, reference, args.variant)
    compared = _median_seconds(lambda: compare_to_reference(source, reference, args.variant), args.repeat)

    renders = len(SCENARIOS) * 2
    print(f"template: {shipped_template(args.variant).name} ({args.variant}), {renders} renders "
          f"({len(SCENARIOS)} scenarios x 2 content formats), {len(findings)} findings")
    print(f"first call (import + compile + matrix): {cold:.3f} s")
    matrix_met = matrix <= GOAL_S
    print(f"whole matrix, median of {args.repeat}: {matrix:.3f} s; goal <= {GOAL_S} s: {'met' if matrix_met else 'MISSED'}")
    compared_met = compared <= 2 * GOAL_S
    print(f"reference comparison ({len(comparison.drift)} drift, {len(comparison.reference)} reference findings), "
          f"median of {args.repeat}: {compared:.3f} s ({compared / matrix:.1f}x the matrix); goal <= {2 * GOAL_S} s: "
          f"{'met' if compared_met else 'MISSED'}")
    return 0 if matrix_met and compared_met else 1


if __name__ == "__main__":
    raise SystemExit(main())
