"""Gemma 4's own config keys, its sizes and its measured shapes are read in ``specdraft/families/`` only: every
other part asks the family (``is_moe``, ``kv_shared_layers``, ``draft_backbone_width``, ``size_key``, ``costs``).
The literals the rule looks for are taken from the family itself, so a key or a size it gains is guarded too."""

from __future__ import annotations

import ast
from pathlib import Path

from specdraft.families import GEMMA4

PACKAGE = Path(__file__).resolve().parents[2] / "specdraft"
HOME = PACKAGE / "families"
ALLOWED = {
    # builds Gemma 4 checkpoints for the tests: the keys are the config.json it writes, not a reading of one
    PACKAGE / "testbed" / "tiny.py",
}
KEYS = frozenset({*GEMMA4.stack_fields, *GEMMA4.top_fields})
SIZES = frozenset({*GEMMA4.base_repos, *GEMMA4.costs.sizes})
SHAPES = frozenset(tuple(size.shape.values()) for size in GEMMA4.costs.sizes.values())


EXEMPT = "# family name kept:"
"""A line ending with this, and the reason, names a key on purpose without reading it (an output field)."""


def family_literals(source: str) -> list[str]:
    """The family's keys, sizes (as whole strings) and shapes (as tuples of whole numbers) written in ``source``,
    except on a line marked ``EXEMPT``."""
    found = []
    exempt = {number for number, line in enumerate(source.splitlines(), start=1) if EXEMPT in line}
    for node in ast.walk(ast.parse(source)):
        if getattr(node, "lineno", None) in exempt:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in KEYS | SIZES:
            found.append(f"line {node.lineno}: {node.value!r}")
        elif isinstance(node, ast.Tuple) and all(isinstance(e, ast.Constant) and type(e.value) is int
                                                  for e in node.elts):
            if tuple(e.value for e in node.elts) in SHAPES:
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_the_rule_turns_away_a_key_a_size_and_a_shape_read_outside_the_family():
    source = ('moe = text.get("enable_moe_block")\n'
              'width = config["backbone_hidden_size"]\n'
              '_SHAPES = {(5376, 60): "31b"}\n'
              'shape = shape or "26b"\n')
    assert family_literals(source) == ["line 1: 'enable_moe_block'", "line 2: 'backbone_hidden_size'",
                                       "line 3: (5376, 60)", "line 3: '31b'", "line 4: '26b'"]


def test_the_rule_lets_a_question_to_the_family_and_prose_pass():
    source = ('moe = rules_for(config).is_moe(config)\n'
              'size = family.size_key(config)\n'
              'reason = "the 31B\'s MTP assistant at K = 8 (enable_moe_block is not set)"\n'
              'pair = (4, 60)\n')
    assert family_literals(source) == []
    assert family_literals(f'summary = {{"enable_moe_block": moe}}  {EXEMPT} the --json field\n') == []


def test_no_module_outside_the_family_reads_its_keys_sizes_or_shapes():
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if HOME in path.parents or path in ALLOWED:
            continue
        found = family_literals(path.read_text(encoding="utf-8"))
        if found:
            offenders[str(path.relative_to(PACKAGE.parent))] = found
    assert offenders == {}, "ask the family (specdraft/families) instead: " + repr(offenders)
