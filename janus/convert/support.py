"""What the converter cannot turn into a graph, found before trying.

``unsupported_reason`` is a static check on the function's AST; the profiler's
report uses it for its conversion verdict, and Janus records it as the reason a
function runs eagerly.
"""
from __future__ import annotations

import builtins
import types
from dataclasses import dataclass

import gast

from janus.convert import analysis
from janus.convert.libraries import ALLOWED_BUILTINS
from janus.errors import ConversionError
from janus.reporting.codes import Code, Reason, reason as _reason

# The attribute ``janus.do_not_convert`` sets on a function: Janus never converts it.
DO_NOT_CONVERT = "__janus_do_not_convert__"


def marked_do_not_convert(fn: object) -> bool:
    """Was ``fn`` (a function, or a method of one) marked with ``janus.do_not_convert``?"""
    fn = fn.__func__ if isinstance(fn, types.MethodType) else fn
    return getattr(fn, DO_NOT_CONVERT, False) is True


_REASONS = {
    gast.Yield: _reason(Code.GENERATOR, "generator (yield)"),
    gast.YieldFrom: _reason(Code.GENERATOR, "generator (yield from)"),
    gast.Await: _reason(Code.COROUTINE, "coroutine (await)"),
    gast.AsyncFunctionDef: _reason(Code.COROUTINE, "coroutine (async def)"),
    gast.AsyncFor: _reason(Code.COROUTINE, "async for"),
    gast.AsyncWith: _reason(Code.COROUTINE, "async with"),
    gast.ClassDef: _reason(Code.STATEMENT, "class definition inside the function"),
    gast.NamedExpr: _reason(Code.STATEMENT, "assignment expression (:=)"),
    gast.Match: _reason(Code.STATEMENT, "match statement"),
    gast.TryStar: _reason(Code.STATEMENT, "try/except* (exception groups)"),
}


# Constructs of a whole function: no statement of it can run in a graph segment.
_WHOLE_FUNCTION = (gast.Yield, gast.YieldFrom, gast.Await, gast.AsyncFunctionDef, gast.AsyncFor, gast.AsyncWith)


@dataclass(frozen=True)
class Unsupported:
    """A construct the converter refuses: why (a coded reason), the function's line it is at
    (None: the whole function, or not one line), whether it is one statement's, which a
    graph break can leave to Python (``yield`` or ``async`` make the whole function), and
    the gast node type of the construct (None: a property of the whole function, such as
    having no source)."""

    reason: Reason
    line: int | None = None
    statement: bool = False
    node_type: type | None = None


def unsupported_in(node: gast.FunctionDef) -> Reason | None:
    """Why the converter does not handle ``node`` (its first such construct), or None."""
    found = _unsupported_in(node)
    return found.reason if found is not None else None


def _unsupported_in(node: gast.FunctionDef) -> Unsupported | None:
    """The first construct in ``node`` the converter does not handle, or None (a property
    getter's body is checked like any function's)."""
    reason = _declarations(node)
    if reason is not None:
        return Unsupported(reason)
    for child in gast.walk(node):
        kind = type(child)
        if child is not node and kind in _REASONS:
            return Unsupported(_REASONS[kind], getattr(child, "lineno", None), kind not in _WHOLE_FUNCTION, kind)
    return None


def _declarations(node: gast.FunctionDef) -> Reason | None:
    """``global`` / ``nonlocal`` are converted in the function's own body, for names it
    rebinds only by assignment (``X = ...``, ``X += ...``, tuple targets)."""
    own = [n for n in analysis.scope_nodes(node.body) if isinstance(n, (gast.Global, gast.Nonlocal))]
    if any(isinstance(n, (gast.Global, gast.Nonlocal)) and n not in own for n in gast.walk(node)):
        return _reason(Code.GLOBAL_NONLOCAL, "global or nonlocal statement in a nested function")
    declared = {name for n in own for name in n.names}
    targets = _assigned_names(node)
    for n in analysis.scope_nodes(node.body):
        if isinstance(n, gast.Name) and n.id in declared and isinstance(n.ctx, gast.Store) and id(n) not in targets:
            return _reason(Code.GLOBAL_NONLOCAL, f"{n.id}, declared global or nonlocal, is bound other than by an assignment")
        if isinstance(n, (gast.FunctionDef, gast.ClassDef)) and n.name in declared:
            return _reason(Code.GLOBAL_NONLOCAL, f"{n.name}, declared global or nonlocal, is bound by a definition")
    return None


def _assigned_names(node: gast.FunctionDef) -> set[int]:
    """The ids of the Name nodes an assignment (``X = ...``, ``X += ...``, tuple targets) of the
    function's own scope binds."""
    targets: set[int] = set()
    for n in analysis.scope_nodes(node.body):
        for target in n.targets if isinstance(n, gast.Assign) else [n.target] if isinstance(n, gast.AugAssign) else []:
            targets |= {id(t) for t in gast.walk(target) if isinstance(t, gast.Name)}
    return targets


def unsupported_reason(fn: types.FunctionType) -> Reason | None:
    """None if Janus can convert ``fn``; otherwise why not (e.g. "generator (yield)", carrying its code)."""
    found = unsupported(fn)
    return found.reason if found is not None else None


def unsupported(fn: types.FunctionType) -> Unsupported | None:
    """None if Janus can convert ``fn``; otherwise the construct it cannot (:class:`Unsupported`)."""
    from janus.convert.parse import function_ast

    fn = getattr(fn, "python_function", fn)
    fn = getattr(fn, "__func__", fn)
    if not isinstance(fn, types.FunctionType):
        return Unsupported(_reason(Code.NO_SOURCE, f"not a Python function ({type(fn).__name__})"))
    if fn.__code__.co_flags & 0x20:
        return Unsupported(_REASONS[gast.Yield], node_type=gast.Yield)
    if fn.__code__.co_flags & 0x80 or fn.__code__.co_flags & 0x200:
        return Unsupported(_REASONS[gast.AsyncFunctionDef], node_type=gast.AsyncFunctionDef)
    try:
        node, *_ = function_ast(fn)
    except ConversionError as e:
        return Unsupported(e.reason)
    return _unsupported_in(node) or _builtin_calls(node, fn.__globals__)


_BUILTIN_REASON = ", a builtin Janus does not run in a graph"


def _builtin_calls(node: gast.FunctionDef, module_globals: dict) -> Unsupported | None:
    """A call of a builtin Janus never calls in a graph (``open(path)``), by name, where the
    name is not rebound locally or by the module."""
    local = analysis.local_names(node)
    for child in gast.walk(node):
        if not (isinstance(child, gast.Call) and isinstance(child.func, gast.Name)):
            continue
        name = child.func.id
        value = getattr(builtins, name, None)
        if value is None or name in local or name in module_globals or value is print:
            continue
        if value in ALLOWED_BUILTINS or isinstance(value, type) and issubclass(value, BaseException):
            continue
        return Unsupported(_reason(Code.BUILTIN, f"calls {name}(){_BUILTIN_REASON}"), child.lineno, statement=True,
                           node_type=gast.Call)
    return None
