"""Which functions record a ``tf.GradientTape``: the static test the hook takes over by.

A function qualifies when its own code names ``GradientTape`` (``co_names``: the same
test as finding a ``tf.GradientTape`` / ``GradientTape`` reference in its AST, without
parsing; nested functions have their own code objects and are not counted).
"""
from __future__ import annotations

import ast
import types
from typing import Any, Iterator

TAPE_NAME = "GradientTape"


def records_tape(fn: Any) -> bool:
    """True if ``fn``'s own body refers to ``GradientTape`` (static check on its code)."""
    code = getattr(fn, "__code__", None)
    if not isinstance(code, types.CodeType):
        return False
    if code.co_flags & (0x20 | 0x80 | 0x100 | 0x200):  # generator / coroutine / async generator
        return False
    return TAPE_NAME in code.co_names


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def own_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes under ``node``, without descending into nested functions, lambdas and classes."""
    stack = list(ast.iter_child_nodes(node))
    while stack:
        child = stack.pop()
        if isinstance(child, _SCOPES):
            continue
        yield child
        stack.extend(ast.iter_child_nodes(child))


def node_records_tape(node: ast.AST) -> bool:
    """True if the statements under ``node`` refer to ``GradientTape`` outside nested scopes."""
    for child in own_nodes(node):
        if isinstance(child, ast.Name) and child.id == TAPE_NAME:
            return True
        if isinstance(child, ast.Attribute) and child.attr == TAPE_NAME:
            return True
    return False
