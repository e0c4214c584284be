"""Generated input for two families of the contract: a checkpoint's config.json with one field set to a value of
any JSON type and magnitude, and waits that must end (files that are not regular files, servers that stall or
answer errors, interpreters and node commands that never answer).

``generate(seed, count)`` returns the same cases for the same seed. A case writes its inputs under its own
directory and says which exit codes the contract allows for it (``allowed``): a value no model has is refused
(2) by every command that reads the config, whatever else it would do; a wait ends in the command's own
answer (2 for bad input, 1 for a node that did not answer).
"""

from __future__ import annotations

import json
import math
import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from tests.stalls import hanging_executable

from .cases import MODELS, TEMPLATE, safetensors_bytes

DEEP = "DEEP"
"""Stands for a list nested 5,000 deep (written as text: json.dumps would recurse that deep too)."""
OVERFLOW = "OVERFLOW"
"""Stands for ``1e999``, which Python's json reads as an infinity."""
VALUES = (None, True, False, "", "x", "NaN", -1, 0, 1, 3, 2**31, 2**63, -2**63, 10**30, 0.5, -0.0, 1e-320, 1e308,
          -1e308, math.nan, math.inf, -math.inf, [], [1], [-1], ["x"], {}, {"a": 1}, DEEP, OVERFLOW)

# The fields a part of specdraft reads, by what a model's value is. The expectations are written here, apart
# from specdraft's own rules, so that a rule that lets a bad value through shows up as a breach.
POSITIVE = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
            "global_head_dim", "num_global_key_value_heads", "vocab_size", "max_position_embeddings",
            "sliding_window", "moe_intermediate_size", "num_experts", "top_k_experts")
NON_NEGATIVE = ("num_kv_shared_layers", "hidden_size_per_layer_input", "vocab_size_per_layer_input")
FLAGS = ("enable_moe_block", "attention_k_eq_v", "use_double_wide_mlp", "tie_word_embeddings")
NAMES = ("model_type", "dtype")
TOP_POSITIVE = ("backbone_hidden_size", "target_hidden_size", "draft_vocab_size")
UNREAD = ("initializer_range", "rope_parameters", "final_logit_softcapping", "use_cache")
TEXT_FIELDS = POSITIVE + NON_NEGATIVE + FLAGS + NAMES + ("intermediate_size", "layer_types", "eos_token_id", "bos_token_id",
                                                     "pad_token_id") + UNREAD
TOP_FIELDS = TOP_POSITIVE + ("architectures", "text_config", "quantization_config", "model_type") + UNREAD
SIZE_CAP = 2**27
"""Above every size a model has (the largest bound specdraft allows is 2**27 positions)."""


@dataclass(frozen=True)
class WaitCase:
    """One generated command line, the exit codes the contract allows for it, and what it needs around it."""

    id: str
    command: str
    kind: str
    build: Callable[[Path], list[str]]
    allowed: frozenset[int]
    env: dict[str, str] = field(default_factory=dict)
    server: dict | None = None
    """``tests.stalls.stalled_server`` arguments; ``{server}`` in argv is its URL."""
    pids: str | None = None
    """The file (under the case directory) where a hanging executable writes the pids it started."""


def must_refuse(field_name: str, value: object) -> bool:
    """True when no model has ``value`` for ``field_name``: every command that reads the config must exit 2."""
    if value in (DEEP, OVERFLOW) or (isinstance(value, float) and not math.isfinite(value)):
        return True
    if value is None or field_name in UNREAD:
        return False
    whole = isinstance(value, int) and not isinstance(value, bool)
    if field_name in POSITIVE + TOP_POSITIVE:
        return not (whole and 1 <= value <= SIZE_CAP)
    if field_name in NON_NEGATIVE:
        return not (whole and 0 <= value <= SIZE_CAP)
    if field_name in FLAGS:
        return not isinstance(value, bool)
    if field_name in NAMES:
        return not isinstance(value, str)
    if field_name == "layer_types":
        return not isinstance(value, list) or not all(isinstance(v, str) for v in value)
    if field_name == "architectures":
        return not isinstance(value, list) or not all(isinstance(v, str) for v in value)
    if field_name in ("text_config", "quantization_config"):
        return not isinstance(value, dict)
    return False


def _config_text(config: dict, holder: dict, field_name: str, value: object) -> str:
    holder[field_name] = "PLACEHOLDER" if value in (DEEP, OVERFLOW) else value
    text = json.dumps(config, allow_nan=True)
    literal = {DEEP: "[" * 5000 + "]" * 5000, OVERFLOW: "1e999"}.get(value) if isinstance(value, str) else None
    return text.replace('"PLACEHOLDER"', literal) if literal else text


def _config_case(rng: random.Random, number: int) -> WaitCase:
    command = rng.choice(["launch-target", "launch-draft", "quantize", "tune"])
    repo = {"launch-target": "google__gemma-4-31B-it", "tune": "google__gemma-4-31B-it"}.get(
        command, "google__gemma-4-E2B-it")
    config = json.loads((MODELS / f"{repo}.json").read_text())
    top = rng.random() < 0.25
    field_name = rng.choice(TOP_FIELDS if top else TEXT_FIELDS)
    value = rng.choice(VALUES)
    text = _config_text(config, config if top else config["text_config"], field_name, value)
    where = field_name if top else f"text_config.{field_name}"

    def build(case: Path) -> list[str]:
        model = case / "model"
        model.mkdir()
        (model / "config.json").write_text(text)
        (model / "model.safetensors").write_bytes(
            safetensors_bytes({"model.language_model.layers.0.mlp.down_proj.weight": [64, 48]}))
        if command == "quantize":
            return ["quantize", "--dry-run", "--calib", "random-tokens", "--model", str(model), "--out",
                    str(case / "out")]
        if command == "tune":
            return ["tune", "--per-position-acceptance", "0.8,0.6", "--shapes", str(model / "config.json"),
                    "google/gemma-4-E2B-it"]
        pair = {"launch-target": ["--target", str(model), "--draft", "google/gemma-4-E2B-it"],
                "launch-draft": ["--target", "google/gemma-4-31B-it", "--draft", str(model)]}[command]
        return ["launch", "--dry-run", "--hotfixes", "skip", "--vllm-root", str(case / "no-vllm"), *pair]

    allowed = frozenset({2}) if must_refuse(field_name, value) else frozenset({0, 1, 2})
    shown = value if value not in (DEEP, OVERFLOW) else {"DEEP": "[[[...]]] 5000 deep", "OVERFLOW": "1e999"}[value]
    return WaitCase(f"config-{number:02d}", command.split("-")[0], f"{command}: {where} = {shown!r}", build, allowed)


# Where a FIFO stands in for a file, and the command line that reads it ({fifo} is its path).
FIFO_ROLES = {
    "target config.json": (["launch", "--dry-run", "--hotfixes", "skip", "--target", "{case}/t",
                            "--draft", "google/gemma-4-E2B-it"], "t/config.json"),
    "draft config.json": (["launch", "--dry-run", "--hotfixes", "skip", "--target", "google/gemma-4-31B-it",
                           "--draft", "{case}/t"], "t/config.json"),
    "weights": (["launch", "--dry-run", "--hotfixes", "skip", "--target", "{case}/t", "--draft",
                 "google/gemma-4-E2B-it"], "t/model.safetensors"),
    "quantize config.json": (["quantize", "--dry-run", "--calib", "random-tokens", "--model", "{case}/t", "--out",
                              "{case}/out"], "t/config.json"),
    "tune --shapes config": (["tune", "--per-position-acceptance", "0.8", "--shapes", "{case}/t/config.json",
                              "google/gemma-4-E2B-it"], "t/config.json"),
    "chat template": (["template", "check", "{case}/t.jinja"], "t.jinja"),
    "reference template": (["template", "check", str(TEMPLATE), "--reference", "{case}/t.jinja"], "t.jinja"),
    "launch --chat-template": (["launch", "--dry-run", "--hotfixes", "skip", "--target", "google/gemma-4-31B-it",
                                "--draft", "google/gemma-4-E2B-it", "--chat-template", "{case}/t.jinja"], "t.jinja"),
    "bench --prompts": (["bench", "--base-url", "http://127.0.0.1:9", "--model", "m", "--prompts", "{case}/p.jsonl"],
                        "p.jsonl"),
    "bench result": (["bench", "--compare-results", "{case}/r.json", "{case}/r.json"], "r.json"),
    "tune --from-bench": (["tune", "--from-bench", "{case}/r.json", "--cost-ratio", "0.1"], "r.json"),
}


def _special_file_case(rng: random.Random, number: int) -> WaitCase:
    role = rng.choice(sorted(FIFO_ROLES))
    argv, fifo = FIFO_ROLES[role]
    device = rng.random() < 0.2 and fifo.endswith((".jinja", ".jsonl"))

    def build(case: Path) -> list[str]:
        if fifo.startswith("t/"):
            (case / "t").mkdir()
            (case / "t" / "config.json").write_bytes((MODELS / "google__gemma-4-E2B-it.json").read_bytes())
            (case / fifo).unlink(missing_ok=True)
        if device:
            return [a.replace("{case}/" + fifo, "/dev/zero").replace("{case}", str(case)) for a in argv]
        os.mkfifo(case / fifo)
        return [a.replace("{case}", str(case)) for a in argv]

    what = "/dev/zero" if device else "a FIFO"
    return WaitCase(f"special-{number:02d}", argv[0], f"{role} is {what}", build, frozenset({2}))


def _interpreter_case(rng: random.Random, number: int) -> WaitCase:
    argv = rng.choice([["patch", "status"], ["patch", "apply"], ["patch", "diff"], ["patch", "verify", "--probe"],
                       ["patch", "revert"], ["cluster", "report"], ["launch", "--dry-run", "--target",
                                                                    "google/gemma-4-31B-it", "--draft",
                                                                    "google/gemma-4-E2B-it"]])
    allowed = frozenset({1, 2}) if argv[0] == "launch" else frozenset({2})

    def build(case: Path) -> list[str]:
        python, _ = hanging_executable(case)
        return [*argv, "--python", str(python)]

    return WaitCase(f"python-{number:02d}", argv[0], f"{' '.join(argv[:2])} --python <never answers>", build, allowed,
                    env={"SPECDRAFT_PYTHON_TIMEOUT": "1"}, pids="python.pids")


def _node_case(rng: random.Random, number: int) -> WaitCase:
    extra = rng.choice([[], ["--json"], ["--only", "kv-sharing-uniform-specs"]])

    def build(case: Path) -> list[str]:
        node, _ = hanging_executable(case, "node")
        return ["cluster", "status", f"n1={node}", "n2=/bin/false", "--timeout", "1", *extra]

    return WaitCase(f"node-{number:02d}", "cluster", f"cluster status, a node that never answers {extra}", build,
                    frozenset({1}), pids="node.pids")


_MODELS_REPLY = json.dumps({"data": [{"id": "m"}]}).encode()
SERVERS = {
    "accepts and never answers": {},
    "lists its models, then stalls": {"answers": {"GET /v1/models": _MODELS_REPLY, "GET /metrics": b""}},
    "answers HTTP 500": {"otherwise": b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 5\r\n\r\nerror"},
    "answers HTTP 404 to a request": {"answers": {"GET /v1/models": _MODELS_REPLY, "GET /metrics": b""},
                                      "otherwise": b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\n{}"},
    "answers what is not HTTP": {"otherwise": b"SSH-2.0-OpenSSH_9.6\r\n"},
}


def _server_case(rng: random.Random, number: int) -> WaitCase:
    kind = rng.choice(sorted(SERVERS))
    probe = rng.random() < 0.3
    argv = (["template", "probe", "--base-url", "{server}/v1", "--model", "m", "--timeout", "1"] if probe else
            ["bench", "--base-url", "{server}", "--model", "m", "--timeout", "1", "--requests", "1",
             "--concurrency", rng.choice(["1", "2", "1,4"])])
    # The probe records a request the server refused as that request's error (exit 1); bench stops (exit 2).
    allowed = frozenset({1, 2}) if probe and kind.startswith("answers HTTP") else frozenset({2})
    return WaitCase(f"server-{number:02d}", argv[0], f"{argv[0]} {argv[1]}: a server that {kind}",
                    lambda case: list(argv), allowed, server=SERVERS[kind])


_MAKERS = (_config_case, _config_case, _config_case, _special_file_case, _interpreter_case, _node_case,
           _server_case)


def generate(seed: int, count: int) -> list[WaitCase]:
    rng = random.Random(seed)
    cases = []
    for number in range(count):
        maker = _MAKERS[number % len(_MAKERS)] if number < len(_MAKERS) else rng.choice(_MAKERS)
        cases.append(maker(rng, number))
    return cases
