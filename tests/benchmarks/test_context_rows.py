"""Every figure of the context table (specdraft/families/data/gemma4.contexts.json) is the raw row's it names
(benchmarks/gpu/raw/real-stack-h200x4-m5/rows.jsonl, benchmarks/gpu/realstack/served_real.py's ``long`` scenarios)."""

import copy
import json
from pathlib import Path

from specdraft.families.gemma4 import GEMMA4

REPO = Path(__file__).resolve().parents[2]
TABLE = json.loads(GEMMA4.contexts_file.read_text())
DRAFTERS = {"assistant31b": "the 31B's MTP assistant", "dflash_31b": "the 31B DFlash speculator",
            "dspark_31b": "the 31B DSpark speculator", "draftE2B": "the E2B draft", "assistant12b": "the 12B's MTP assistant"}
"""benchmarks/gpu/configs folders, in words."""


def _raw_rows(table: dict) -> dict[str, dict]:
    """The served rows of the table's raw file by scenario; a scenario that failed and was served again keeps its
    served row."""
    rows = [json.loads(line) for line in (REPO / table["measured"]["raw"]).read_text().splitlines()]
    return {row["scenario"]: row for row in rows if "error" not in row}


def mismatches(table: dict) -> list[str]:
    """Each figure or label of ``table`` that is not its raw row's."""
    raw, found = _raw_rows(table), []
    for size, entry in table["sizes"].items():
        for row in [entry["alone"], *entry["methods"]]:
            served = raw.get(row["scenario"])
            if served is None:
                found.append(f"{size}: {row['scenario']} has no served raw row")
                continue
            figures = [round(served[f"ctx{length}_decode_tok_s"], 2) for length in table["lengths"]]
            if figures != row["decode_tok_s"]:
                found.append(f"{size}: {row['scenario']} says {row['decode_tok_s']}, raw {figures}")
            for key in ("method", "k", "alpha"):
                if key in row and row[key] != served[key]:
                    found.append(f"{size}: {row['scenario']} {key} {row[key]}, raw {served[key]}")
            if "drafter" in row and row["drafter"] != DRAFTERS[served["draft"]]:
                found.append(f"{size}: {row['scenario']} drafter {row['drafter']!r}, raw {served['draft']}")
    return found


def test_every_figure_is_the_raw_rows():
    assert mismatches(TABLE) == []
    assert {size: len(entry["methods"]) for size, entry in TABLE["sizes"].items()} == {"31b": 6, "12b": 2}


def test_a_figure_or_label_that_differs_from_its_row_is_reported():
    tampered = copy.deepcopy(TABLE)
    tampered["sizes"]["31b"]["methods"][0]["decode_tok_s"][2] += 1
    tampered["sizes"]["12b"]["methods"][0]["k"] = 5
    tampered["sizes"]["12b"]["alone"]["scenario"] = "t12:a12:plan:alone:1"
    tampered["sizes"]["31b"]["methods"][-1]["drafter"] = "the E4B draft"
    found = mismatches(tampered)
    assert len(found) == 4 and "raw [256.48, 242.96, 202.18]" in found[0] and "'the E4B draft', raw" in found[1]
    found = [found[0]] + found[2:]
    assert "no served raw row" in found[1] and "k 5, raw 3" in found[2]
