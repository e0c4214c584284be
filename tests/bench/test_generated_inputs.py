"""tune and bench fed generated bad input: every case exits 0, 1 or 2, prints no traceback and ends at once.

A seeded, bounded generator (the same cases every run): a sane base command with one to three options set to
out-of-range numbers, malformed files (binary, not JSON, JSON of the wrong shape, NaN counters) or paths that
do not exist; bench servers are closed ports, so every case is answered before or at the first connection.
"""

import contextlib
import io
import json
import random
import signal

import pytest

from specdraft.cli import main
from tests.speed.test_calibration import DRAFT, SPEC, TARGET

NUMBERS = ["0", "-1", "nan", "inf", "-inf", "1e308", "1e-320", "abc", "", "1e9", "0.5", "3"]
CASES = 400
SECONDS_PER_CASE = 10  # a hang, not a slow machine: every case takes well under a second


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("inputs")
    for name, result in (("spec", SPEC), ("target", TARGET), ("draft", DRAFT)):
        result.save(d / f"{name}.json")
    nan = json.loads((d / "spec.json").read_text())
    nan["levels"][0]["spec_decode"]["num_drafts"] = float("nan")
    wrong_shape = json.loads((d / "spec.json").read_text()) | {"levels": "x"}
    contents = {"binary": bytes(range(256)), "list.json": b"[1, 2]", "nan.json": json.dumps(nan).encode(),
                "shape.json": json.dumps(wrong_shape).encode(), "bad.jsonl": b'{"prompt": 5}\n{oops\n',
                "empty.jsonl": b"\n\n", "ids.jsonl": b'{"prompt": [-1]}\n'}
    for name, data in contents.items():
        (d / name).write_bytes(data)
    paths = {p.name: str(p) for p in d.iterdir()}
    return paths | {"missing": str(d / "missing.json"), "dir": str(d), "under-a-file": str(d / "binary" / "x")}


def tune_case(rng: random.Random, f: dict[str, str]) -> list[str]:
    anything = list(f.values())
    options = {
        "--cost-ratio": NUMBERS, "--overhead-fraction": NUMBERS, "--overhead-ms": NUMBERS,
        "--target-step-ms": NUMBERS, "--max-k": ["0", "-1", "1", "100000000", "9"],
        "--concurrency": ["0", "-1", "1", "4", "7"], "--context": ["0", "-5", "10000000000"],
        "--host-ms": ["nan,1", "1,inf", "1", "1,2,3", "-1,2", "5,10", "5,,10"],
        "--host-costs": ["vllm0.26-mtp-31b-assistant", "unknown"], "--target-bench": anything,
        "--step-times": [(f["draft.json"], p) for p in anything], "--fit-steps": [(p,) for p in anything],
        "--target-dtype": ["auto", "0", "-1", "nan", "fp4"],
    }
    argv = ["tune", *rng.choice([["--per-position-acceptance", rng.choice(["0.8,0.6", "1.5", "nan", "0.5,0.9",
                                                                           ",", "0,0", "-0", "0.8,,0.5"])],
                                 ["--from-bench", rng.choice(anything)]])]
    for name in rng.sample(sorted(options), rng.randint(1, 3)):
        value = rng.choice(options[name])
        argv += [name, *(value if isinstance(value, tuple) else (value,))]
    return argv + [flag for flag in ("--schedule", "--measure-overhead", "--json") if rng.random() < 0.3]


def bench_case(rng: random.Random, f: dict[str, str], port: int) -> list[str]:
    anything = list(f.values())
    if rng.random() < 0.5:
        argv = ["bench", "--compare-results", rng.choice(anything), rng.choice(anything)]
    else:
        argv = ["bench", "--base-url", rng.choice([f"http://127.0.0.1:{port}", "not a url", "ftp://x"]), "--model", "m"]
        for name in rng.sample(["--requests", "--temperature", "--max-tokens", "--concurrency", "--prompts"], 2):
            argv += [name, rng.choice(anything if name == "--prompts" else NUMBERS + ["1,0", "1,,2"])]
    if rng.random() < 0.4:
        argv += ["--out", rng.choice([f["dir"] + "/out.json", f["missing"] + "/x.json", f["dir"], f["under-a-file"]])]
    return argv + (["--json"] if rng.random() < 0.5 else [])


def run_bounded(argv: list[str]) -> tuple[object, str]:
    def hang(*_):
        raise TimeoutError(f"{argv} ran past {SECONDS_PER_CASE} s")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(SECONDS_PER_CASE)
    err = io.StringIO()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = main(argv)
    except SystemExit as exit_:  # argparse's own refusals
        code = exit_.code
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return code, err.getvalue()


@pytest.mark.parametrize("command", ["tune", "bench"])
def test_generated_bad_input_never_crashes_or_hangs(files, command, tmp_path):
    from tests.bench.test_cli_bench import closed_port

    rng = random.Random(f"specdraft-{command}")
    port = closed_port()
    failures = []
    for _ in range(CASES):
        argv = tune_case(rng, files) if command == "tune" else bench_case(rng, files, port)
        code, err = run_bounded(argv)
        if code not in (0, 1, 2) or "Traceback" in err or "internal error" in err:
            failures.append((argv, code, err[-200:]))
    assert failures == []
