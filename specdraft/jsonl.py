"""JSON Lines files a user hands to specdraft (bench prompts, calibration samples): one reader, one set of errors."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from specdraft.errors import UserError
from specdraft.paths import refuse_special_file


def read_jsonl(path: str | os.PathLike, *, what: str, hint: str) -> list[tuple[int, Any]]:
    """``(line number, value)`` for every non-blank line of ``path``.

    ``UserError`` (naming ``what``, the file as given and, for a bad line, its number; ``hint`` is the next step)
    for a missing or unreadable file, one that is not UTF-8 text, or a line that is not JSON.
    """
    refuse_special_file(path, what=what, hint=hint)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{what} {path} does not exist", hint=hint) from None
    except UnicodeDecodeError:
        raise UserError(f"{what} {path} is not UTF-8 text", hint=hint) from None
    except OSError as err:
        raise UserError(f"cannot read {what} {path}: {err.strerror or err}", hint=hint) from None
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append((number, json.loads(line)))
        except json.JSONDecodeError as err:
            raise UserError(f"{path}:{number}: not JSON ({err.msg})", hint=hint) from None
        except RecursionError:
            raise UserError(f"{path}:{number}: JSON nested deeper than a reader follows", hint=hint) from None
    return records
