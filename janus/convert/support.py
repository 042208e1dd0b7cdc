"""What the converter cannot turn into a graph, found before trying.

``unsupported_reason`` is a static check on the function's AST; the profiler's
report uses it for its conversion verdict, and Janus records it as the reason a
function runs eagerly.
"""
from __future__ import annotations

import types

import gast

from janus.errors import ConversionError

_REASONS = {
    gast.Yield: "generator (yield)",
    gast.YieldFrom: "generator (yield from)",
    gast.Await: "coroutine (await)",
    gast.AsyncFunctionDef: "coroutine (async def)",
    gast.AsyncFor: "async for",
    gast.AsyncWith: "async with",
    gast.Global: "global statement (writes a module global)",
    gast.Nonlocal: "nonlocal statement (writes a closure variable)",
    gast.ClassDef: "class definition inside the function",
    gast.Delete: "del statement",
    gast.Import: "import inside the function",
    gast.ImportFrom: "import inside the function",
    gast.NamedExpr: "assignment expression (:=)",
    gast.Match: "match statement",
}


def unsupported_in(node: gast.FunctionDef) -> str | None:
    """The first construct in ``node`` the converter does not handle, or None (a property
    getter's body is checked like any function's)."""
    for child in gast.walk(node):
        if child is not node and type(child) in _REASONS:
            return _REASONS[type(child)]
        if type(child) is gast.AsyncFunctionDef:
            return _REASONS[gast.AsyncFunctionDef]
        if isinstance(child, gast.Try):
            if child.handlers:
                return "try/except catches"
            return "try/finally"
    return None


def unsupported_reason(fn: types.FunctionType) -> str | None:
    """None if Janus can convert ``fn``; otherwise why not (e.g. "generator (yield)")."""
    from janus.convert.parse import function_ast

    fn = getattr(fn, "python_function", fn)
    fn = getattr(fn, "__func__", fn)
    if not isinstance(fn, types.FunctionType):
        return f"not a Python function ({type(fn).__name__})"
    if fn.__code__.co_flags & 0x20:
        return "generator (yield)"
    if fn.__code__.co_flags & 0x80 or fn.__code__.co_flags & 0x200:
        return "coroutine (async def)"
    try:
        node, *_ = function_ast(fn)
    except ConversionError as e:
        return str(e)
    return unsupported_in(node)
