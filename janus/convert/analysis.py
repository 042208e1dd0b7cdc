"""Static analyses of function ASTs: scopes and liveness.

They only read the tree (annotating nodes with ``jn_*`` attributes); the passes
that use them transform.

* :func:`assigned` — names a block binds in its own scope (not inside nested
  functions, lambdas or comprehensions, which have scopes of their own).
* :func:`used` — names an expression or block reads (free names of nested scopes
  included, conservatively).
* :func:`annotate_liveness` — for every ``if``, ``while`` and ``for`` the set of
  variables live after it and live on entry to each of its blocks; the control-flow
  pass turns these into the inputs and outputs of the functions it generates
  (loop-carried variables are the modified ones that are live at the loop head).
"""
from __future__ import annotations

from typing import Iterable

import gast

_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ListComp, gast.SetComp,
           gast.DictComp, gast.GeneratorExp, gast.ClassDef)


def _walk_scope(nodes: Iterable[gast.AST]):
    """Nodes of ``nodes`` without descending into nested scopes (the scope node itself is yielded)."""
    stack = list(nodes)[::-1]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _SCOPES):
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
    """Names local to a function scope: parameters and everything it assigns."""
    body = fn.body if isinstance(fn.body, list) else [fn.body]
    return set(params(fn.args)) | assigned(body)


# -- liveness -----------------------------------------------------------------------
def annotate_liveness(fn: gast.FunctionDef) -> None:
    """Annotate compound statements of ``fn`` (not of nested defs) with liveness sets.

    ``If``: ``jn_live_out``, ``jn_live_body``, ``jn_live_orelse`` (live on entry to each block).
    ``While``/``For``: ``jn_live_out``, ``jn_live_body`` (live on entry to the body),
    ``jn_live_head`` (live at the loop head, i.e. before the test / the next item).
    """
    _block(fn.body, set())


def _block(stmts: list[gast.stmt], live: set[str]) -> set[str]:
    for stmt in reversed(stmts):
        live = _stmt(stmt, live)
    return live


def _stmt(node: gast.stmt, live: set[str]) -> set[str]:
    if isinstance(node, gast.Return):
        return used(node.value)
    if isinstance(node, gast.Raise):
        return used(node.exc) | used(node.cause)
    if isinstance(node, gast.If):
        node.jn_live_out = set(live)
        node.jn_live_body = _block(node.body, set(live))
        node.jn_live_orelse = _block(node.orelse, set(live))
        return used(node.test) | node.jn_live_body | node.jn_live_orelse
    if isinstance(node, (gast.While, gast.For)):
        node.jn_live_out = set(live)
        after_loop = _block(node.orelse, set(live))
        extra = getattr(node, "jn_extra_test", None)
        head = set(after_loop) | used(extra)
        if isinstance(node, gast.While):
            head |= used(node.test)
        target = assigned([node.target]) if isinstance(node, gast.For) else set()
        while True:
            body_in = _block(node.body, set(head))
            new_head = head | (body_in - target)
            if new_head == head:
                break
            head = new_head
        node.jn_live_body = body_in
        node.jn_live_head = head
        return head | (used(node.iter) if isinstance(node, gast.For) else set())
    if isinstance(node, gast.With):
        inner = _block(node.body, set(live))
        defs = assigned([i.optional_vars for i in node.items if i.optional_vars is not None])
        return (inner - defs) | used([i.context_expr for i in node.items])
    if isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
        return (live - {node.name}) | used(node)
    if isinstance(node, gast.AugAssign):
        return live | used(node.target) | used(node.value)
    defs = assigned([node])
    return (live - defs) | used(node)
