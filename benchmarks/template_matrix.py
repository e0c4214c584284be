"""How long `check_template` takes for one template: the whole scenario matrix, both content formats.

Goal: <= 0.5 s per template once transformers is imported (the first call also compiles the template).
Run: python benchmarks/template_matrix.py [--variant e|large] [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import time

from specdraft.templates import SCENARIOS, check_template, shipped_template

GOAL_S = 0.5


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=["e", "large"], default="large")
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    source = shipped_template(args.variant).read_text()

    started = time.perf_counter()
    findings = check_template(source, args.variant)  # cold: imports transformers, compiles the template
    cold = time.perf_counter() - started
    timings = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        check_template(source, args.variant)
        timings.append(time.perf_counter() - started)

    renders = len(SCENARIOS) * 2
    median = statistics.median(timings)
    print(f"template: {shipped_template(args.variant).name} ({args.variant}), {renders} renders "
          f"({len(SCENARIOS)} scenarios x 2 content formats), {len(findings)} findings")
    print(f"first call (import + compile + matrix): {cold:.3f} s")
    print(f"whole matrix, median of {args.repeat}: {median:.3f} s (max {max(timings):.3f} s); goal <= {GOAL_S} s: "
          f"{'met' if median <= GOAL_S else 'MISSED'}")
    return 0 if median <= GOAL_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
