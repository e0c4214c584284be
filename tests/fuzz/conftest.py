"""The tally of the generated-input contract test, printed at the end of the run."""

from __future__ import annotations

from collections import Counter

RUN: dict = {}
"""The generator's seed and cases per command."""
OUTCOMES: list[dict] = []
"""One entry per generated case that ran: command, kind, exit code, seconds, the breach found (or None)."""


def pytest_terminal_summary(terminalreporter) -> None:
    if not OUTCOMES:
        return
    write = terminalreporter.write_line
    commands = Counter(o["command"] for o in OUTCOMES)
    codes = Counter(str(o["code"]) for o in OUTCOMES)
    breaches = [o for o in OUTCOMES if o["breach"]]
    slowest = max(OUTCOMES, key=lambda o: o["seconds"])
    write(f"contract: {len(OUTCOMES)} generated cases (seed {RUN.get('seed')}) ran ({', '.join(f'{c} {n}' for c, n in sorted(commands.items()))}); "
          f"exit codes {dict(sorted(codes.items()))}; slowest {slowest['seconds']:.1f}s ({slowest['id']}); "
          f"{len(breaches)} broke the contract")
    for outcome in breaches:
        owner = " (known: xfail)" if outcome["known"] else ""
        write(f"  {outcome['id']} [{outcome['kind'][:120]}]: {outcome['breach'][:200]}{owner}")
    if terminalreporter.config.getoption("verbose") > 0:
        for outcome in OUTCOMES:
            write(f"  {outcome['id']} {outcome['code']} {outcome['seconds']:.2f}s [{outcome['kind']}] {outcome['said']}")
