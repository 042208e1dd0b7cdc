"""Liveness: for every ``if``, ``while`` and ``for``, the variables live after it and on
entry to each of its blocks (annotations ``LIVE_*``, see :mod:`janus.convert.anno`).

The control-flow pass turns these into the inputs and outputs of the functions it
generates (loop-carried variables are the modified ones that are live at the loop head).
"""
from __future__ import annotations

import gast

from janus.convert.analysis.scopes import assigned, used
from janus.convert.anno import Anno, getanno, setanno


def annotate_liveness(fn: gast.FunctionDef) -> None:
    """Annotate compound statements of ``fn`` (not of nested defs) with liveness sets.

    ``If``: ``LIVE_OUT``, ``LIVE_BODY``, ``LIVE_ORELSE`` (live on entry to each block).
    ``While``/``For``: ``LIVE_OUT``, ``LIVE_BODY`` (live on entry to the body),
    ``LIVE_HEAD`` (live at the loop head, i.e. before the test / the next item).
    """
    _block(fn.body, set())


def _block(stmts: list[gast.stmt], live: set[str], raising: set[str] = frozenset()) -> set[str]:
    """Live before ``stmts``; ``raising``: live wherever an exception may leave them (a handler's
    or ``finally``'s reads), so live after every statement."""
    for stmt in reversed(stmts):
        live = _stmt(stmt, live | raising)
    return live


def _try(node: gast.Try, live: set[str]) -> set[str]:
    """``try``: an exception anywhere in the body may go to a handler or the ``finally`` block."""
    final = _block(node.finalbody, set(live))
    handlers: set[str] = set()
    for handler in node.handlers:
        names = assigned([handler.name]) if handler.name is not None else set()
        handlers |= (_block(handler.body, set(final), final) - names) | used(handler.type)
    orelse = _block(node.orelse, set(final), final)
    return _block(node.body, orelse | handlers, handlers | final)


def _stmt(node: gast.stmt, live: set[str]) -> set[str]:
    if isinstance(node, gast.Return):
        return used(node.value)
    if isinstance(node, gast.Raise):
        return used(node.exc) | used(node.cause)
    if isinstance(node, gast.If):
        body, orelse = _block(node.body, set(live)), _block(node.orelse, set(live))
        setanno(node, Anno.LIVE_OUT, set(live))
        setanno(node, Anno.LIVE_BODY, body)
        setanno(node, Anno.LIVE_ORELSE, orelse)
        return used(node.test) | body | orelse
    if isinstance(node, (gast.While, gast.For)):
        setanno(node, Anno.LIVE_OUT, set(live))
        after_loop = _block(node.orelse, set(live))
        extra = getanno(node, Anno.EXTRA_TEST)
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
        setanno(node, Anno.LIVE_BODY, body_in)
        setanno(node, Anno.LIVE_HEAD, head)
        return head | (used(node.iter) if isinstance(node, gast.For) else set())
    if isinstance(node, gast.With):
        inner = _block(node.body, set(live))
        defs = assigned([i.optional_vars for i in node.items if i.optional_vars is not None])
        return (inner - defs) | used([i.context_expr for i in node.items])
    if isinstance(node, gast.Try):
        return _try(node, live)
    if isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
        return (live - {node.name}) | used(node)
    if isinstance(node, gast.AugAssign):  # reads its target too (a Name there is a store)
        read = {node.target.id} if isinstance(node.target, gast.Name) else used(node.target)
        return live | read | used(node.value)
    defs = assigned([node])
    return (live - defs) | used(node)
