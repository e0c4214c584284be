"""The prompt set a bench run sends: a small built-in set, or a JSONL file of the user's own."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from specdraft.errors import UserError
from specdraft.jsonl import read_jsonl


@dataclass(frozen=True)
class Prompt:
    """One request: ``text`` (a string, or token ids for a server without a tokenizer) goes to
    /v1/completions, ``messages`` to /v1/chat/completions."""

    text: str | tuple[int, ...] | None = None
    messages: tuple[dict, ...] | None = None


# Mixed on purpose: code and structured text (drafts do well), open prose (drafts do worse), repetition
# (n-gram speculation does well). Acceptance, and so the speedup, depends on the workload.
BUILTIN_PROMPTS: tuple[Prompt, ...] = tuple(
    Prompt(text=t)
    for t in (
        "Write a Python function that parses an ISO 8601 date string and returns a datetime object. "
        "Include a docstring and three doctest examples.\n\n```python\n",
        "Summarise the main causes of the French Revolution in five bullet points.\n\n-",
        "List the first twenty elements of the periodic table with their symbols, one per line, "
        "in the format 'number. name (symbol)'.\n\n1. Hydrogen (H)\n2.",
        "Translate into French: 'The weather is lovely today, so we will walk to the market and buy "
        "fresh bread, cheese and some fruit for the picnic.'\n\nFrench:",
        "Explain to a new engineer, step by step, how a hash map handles collisions.\n\nStep 1:",
        "Write a short story that begins: 'The lighthouse keeper had not seen a ship in eleven years.'\n\n",
        "Convert this JSON to YAML:\n{\"name\": \"specdraft\", \"version\": \"0.1.0\", \"dependencies\": "
        "[\"libcst\", \"pydantic\", \"httpx\"], \"scripts\": {\"specdraft\": \"specdraft.cli:main\"}}\n\nYAML:\n",
        "Write a SQL query that returns, for each customer, their total order value in 2025, "
        "highest first, from tables customers(id, name) and orders(id, customer_id, placed_at, total).\n\n",
    )
)


def load_prompts(path: Path) -> tuple[Prompt, ...]:
    """Prompts from a JSONL file: one object per line with ``"prompt": str``, ``"prompt": [token ids]``
    (for a server started with ``--skip-tokenizer-init``, e.g. dummy weights) or ``"messages": [...]``."""
    prompts = []
    for number, item in read_jsonl(path, what="prompt file",
                                   hint='write one JSON object per line: {"prompt": "..."} or {"messages": [...]}'):
        prompt = item.get("prompt") if isinstance(item, dict) else None
        if isinstance(prompt, str):
            prompts.append(Prompt(text=prompt))
        elif isinstance(prompt, list) and prompt and all(isinstance(t, int) and t >= 0 for t in prompt):
            prompts.append(Prompt(text=tuple(prompt)))
        elif isinstance(item, dict) and isinstance(item.get("messages"), list) and item["messages"]:
            prompts.append(Prompt(messages=tuple(item["messages"])))
        else:
            raise UserError(f'{path}:{number}: expected {{"prompt": "..."}}, {{"prompt": [token ids]}} '
                            'or {"messages": [...]}')
    if not prompts:
        raise UserError(f"prompt file {path} holds no prompts")
    return tuple(prompts)
