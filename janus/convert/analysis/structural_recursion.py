"""Structural recursion: does a function call itself on parts of one of its parameters?

``def encode(self, node): ... self.encode(node.left) ...`` recurses over the structure
passed as ``node``: each recursive call's argument is reached from ``node`` through
attributes, items, unpacking (``a, b = node.kids``) or a loop over a part of it
(``for child in node.children``).  Such a function can be run level by level over the
whole structure (``janus.lowering.trees.recursion``); this analysis names the parameter the
recursion walks.  It reads the tree only.
"""
from __future__ import annotations

import functools
import types
from dataclasses import dataclass

import gast

from janus.convert import parse
from janus.errors import ConversionError


@dataclass(frozen=True)
class StructuralRecursion:
    """``function`` calls itself with parameter ``param`` (at ``index``) replaced by a part of it."""

    function: str
    param: str
    index: int
    calls: int  # recursive call sites in the source


def _root_name(expr: gast.AST) -> str | None:
    """``node`` for ``node``, ``node.left``, ``node.kids[0]``, ``node.kids[0].x``."""
    while isinstance(expr, (gast.Attribute, gast.Subscript)):
        expr = expr.value
    return expr.id if isinstance(expr, gast.Name) else None


def _targets(target: gast.AST) -> list[str]:
    if isinstance(target, gast.Name):
        return [target.id]
    if isinstance(target, (gast.Tuple, gast.List)):
        return [n for e in target.elts for n in _targets(e)]
    if isinstance(target, gast.Starred):
        return _targets(target.value)
    return []


def _derived(fn: gast.FunctionDef, params: list[str]) -> dict[str, str]:
    """Local names bound to a part of a parameter, mapped to that parameter (to a fixpoint)."""
    roots = {p: p for p in params}
    bindings: list[tuple[list[str], gast.AST]] = []
    for node in gast.walk(fn):
        if isinstance(node, gast.Assign):
            for t in node.targets:
                bindings.append((_targets(t), node.value))
        elif isinstance(node, (gast.For, gast.comprehension)):
            bindings.append((_targets(node.target), node.iter))
    changed = True
    while changed:
        changed = False
        for names, value in bindings:
            root = roots.get(_root_name(value) or "")
            for name in names:
                if root is not None and name not in roots:
                    roots[name] = root
                    changed = True
    return roots


def _is_self_call(call: gast.Call, name: str, first: str | None) -> bool:
    f = call.func
    if isinstance(f, gast.Name):
        return f.id == name
    return (isinstance(f, gast.Attribute) and f.attr == name and isinstance(f.value, gast.Name)
            and f.value.id == first)


def analyze(fn_node: gast.FunctionDef) -> StructuralRecursion | None:
    """The structural recursion of ``fn_node`` (None if it does not call itself on a part
    of a parameter).  It calls itself by name, or as ``first.name(...)`` where ``first``
    is its first parameter (a method through ``self``)."""
    params = [a.id for a in fn_node.args.posonlyargs + fn_node.args.args]
    roots = _derived(fn_node, params)
    found: dict[str, int] = {}
    for node in gast.walk(fn_node):
        if not isinstance(node, gast.Call) or not _is_self_call(node, fn_node.name, params[0] if params else None):
            continue
        for arg in node.args:
            root = roots.get(_root_name(arg) or "")
            if root is None or isinstance(arg, gast.Name) and arg.id == root:
                continue  # not a part of a parameter (or the parameter itself: not smaller)
            found[root] = found.get(root, 0) + 1
    if len(found) != 1:
        return None
    (param, calls), = found.items()
    return StructuralRecursion(fn_node.name, param, params.index(param), calls)


@functools.lru_cache(maxsize=1024)
def _of_code(fn: types.FunctionType) -> StructuralRecursion | None:
    try:
        node, *_ = parse.function_ast(fn)
    except ConversionError:
        return None
    return analyze(node)


def structural_recursion(fn: types.FunctionType) -> StructuralRecursion | None:
    """:func:`analyze` on ``fn``'s source (cached per function)."""
    if not isinstance(fn, types.FunctionType) or not _names(fn.__code__, fn.__name__):
        return None  # a call to itself names it: no need to parse the sources of other functions
    return _of_code(fn)


def _names(code: types.CodeType, name: str) -> bool:
    """Whether ``code`` (or a comprehension or nested function in it) refers to ``name``."""
    return name in code.co_names + code.co_freevars or any(
        isinstance(c, types.CodeType) and _names(c, name) for c in code.co_consts)
