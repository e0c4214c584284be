"""Generated bad input for every command: bad paths, malformed JSON / safetensors / Jinja, numbers out of range.

``generate(seed, per_command)`` returns the same cases for the same seed. A case is a command line
plus the files it reads, built under the case's own directory by ``Case.build``; inputs start from
real documents (the Gemma 4 configs specdraft ships, a bench result written by the library, the
shipped chat template, the hotfixed vLLM modules of a real release) and are then broken one way.
"""

from __future__ import annotations

import functools
import json
import random
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import patch_trees

REPO = Path(__file__).resolve().parents[2]
MODELS = REPO / "specdraft" / "checkpoints" / "data" / "models"
TEMPLATE = REPO / "chat_templates" / "gemma4-e-series.jinja"

# Text a user can type where a number is expected.
BAD_NUMBERS = ("-1", "0", "-0", "nan", "inf", "-inf", "1e308", "1e-320", "99999999999999999999", "0x10", "", " ",
               "1,2", "3.5", "-2.5", "1e3", "½")
# Values that replace one field of a JSON document: every other JSON type, out-of-range numbers.
BAD_VALUES = (None, True, "x", "", -1, 0, 2**63, 1e308, -1e308, [], {}, [None], {"": None}, "NaN", 0.5)
# Whole documents that are not what the reader expects.
BAD_DOCUMENTS = (b"", b"{", b"[]", b"[1, 2]", b'"a string"', b"null", b"42", b"\xff\xfe\x00\x01", b'{"a": NaN}',
                 b"{}", b'{"a": 1}garbage', "{\"\u00e9\": \"\ud800\"}".encode("utf-8", "surrogatepass"))
# Paths a user can type by accident; "{case}" is the case's directory, "{outside}" the directory no case may change.
BAD_PATHS = ("{case}/missing", "{case}/missing/deeper", "{case}", "/dev/null", "{case}/a file with spaces",
             "{case}/semi;colon", "{case}/new\nline", "{outside}/keep.txt", "{outside}", "{case}/" + "x" * 300,
             "", "-", "~nobody-here/x", "{case}/empty", "{case}/binary")
JINJA_BREAKAGE = (
    "{% for m in messages %}",  # unclosed block
    "{{ messages[0]['content'] }",  # unclosed expression
    "{{ messages | no_such_filter }}",
    "{{ raise_exception('refused by the template') }}",
    "{% macro m(x) %}{{ m(x) }}{% endmacro %}{{ m(1) }}",  # unbounded recursion
    "{{ undefined_variable.attribute.deeper }}",
    "{% set x = 1 / 0 %}",
    "{% include 'other.jinja' %}",
    "{% extends 'base.jinja' %}",
    "{{ messages[99]['content'] }}",
    "{{ ''.__class__.__mro__ }}",
    "{% for i in range(3) %}{{ i }}{% endfor %}",
    "{#",
    "{% raw %}",
    "\x00\x01\x02",
    "{% for i in range(10**7) %}{% endfor %}",  # the sandbox caps range()
)
# Host lists and addresses for the multi-node options.
BAD_HOSTS = ("", ",", "a,a", "a", "a,b,c", "a b,c", "a,,b", "-h,x", "x" * 300 + ",y", "a;rm,b", "\u00e9,b", "a\nb,c")
METHOD_NAMES = ("draft_model", "mtp", "eagle3", "dflash", "ngram", "ngram_gpu", "suffix", "auto", "none", "", "MTP",
                "None", "medusa", "ngram,mtp")
# NAME=COMMAND node specs for `cluster status`; every command is harmless ({case}/report.json is a broken report).
NODE_SPECS = ("n1=cat {case}/report.json", "n1=/bin/false", "n1=/bin/true", "n1=no-such-program-here", "n1=",
              "=cat", "n1", "n1=sh -c 'unclosed", "n1=cat /dev/null", "n1=cat {case}/binary", "n1=cat {case}/empty",
              "n 1=cat {case}/report.json", "n2=cat {case}/report.json")
# Templates that are slow on purpose: 10 MB of output.
JINJA_SLOW = ('{{ "x" * 10**7 }}',)


@dataclass(frozen=True)
class Case:
    """One generated command line; ``build(case_dir, outside_dir)`` writes its inputs and returns argv."""

    id: str
    command: str
    kind: str
    build: Callable[[Path, Path], list[str]]


def generate(seed: int, per_command: int) -> list[Case]:
    rng = random.Random(seed)
    cases: list[Case] = []
    for command, makers in _MAKERS.items():
        for number in range(per_command):
            maker = makers[number % len(makers)] if number < len(makers) else rng.choice(makers)
            kind, build = maker(rng)
            cases.append(Case(f"{command}-{number:02d}", command, kind, build))
    for number, text in enumerate(JINJA_SLOW):
        cases.append(Case(f"template-slow-{number}", "template", f"slow template {text!r}",
                          _writes({"slow.jinja": text.encode()}, ["template", "check", "{case}/slow.jinja"])))
    return cases


# helpers


def expand(argv: list[str], case: Path, outside: Path) -> list[str]:
    return [arg.replace("{case}", str(case)).replace("{outside}", str(outside)) for arg in argv]


def _writes(files: dict[str, bytes], argv: list[str]) -> Callable[[Path, Path], list[str]]:
    def build(case: Path, outside: Path) -> list[str]:
        for name, data in files.items():
            path = case / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        (case / "empty").write_bytes(b"")
        (case / "binary").write_bytes(bytes(range(256)))
        return expand(argv, case, outside)

    return build


def _number(rng: random.Random) -> str:
    return rng.choice(BAD_NUMBERS)


def _path(rng: random.Random) -> str:
    return rng.choice(BAD_PATHS)


def _break_json(rng: random.Random, document: object) -> tuple[str, bytes]:
    """One way to break ``document``: replace it, replace one of its values, drop one of its keys, truncate it."""
    choice = rng.randrange(4)
    if choice == 0:
        bad = rng.choice(BAD_DOCUMENTS)
        return f"document {bad[:20]!r}", bad
    text = json.dumps(document)
    if choice == 1:
        cut = rng.randrange(1, len(text))
        return f"truncated at {cut}/{len(text)}", text[:cut].encode()
    path = _random_path(rng, document)
    if not path:
        return "document replaced", json.dumps(rng.choice(BAD_VALUES)).encode()
    parent = document = json.loads(text)
    for key in path[:-1]:
        parent = parent[key]
    if choice == 2 and isinstance(parent, dict):
        del parent[path[-1]]
        return f"without {'.'.join(map(str, path))}", json.dumps(document).encode()
    value = rng.choice(BAD_VALUES)
    parent[path[-1]] = value
    return f"{'.'.join(map(str, path))} = {value!r}", json.dumps(document, allow_nan=True).encode()


def _random_path(rng: random.Random, document: object) -> list:
    path: list = []
    node = document
    while isinstance(node, (dict, list)) and node and (not path or rng.random() < 0.6):
        key = rng.choice(list(node)) if isinstance(node, dict) else rng.randrange(len(node))
        path.append(key)
        node = node[key]
    return path


def _safetensors_parts(shapes: dict[str, list[int]]) -> tuple[dict, int]:
    """The header of a BF16 safetensors file holding ``shapes``, and its data length."""
    header, offset = {}, 0
    for name, shape in shapes.items():
        size = 2
        for dim in shape:
            size *= dim
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    return header, offset


def safetensors_bytes(shapes: dict[str, list[int]]) -> bytes:
    header, length = _safetensors_parts(shapes)
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + bytes(length)


def _safetensors(rng: random.Random, shapes: dict[str, list[int]]) -> tuple[str, bytes]:
    """A safetensors file for ``shapes`` broken one way (data as zeros)."""
    header, length = _safetensors_parts(shapes)
    raw = json.dumps(header).encode()
    choice = rng.randrange(6)
    if choice == 0:
        return "header only", struct.pack("<Q", len(raw)) + raw
    if choice == 1:
        return "header length past the end", struct.pack("<Q", 2**40) + raw
    if choice == 2:
        return "random bytes", bytes(rng.randrange(256) for _ in range(rng.randrange(64)))
    if choice == 3:
        bad = rng.choice(BAD_DOCUMENTS)
        return f"header {bad[:20]!r}", struct.pack("<Q", len(bad)) + bad
    name = rng.choice(list(header))
    field = rng.choice(["dtype", "shape", "data_offsets"])
    header[name][field] = rng.choice(BAD_VALUES + ([-8, 4], [8, 4], [0, 2**62]))
    raw = json.dumps(header).encode()
    return f"{name}.{field} = {header[name][field]!r}", struct.pack("<Q", len(raw)) + raw + bytes(length)


def _checkpoint_files(rng: random.Random, prefix: str, config_name: str) -> tuple[str, dict[str, bytes]]:
    """A checkpoint directory's files with a real config: the config, the weights or both broken."""
    config = json.loads((MODELS / f"{config_name}.json").read_text())
    shapes = {"model.language_model.layers.0.mlp.down_proj.weight": [64, 48],
              "model.language_model.embed_tokens.weight": [16, 64]}
    what = rng.randrange(3)
    config_kind, config_bytes = ("intact", json.dumps(config).encode()) if what == 2 else _break_json(rng, config)
    weights_kind, weights = _safetensors(rng, shapes) if what != 0 else ("intact", safetensors_bytes(shapes))
    files = {f"{prefix}/config.json": config_bytes, f"{prefix}/model.safetensors": weights}
    if rng.random() < 0.3:
        index_kind, index = _break_json(rng, {"weight_map": {name: "model.safetensors" for name in shapes}})
        files[f"{prefix}/model.safetensors.index.json"] = index
        weights_kind += f", index {index_kind}"
    return f"config {config_kind}; weights {weights_kind}", files


# commands


def _patch_tree_case(rng: random.Random) -> tuple[str, Callable[[Path, Path], list[str]]]:
    """A copy of the hotfixed modules of a real vLLM release with one thing broken, and a patch action on it."""
    action = rng.choice(["status", "diff", "apply", "verify", "revert", "revert --force", "status --check"])
    breakage = rng.choice(["version", "module bytes", "module truncated", "module empty", "symlink outside",
                           "journal", "metadata", "no package", "root is a file", "root path", "unknown id", "python"])
    seed = rng.randrange(2**32)

    def build(case: Path, outside: Path) -> list[str]:
        root = patch_trees.copy_hotfixed_modules(case / "site-packages")
        target = patch_trees.break_tree(random.Random(seed), breakage, root, case, outside)
        return ["patch", *action.split(), *target]

    return f"patch {action}, {breakage}", build


def _template_case(rng: random.Random) -> tuple[str, Callable[[Path, Path], list[str]]]:
    shipped = TEMPLATE.read_text()
    choice = rng.randrange(4)
    if choice == 0:
        return _path_case(rng, ["template", "check", "{path}"], "template path")
    if choice == 1:
        breakage = rng.choice(JINJA_BREAKAGE)
        at = rng.randrange(len(shipped))
        text, kind = shipped[:at] + breakage + shipped[at:], f"shipped template with {breakage!r} at {at}"
    elif choice == 2:
        at = rng.randrange(len(shipped))
        text, kind = shipped[:at], f"shipped template cut at {at}"
    else:
        text = "".join(rng.choice(JINJA_BREAKAGE) for _ in range(rng.randrange(1, 4)))
        kind = f"template {text!r}"
    argv = ["template", "check", "{case}/t.jinja"] + (["--json"] if rng.random() < 0.3 else [])
    return kind, _writes({"t.jinja": text.encode("utf-8", "surrogatepass")}, argv)


def _path_case(rng: random.Random, argv: list[str], what: str) -> tuple[str, Callable[[Path, Path], list[str]]]:
    path = _path(rng)
    return f"{what} {path!r}", _writes({}, [arg.replace("{path}", path) for arg in argv])


def _launch_case(rng: random.Random) -> tuple[str, Callable[[Path, Path], list[str]]]:
    base = ["launch", "--dry-run", "--hotfixes", "skip", "--vllm-root", "{case}/no-vllm"]
    choice = rng.randrange(3)
    if choice == 0:
        kind, files = _checkpoint_files(rng, rng.choice(["target", "draft"]), rng.choice(
            ["google__gemma-4-31B-it", "google__gemma-4-E2B-it"]))
        files.setdefault("target/config.json", (MODELS / "google__gemma-4-31B-it.json").read_bytes())
        files.setdefault("draft/config.json", (MODELS / "google__gemma-4-E2B-it.json").read_bytes())
        return f"launch checkpoint: {kind}", _writes(files, base + ["--target", "{case}/target", "--draft", "{case}/draft"])
    pair = ["--target", "google/gemma-4-31B-it", "--draft", "google/gemma-4-E2B-it"]
    if choice == 1:
        option = rng.choice(["--num-speculative-tokens", "--max-model-len", "--gpu-memory-utilization",
                             "--max-num-seqs", "--tensor-parallel-size", "--draft-tensor-parallel-size", "--nodes",
                             "--gpus-per-node", "--pipeline-parallel-size", "--data-parallel-size",
                             "--prompt-lookup-min", "--prompt-lookup-max", "--suffix-decoding-max-tree-depth"])
        value = _number(rng)
        return f"launch {option} {value!r}", _writes({}, base + pair + [option, value])
    option = rng.choice(["--chat-template", "--target", "--draft", "--vllm-root", "--python"])
    path = _path(rng)
    argv = base + pair
    if option == "--python":
        argv = base[:-2] + pair  # --python and --vllm-root exclude each other
    if option in argv:
        argv[argv.index(option) + 1] = path
    else:
        argv += [option, path]
    return f"launch {option} {path!r}", _writes({}, argv)


# Ways launch shows a plan without starting vLLM (a case must never exec it).
_LAUNCH_MODES = (["--dry-run"], ["--dry-run", "--json"], ["--print"], ["--docker"], ["--docker", "--image", "i:1"])


def _launch_nodes_case(rng: random.Random) -> tuple[str, Callable[[Path, Path], list[str]]]:
    """Several GPUs or nodes: bad counts, host lists and addresses, printed natively, through Ray or docker."""
    argv = ["launch", "--hotfixes", rng.choice(["skip", "check", "apply"]), "--vllm-root", "{case}/no-vllm",
            "--target", "google/gemma-4-31B-it", "--draft", "google/gemma-4-E2B-it",
            "--profile", rng.choice(["dgx-spark", "h100", "h200"]), *rng.choice(_LAUNCH_MODES)]
    options = {"--nodes": rng.choice(["2", "3", "4", *BAD_NUMBERS]), "--hosts": rng.choice(BAD_HOSTS),
               "--gpus-per-node": rng.choice(["1", "2", "8", *BAD_NUMBERS]),
               "--multi-node": rng.choice(["native", "ray", "mpi", ""]),
               "--master-addr": rng.choice(["10.0.0.1", "", "-x", "a b", "[::1]"]),
               "--tensor-parallel-size": rng.choice(["1", "2", "4", "16", *BAD_NUMBERS]),
               "--chat-template": rng.choice(["{case}/t.jinja", *BAD_PATHS])}
    chosen = rng.sample(sorted(options), rng.randrange(1, 5))
    for option in chosen:
        argv += [option, options[option]]
    return "launch " + " ".join(f"{o} {options[o]!r}" for o in chosen), _writes({"t.jinja": TEMPLATE.read_bytes()}, argv)


def _load_test(rng: random.Random) -> dict:
    """A bench result of a speculative server at three levels with a baseline: what --from-bench reads."""
    from specdraft.bench import BenchResult, LevelResult, SpecDecodeCounters, Summary

    def run(speculative: bool) -> BenchResult:
        levels = tuple(LevelResult(n, 8, 1024, 1.0, 70.0 * n, (105.0 if speculative else 70.0) / n ** 0.3,
                                   Summary(14.0, 14.0, 14.0, 13.0, 15.0), None, None,
                                   SpecDecodeCounters(100, 300, 180, (80, 60, 40)) if speculative else None)
                       for n in (1, 2, 4))
        return BenchResult(f"http://127.0.0.1:{9 if speculative else 10}", "m", 128, 0.0, "built-in", 8, levels,
                           speculative)

    return run(True).with_baseline(run(False)).to_json()


def _launch_from_bench_case(rng: random.Random) -> tuple[str, Callable[[Path, Path], list[str]]]:
    """``--from-bench`` (K per batch size) and ``--acceptance-from`` read a bench result broken one way."""
    kind, document = _break_json(rng, _load_test(rng)) if rng.random() < 0.8 else ("intact", json.dumps(
        _load_test(rng)).encode())
    argv = ["launch", "--dry-run", "--hotfixes", "skip", "--vllm-root", "{case}/no-vllm",
            "--target", "google/gemma-4-31B-it", "--profile", "h100"]
    if rng.random() < 0.6:
        argv += ["--draft", "google/gemma-4-E2B-it", "--from-bench", "{case}/load.json",
                 "--max-num-seqs", rng.choice(["1", "2", "4", "16", *BAD_NUMBERS])]
        return f"launch --from-bench with {kind}", _writes({"load.json": document}, argv)
    spec = rng.choice(["mtp={case}/load.json", "ngram={case}/load.json", "bogus={case}/load.json", "mtp=",
                       "={case}/load.json", "{case}/load.json", "mtp={case}/missing", "mtp={case}/binary"])
    argv += ["--method", rng.choice(["auto", "mtp"]), "--acceptance-from", spec]
    return f"launch --acceptance-from {spec!r}, result {kind}", _writes({"load.json": document}, argv)


def _launch_method_case(rng: random.Random) -> tuple[str, Callable[[Path, Path], list[str]]]:
    """``--method`` with and without a draft, and the draft-less methods' own options."""
    method = rng.choice(METHOD_NAMES)
    draft = rng.choice([[], ["--draft", "google/gemma-4-E2B-it"], ["--draft", "google/gemma-4-31B-it-assistant"]])
    extra = []
    if rng.random() < 0.5:
        option = rng.choice(["--prompt-lookup-min", "--prompt-lookup-max", "--suffix-decoding-max-tree-depth",
                             "--num-speculative-tokens", "--max-num-seqs", "--draft-tensor-parallel-size"])
        extra = [option, rng.choice(["1", "3", "8", *BAD_NUMBERS])]
    argv = ["launch", "--hotfixes", "skip", "--vllm-root", "{case}/no-vllm", *rng.choice(_LAUNCH_MODES),
            "--target", "google/gemma-4-31B-it", *draft, "--method", method, *extra]
    return f"launch --method {method!r} {' '.join(draft + extra)}", _writes({}, argv)


def _bench_result(rng: random.Random, speculative: bool) -> dict:
    from specdraft.bench import BenchResult, LevelResult, SpecDecodeCounters, Summary

    counters = SpecDecodeCounters(100, 400, 243, (85, 68, 54, 36)) if speculative else None
    level = LevelResult(1, 4, 1024, 1.0, 71.3, 71.3, Summary(14.0, 14.0, 14.0, 13.0, 15.0), None, None, counters)
    return BenchResult("http://127.0.0.1:9", "m", 128, 0.0, "built-in", 8, (level,), speculative).to_json()


# Edge numbers for a measured figure of a saved result: zero, tiny, huge, and the non-numbers Python's json reads.
EDGE_FIGURES = (0, 0.0, -0.0, 1e-320, 1e308, -1.0, float("nan"), float("inf"), "NaN", "inf")
FIGURES = ("output_tok_s", "decode_tok_s", "wall_s", "mean_in_flight", "duration_s", "itl_ms.mean", "e2e_s.mean",
           "ttft_s.p50", "spec_decode.num_drafts", "spec_decode.num_accepted_tokens")


def _with_edge_figure(rng: random.Random, document: dict) -> str:
    """Set one figure of the first level of ``document`` to an edge number; returns what was set."""
    level = document["levels"][0]
    name = rng.choice(FIGURES)
    *parents, leaf = name.split(".")
    holder = level
    for key in parents:
        holder = holder.get(key) or {}
        if not holder:
            return f"{name} absent"
    holder[leaf] = rng.choice(EDGE_FIGURES)
    return f"{name} = {holder[leaf]!r}"


def _figures_case(rng: random.Random) -> tuple[str, Callable[[Path, Path], list[str]]]:
    """bench --compare-results or tune on results whose figures are zero, tiny, huge or not numbers."""
    spec, base = _load_test(rng), _load_test(rng)["baseline"]
    kind = _with_edge_figure(rng, rng.choice([spec, base]))
    files = {"spec.json": json.dumps(spec).encode(), "base.json": json.dumps(base).encode()}
    argv = rng.choice([["bench", "--compare-results", "{case}/spec.json", "{case}/base.json"],
                       ["tune", "--from-bench", "{case}/spec.json", "--step-times", "{case}/base.json", "{case}/base.json"],
                       ["tune", "--from-bench", "{case}/spec.json", "--cost-ratio", "0.1", "--target-bench",
                        "{case}/base.json", "--host-ms", "1,1"]])
    return f"{argv[0]} with {kind}", _writes(files, argv + ["--json"])


def _bench_case(rng: random.Random) -> tuple[str, Callable[[Path, Path], list[str]]]:
    choice = rng.randrange(3)
    if choice == 0:  # one of the two results broken: the candidate (speculative) or the baseline
        broken = rng.choice(["a.json", "b.json"])
        kind, document = _break_json(rng, _bench_result(rng, broken == "a.json"))
        files = {"a.json": json.dumps(_bench_result(rng, True)).encode(),
                 "b.json": json.dumps(_bench_result(rng, False)).encode(), broken: document}
        argv = ["bench", "--compare-results", "{case}/a.json", "{case}/b.json"] + (["--json"] if rng.random() < 0.5 else [])
        return f"bench --compare-results, {broken} with {kind}", _writes(files, argv)
    server = ["bench", "--base-url", "http://127.0.0.1:9", "--model", "m"]
    if choice == 1:
        option = rng.choice(["--requests", "--temperature", "--max-tokens", "--concurrency", "--duration", "--warmup",
                             "--duration --requests", "--warmup --duration"])
        values = [word for name in option.split() for word in (name, _number(rng))]
        return f"bench {' '.join(values)!r}", _writes({}, server + values)
    option = rng.choice(["--prompts", "--out", "--compare-results"])
    path = _path(rng)
    argv = server + [option, path] + (["{case}/binary"] if option == "--compare-results" else [])
    return f"bench {option} {path!r}", _writes({}, argv)


def _tune_case(rng: random.Random) -> tuple[str, Callable[[Path, Path], list[str]]]:
    choice = rng.randrange(4)
    if choice == 0:
        kind, document = _break_json(rng, _bench_result(rng, True))
        return f"tune --from-bench with {kind}", _writes(
            {"spec.json": document}, ["tune", "--from-bench", "{case}/spec.json", "--cost-ratio", "0.1"])
    if choice == 1:
        values = [rng.choice(["0.8", "0.5", "", "nan", "-0.1", "1.5", "inf", "x", "1e308", "0"])
                  for _ in range(rng.randrange(1, 6))]
        text = ",".join(values)
        return f"tune --per-position-acceptance {text!r}", _writes(
            {}, ["tune", "--per-position-acceptance", text, "--cost-ratio", "0.1"])
    if choice == 2:
        option = rng.choice(["--cost-ratio", "--overhead-fraction", "--overhead-ms", "--max-k", "--context",
                             "--concurrency", "--target-step-ms"])
        value = _number(rng)
        extra = ["--cost-ratio", "0.1"] if option != "--cost-ratio" else []
        if option == "--overhead-ms":
            extra += ["--target-step-ms", "20"]
        return f"tune {option} {value!r}", _writes(
            {}, ["tune", "--per-position-acceptance", "0.8,0.6", *extra, option, value])
    option = rng.choice(["--from-bench", "--step-times", "--fit-steps", "--target-bench"])
    path = _path(rng)
    argv = {"--from-bench": ["tune", "--from-bench", path, "--cost-ratio", "0.1"],
            "--step-times": ["tune", "--per-position-acceptance", "0.8", "--step-times", path, "{case}/binary"],
            "--fit-steps": ["tune", "--per-position-acceptance", "0.8", "--fit-steps", path],
            "--target-bench": ["tune", "--per-position-acceptance", "0.8", "--cost-ratio", "0.1",
                               "--host-ms", "1,1", "--target-bench", path]}[option]
    return f"tune {option} {path!r}", _writes({}, argv)


def _watch_case(rng: random.Random) -> tuple[str, Callable[[Path, Path], list[str]]]:
    """``watch`` with a bad option, a broken plan or a base URL nothing (or nothing sane) answers at."""
    server = ["watch", "--base-url", "http://127.0.0.1:9", "--timeout", "2"]
    choice = rng.randrange(3)
    if choice == 0:
        option = rng.choice(["--interval", "--timeout", "--min-acceptance", "--count"])
        value = _number(rng)
        return f"watch {option} {value!r}", _writes({}, ["watch", "--base-url", "http://127.0.0.1:9", option, value])
    if choice == 1:
        # a speculative plan, or one that serves the target alone (launch --method none)
        spec = rng.choice([{"model": "d", "num_speculative_tokens": 3}, None])
        plan = {"speculative_config": spec, "no_speculation": None if spec else "--method none: the target alone",
                "target": {"ref": "t"}, "memory": {"profile": "h100"}, "argv": [], "method_ranking": None}
        kind, document = _break_json(rng, plan)
        return f"watch --plan with {kind}", _writes({"plan.json": document},
                                                    server + ["--once", "--plan", "{case}/plan.json"])
    url = rng.choice(["", "x", "ftp://127.0.0.1:9", "http://[::1", "http://127.0.0.1:0", "http://127.0.0.1:9/v1",
                      "http://" + "a" * 300, "http://127.0.0.1:9\n"])
    return f"watch --base-url {url!r}", _writes({}, ["watch", "--base-url", url, "--once", "--timeout", "2"])


def _quantize_case(rng: random.Random) -> tuple[str, Callable[[Path, Path], list[str]]]:
    base = ["quantize", "--dry-run", "--calib", "random-tokens"]
    choice = rng.randrange(3)
    if choice == 0:
        kind, files = _checkpoint_files(rng, "model", rng.choice(["google__gemma-4-E2B-it", "google__gemma-4-E4B-it"]))
        return f"quantize model: {kind}", _writes(files, base + ["--model", "{case}/model", "--out", "{case}/out"])
    model = {"model/config.json": (MODELS / "google__gemma-4-E2B-it.json").read_bytes(),
             "model/model.safetensors": safetensors_bytes({"model.language_model.layers.0.mlp.down_proj.weight": [64, 48]})}
    if choice == 1:
        option = rng.choice(["--calib-samples", "--max-seq-len", "--device", "--scheme", "--exclude"])
        value = _number(rng) if option in ("--calib-samples", "--max-seq-len") else rng.choice(
            ["cuda:99", "tpu", "", "cuda:-1", "[", "**", "cpu"])
        return f"quantize {option} {value!r}", _writes(
            model, base + ["--model", "{case}/model", "--out", "{case}/out", option, value])
    option = rng.choice(["--model", "--out", "--calib"])
    path = _path(rng)
    argv = base + ["--model", "{case}/model", "--out", "{case}/out"]
    argv[argv.index(option) + 1] = path
    return f"quantize {option} {path!r}", _writes(model, argv)


@functools.cache
def _node_report() -> dict:
    """What ``cluster report --json`` prints for the pristine release tree (its hotfixes pending)."""
    from specdraft.patching import locate, status
    from specdraft.patching.cluster import node_report

    install = locate(vllm_root=patch_trees.pristine_tree())
    return node_report(install, status(install))


def _cluster_status_case(rng: random.Random) -> tuple[str, Callable[[Path, Path], list[str]]]:
    """``cluster status``: node specs that do not parse, commands that fail or print a broken report."""
    specs = [rng.choice(NODE_SPECS) for _ in range(rng.randrange(1, 4))]
    argv = ["cluster", "status", *specs]
    for option in rng.sample(["--python", "--vllm-root", "--only", "--json"], rng.randrange(3)):
        argv += [option] if option == "--json" else [option, rng.choice(
            ["n1={case}/missing", "n1=", "nobody=/x", "n1", "kv", "", "n1=/bin/true", "n1={case}/binary"])]
    report = _node_report() if rng.random() < 0.5 else {"hotfixes": _node_report()["hotfixes"][:1]}
    kind, document = _break_json(rng, report) if rng.random() < 0.8 else ("intact", json.dumps(report).encode())
    return f"cluster status {' '.join(specs)!r}, report {kind}", _writes({"report.json": document}, argv)


def _cluster_report_case(rng: random.Random) -> tuple[str, Callable[[Path, Path], list[str]]]:
    """``cluster report`` on a vLLM tree broken one way (the patch commands' trees)."""
    breakage = rng.choice(["version", "module bytes", "module empty", "journal", "metadata", "no package",
                           "root is a file", "root path", "unknown id", "python"])
    seed = rng.randrange(2**32)
    json_flag = ["--json"] if rng.random() < 0.5 else []

    def build(case: Path, outside: Path) -> list[str]:
        root = patch_trees.copy_hotfixed_modules(case / "site-packages")
        return ["cluster", "report", *json_flag, *patch_trees.break_tree(random.Random(seed), breakage, root, case,
                                                                          outside)]

    return f"cluster report, {breakage}", build


_MAKERS: dict[str, list[Callable[[random.Random], tuple[str, Callable[[Path, Path], list[str]]]]]] = {
    "patch": [_patch_tree_case],
    "template": [_template_case],
    "launch": [_launch_case, _launch_nodes_case, _launch_from_bench_case, _launch_method_case],
    "bench": [_bench_case, _figures_case],
    "tune": [_tune_case, _figures_case],
    "watch": [_watch_case],
    "quantize": [_quantize_case],
    "cluster": [_cluster_status_case, _cluster_report_case],
}
