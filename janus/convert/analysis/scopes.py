"""Scopes: which names a block binds, which it reads, and which are cells.

* :func:`assigned` — names a block binds in its own scope (not inside nested
  functions, lambdas or comprehensions, which have scopes of their own).
* :func:`used` — names an expression or block reads (free names of nested scopes
  included, conservatively).
* :func:`cell_vars` — locals a closure of the function reads.
"""
from __future__ import annotations

from typing import Iterable

import gast

# nodes that open a scope of their own
NESTED_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ListComp, gast.SetComp,
                 gast.DictComp, gast.GeneratorExp, gast.ClassDef)


def _walk_scope(nodes: Iterable[gast.AST]):
    """Nodes of ``nodes`` without descending into nested scopes (the scope node itself is yielded)."""
    stack = list(nodes)[::-1]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, NESTED_SCOPES):
            continue
        stack.extend(list(gast.iter_child_nodes(node))[::-1])


def assigned(nodes: Iterable[gast.AST]) -> set[str]:
    """Names bound by ``nodes`` in the enclosing scope."""
    out: set[str] = set()
    for node in _walk_scope(nodes):
        if isinstance(node, gast.Name) and isinstance(node.ctx, (gast.Store, gast.Del)):
            out.add(node.id)
        elif isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (gast.Import, gast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, gast.NamedExpr):
            out.add(node.target.id)
    return out


def used(nodes: Iterable[gast.AST] | gast.AST | None) -> set[str]:
    """Names read anywhere in ``nodes`` (including by nested scopes)."""
    if nodes is None:
        return set()
    if isinstance(nodes, gast.AST):
        nodes = [nodes]
    out: set[str] = set()
    for root in nodes:
        for node in gast.walk(root):
            if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load):
                out.add(node.id)
    return out


def params(args: gast.arguments) -> list[str]:
    names = [a.id for a in args.posonlyargs + args.args]
    if args.vararg:
        names.append(args.vararg.id)
    names += [a.id for a in args.kwonlyargs]
    if args.kwarg:
        names.append(args.kwarg.id)
    return names


_CLOSURE_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.GeneratorExp, gast.ClassDef)


def cell_vars(fn: gast.FunctionDef) -> set[str]:
    """Locals of ``fn`` that a nested function, lambda or generator expression reads.

    Such a variable is a *cell*: the closure reads its current value whenever it runs,
    so a block that rebinds it must rebind the cell (``nonlocal``), not a copy.  Run on
    the user's AST, before passes add lambdas of their own.  Conservative: a name a
    nested scope shadows still counts.
    """
    free: set[str] = set()
    for node in gast.walk(fn):
        if node is not fn and isinstance(node, _CLOSURE_SCOPES):
            free |= used(node)
    return free & local_names(fn)


def local_names(fn: gast.FunctionDef | gast.Lambda) -> set[str]:
    """Names local to a function scope: parameters and everything it assigns, except
    names it declares ``global`` or ``nonlocal``."""
    body = fn.body if isinstance(fn.body, list) else [fn.body]
    return (set(params(fn.args)) | assigned(body)) - set().union(*declared(fn).values())


def declared(fn: gast.FunctionDef | gast.Lambda) -> dict[str, set[str]]:
    """Names ``fn``'s own body declares ``global`` and ``nonlocal``."""
    out: dict[str, set[str]] = {"global": set(), "nonlocal": set()}
    body = fn.body if isinstance(fn.body, list) else [fn.body]
    for node in scope_nodes(body):
        if isinstance(node, gast.Global):
            out["global"].update(node.names)
        elif isinstance(node, gast.Nonlocal):
            out["nonlocal"].update(node.names)
    return out


def scope_nodes(nodes: Iterable[gast.AST]):
    """The nodes of one scope: ``nodes`` and their descendants, not entering nested
    functions, lambdas, classes or comprehensions (whose own node is included)."""
    return _walk_scope(nodes)
