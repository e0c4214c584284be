"""Is a checkpoint reference usable at all: an existing local directory, a path, or a Hugging Face repo id?

Anything else (``a;rm -rf /``, ``x --port 1``, quotes, newlines) would reach huggingface_hub's validator deep
inside the plan and end as a traceback, so it is turned away first with one line that quotes it.
"""

from __future__ import annotations

from pathlib import Path

REPO_ID_RULE = ("a Hugging Face repo id is NAME or NAMESPACE/NAME of letters, digits, '-', '_' and '.', "
                "at most 96 characters, neither starting nor ending with '-' or '.'")


def looks_like_path(ref: str) -> bool:
    """A reference written as a path (absolute, relative with a dot, home, or with more than one '/')."""
    return ref.startswith(("/", ".", "~")) or ref.count("/") > 1


def reference_problem(ref: str) -> str | None:
    """Why ``ref`` is neither a directory nor a path nor a Hub repo id, in one line; None when it is usable."""
    if not ref.strip():
        return "an empty checkpoint reference"
    if looks_like_path(ref) or Path(ref).expanduser().is_dir():
        return None
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(ref)
    except HFValidationError:
        return f"{ref!r} is not a local directory, and {REPO_ID_RULE}"
    return None
