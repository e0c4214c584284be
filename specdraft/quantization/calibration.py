"""Calibration token sequences for post-training quantization of a Gemma 4 draft.

A draft only has to predict what the target would say next, so the built-in set is shaped like
the traffic it serves: chat turns, code, tool calls, arithmetic, prose. It is small on purpose:
NVFP4/FP8 max calibration only needs activation ranges, and a few dozen sequences give stable ones.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

from specdraft.errors import UserError
from specdraft.jsonl import read_jsonl

# Files that make a directory's tokenizer loadable with transformers' AutoTokenizer.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "tokenizer_config.json")

BUILTIN_SAMPLES: tuple[tuple[str, str], ...] = (
    ("What is speculative decoding, in two sentences?",
     "A small draft model proposes several tokens, and the large target model checks them all in one "
     "forward pass. Accepted tokens are kept, so the output is unchanged while decoding gets faster."),
    ("Write a Python function that returns the n-th Fibonacci number iteratively.",
     "def fibonacci(n: int) -> int:\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a"),
    ("Summarise the causes of the French Revolution for a high-school student.",
     "Debt from wars, a tax system that spared the nobility, bad harvests and expensive bread, and new "
     "Enlightenment ideas about rights all pushed ordinary people to demand change in 1789."),
    ("Translate into French: 'The meeting is moved to Thursday at ten.'",
     "La réunion est déplacée à jeudi à dix heures."),
    ("A train leaves at 14:35 and arrives at 17:10. How long is the journey?",
     "From 14:35 to 17:35 is three hours; arriving at 17:10 is 25 minutes earlier, so the journey takes "
     "2 hours and 35 minutes."),
    ("Explain the difference between a process and a thread.",
     "A process has its own address space and resources; threads live inside a process and share its "
     "memory, so they are cheaper to create but need synchronisation when they touch shared data."),
    ("Give me a JSON object describing a book with title, author and year.",
     '{"title": "The Left Hand of Darkness", "author": "Ursula K. Le Guin", "year": 1969}'),
    ("What's the weather in Paris tomorrow? Use the get_weather tool.",
     '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "day": "tomorrow"}}</tool_call>'),
    ("Write a SQL query that counts orders per customer in 2024, highest first.",
     "SELECT customer_id, COUNT(*) AS orders\nFROM orders\nWHERE order_date >= '2024-01-01' AND "
     "order_date < '2025-01-01'\nGROUP BY customer_id\nORDER BY orders DESC;"),
    ("Is 391 a prime number?",
     "No. 391 = 17 × 23, so it has divisors other than 1 and itself."),
    ("Draft a polite email declining a meeting invitation.",
     "Hi Sam,\n\nThank you for the invitation. Unfortunately I can't attend on Tuesday because of a prior "
     "commitment. Could you share the notes afterwards? Happy to follow up by email.\n\nBest regards,\nAlex"),
    ("Explain what a hash map is and its average lookup cost.",
     "A hash map stores key-value pairs in an array of buckets chosen by hashing the key. With a good hash "
     "function and resizing, lookups, inserts and deletes take constant time on average."),
    ("Fix the bug: `for i in range(len(xs)): if xs[i] = target: return i`",
     "Use `==` for comparison, and put the `if` on its own line:\n\nfor i in range(len(xs)):\n    if xs[i] "
     "== target:\n        return i\nreturn -1"),
    ("Describe photosynthesis in one paragraph.",
     "Plants capture light with chlorophyll and use its energy to split water, releasing oxygen. The "
     "energy is stored in ATP and NADPH, which the Calvin cycle uses to turn carbon dioxide into sugars."),
    ("Write a haiku about the sea at night.",
     "Black water breathing\nthe moon drops a silver rope\nno one climbs tonight"),
    ("Convert 72 degrees Fahrenheit to Celsius and show the steps.",
     "C = (F − 32) × 5/9 = (72 − 32) × 5/9 = 40 × 5/9 ≈ 22.2 °C."),
    ("List three risks of running a database without backups.",
     "1. Hardware failure loses data permanently.\n2. A bad migration or deletion cannot be undone.\n"
     "3. Ransomware leaves no clean copy to restore from."),
    ("Write a bash one-liner that finds the ten largest files under the current directory.",
     "find . -type f -printf '%s %p\\n' | sort -nr | head -n 10"),
    ("What does HTTP status 429 mean and how should a client react?",
     "429 Too Many Requests: the client is rate limited. It should wait — honouring a Retry-After header "
     "when present — and retry with exponential backoff."),
    ("Explain gradient descent to a beginner.",
     "Imagine standing on a hill in fog and wanting to reach the valley: you feel which way the ground "
     "slopes down and take a small step that way, again and again. The slope is the gradient of the loss."),
    ("Rewrite this sentence to be more concise: 'At this point in time we are currently in the process of "
     "reviewing the document.'",
     "We are reviewing the document."),
    ("Write a TypeScript interface for a user with id, email and optional display name.",
     "interface User {\n  id: string;\n  email: string;\n  displayName?: string;\n}"),
    ("How many seconds are there in a week?",
     "7 days × 24 hours × 60 minutes × 60 seconds = 604,800 seconds."),
    ("Compare TCP and UDP briefly.",
     "TCP is connection-oriented and reliable: it orders packets and retransmits lost ones. UDP sends "
     "independent datagrams with no delivery guarantee, trading reliability for lower latency."),
)


def calibration_token_ids(
    spec: str,
    *,
    tokenizer: Any | None,
    vocab_size: int,
    samples: int | None,
    max_seq_len: int,
    seed: int = 0,
) -> list[list[int]]:
    """Token id sequences for calibration.

    ``spec`` is ``builtin`` (the set above, rendered with the model's chat template when it has
    one), ``random-tokens`` (seeded random ids; only for random test models without a tokenizer),
    or a path to a ``.txt`` file (samples separated by blank lines) or a ``.jsonl`` file
    (``{"text": ...}`` or ``{"messages": [...]}`` per line).
    """
    if spec == "random-tokens":
        rng = random.Random(seed)
        count = samples or 8
        length = min(max_seq_len, 64)
        return [[rng.randrange(3, vocab_size) for _ in range(length)] for _ in range(count)]
    if tokenizer is None:
        raise UserError(
            "the model directory has no tokenizer, so calibration text cannot be tokenized",
            hint="copy the base model's tokenizer files into the model directory "
                 "(or pass --calib random-tokens for a random test model)",
        )
    if spec == "builtin":
        conversations = [[{"role": "user", "content": q}, {"role": "assistant", "content": a}] for q, a in BUILTIN_SAMPLES]
        items: list[str | list[dict]] = list(conversations)
    else:
        items = _read_calibration_file(spec)
    if samples:
        items = items[:samples]
    sequences = [_encode(tokenizer, item)[:max_seq_len] for item in items]
    return [ids for ids in sequences if ids]


def _encode(tokenizer: Any, item: str | list[dict]) -> list[int]:
    if isinstance(item, list):
        if getattr(tokenizer, "chat_template", None):
            ids = tokenizer.apply_chat_template(item, tokenize=True)
            return list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)
        item = "\n\n".join(message["content"] for message in item)
    return list(tokenizer(item)["input_ids"])


def check_calibration_source(spec: str, model_dir: Path) -> None:
    """Refuse (``UserError``) a ``--calib`` that cannot give samples, before the model is loaded."""
    if spec == "random-tokens":
        return
    if spec == "builtin":
        if not any((Path(model_dir) / name).is_file() for name in TOKENIZER_FILES):
            raise UserError(
                f"{model_dir} has no tokenizer, so calibration text cannot be tokenized",
                hint="copy the base model's tokenizer files into the model directory "
                     "(or pass --calib random-tokens for a random test model)",
            )
        return
    _read_calibration_file(spec)


def _read_calibration_file(path: str | os.PathLike) -> list[str | list[dict]]:
    """The samples of calibration file ``path``; its messages name it as given."""
    hint = "pass --calib builtin, or a .txt / .jsonl file"
    file = Path(path)
    if not file.is_file():
        raise UserError(f"calibration file {path} {'is not a file' if file.exists() else 'does not exist'}", hint=hint)
    if file.suffix == ".jsonl":
        items: list[str | list[dict]] = []
        for number, record in read_jsonl(path, what="calibration file",
                                         hint='write one {"text": ...} or {"messages": [...]} per line'):
            if isinstance(record, dict) and isinstance(record.get("messages"), list):
                items.append(record["messages"])
            elif isinstance(record, dict) and isinstance(record.get("text"), str):
                items.append(record["text"])
            else:
                raise UserError(f"{path}:{number}: expected {{\"text\": ...}} or {{\"messages\": [...]}}")
    else:
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise UserError(f"calibration file {path} is not readable UTF-8 text ({err})", hint=hint) from None
        items = [chunk.strip() for chunk in text.split("\n\n") if chunk.strip()]
    if not items:
        raise UserError(f"calibration file {path} has no samples")
    return items
