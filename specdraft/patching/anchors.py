"""Reading and editing a libcst tree the way hotfixes anchor on it: nodes by kind and code, never by line.

Statements and expressions are compared by their normalised code (``same_code``), so formatting
and comments in vLLM's source do not move an anchor; what a module binds at its top level is
``module_names``; ``insert_beside`` adds a statement next to an anchor in the block that holds it.
"""

from __future__ import annotations

import ast
from typing import Callable, TypeVar

import libcst as cst

N = TypeVar("N", bound=cst.CSTNode)
B = TypeVar("B", cst.For, cst.ClassDef, cst.FunctionDef, cst.If, cst.While, cst.With)


def find_all(node: cst.CSTNode, kind: type[N], where: Callable[[N], bool] = lambda _: True) -> list[N]:
    """Every node of type ``kind`` in ``node``'s subtree (``node`` included) that satisfies ``where``.

    In source order. A plain walk rather than ``libcst.matchers``, whose import alone costs more
    than parsing a large vLLM module.
    """
    found = []
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, kind) and where(current):
            found.append(current)
        pending.extend(reversed(current.children))
    return found


def code_of(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def normalised(code: str | cst.CSTNode) -> str:
    """A statement or expression's code with formatting and comments removed (its AST dump).

    Anchors compare statements by this, so ``x  =  f( a )`` matches ``x = f(a)``.
    """
    if isinstance(code, cst.CSTNode):
        code = code_of(code)
    return ast.dump(ast.parse(code.strip()))


def same_code(node: cst.CSTNode | list[cst.BaseStatement], code: str) -> bool:
    """Whether ``node`` (or a block's statements) is ``code`` up to formatting and comments."""
    if isinstance(node, list):
        return normalised(cst.Module(body=node).code) == normalised(code)
    return normalised(node) == normalised(code)


def module_names(module: cst.Module) -> set[str]:
    """Names bound at the top of the module by imports and plain assignments (what added code may use)."""
    names = set()
    for statement in module.body:
        for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
            if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
                for alias in small.names:
                    bound = alias.asname.name if alias.asname else alias.name
                    while isinstance(bound, cst.Attribute):  # `import torch.nn` binds `torch`
                        bound = bound.value
                    names.add(bound.value)
            elif isinstance(small, cst.Assign):
                names.update(t.target.value for t in small.targets if isinstance(t.target, cst.Name))
    return names


def insert_beside(owner: B, anchor: cst.BaseStatement, addition: cst.BaseStatement, *, after: bool) -> B:
    """``owner`` (a loop, class, function, ...) with ``addition`` placed right after / before ``anchor`` in its body."""
    body = list(owner.body.body)
    body.insert(body.index(anchor) + (1 if after else 0), addition)
    return owner.with_changes(body=owner.body.with_changes(body=body))
