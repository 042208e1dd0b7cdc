"""A ``finally`` that returns, breaks or continues discards the exception in flight.

Python runs a ``finally`` block in full however its ``try`` ended, and a ``return``,
``break`` or ``continue`` of the ``finally`` itself wins: it replaces a pending return,
break or continue, and it swallows a pending exception.  Later passes lower those
exits to flags (``returns``, ``break_continue``), so the generated ``finally`` no
longer leaves by a real statement and Python would re-raise the exception after it.
Such a ``try`` therefore catches the exception itself and re-raises it only when the
``finally`` block completed (its statements after an exit are guarded by the flags)::

    try:                          _jn_fexc_1 = None
        BODY                      try:
    except E:                         try:
        HANDLER                           BODY
    finally:              ==>         except E:
        FINAL                             HANDLER
                                  except BaseException as _jn_fexc_tmp_1:
                                      _jn_fexc_1 = _jn_fexc_tmp_1
                                  finally:
                                      FINAL
                                      if _jn_fexc_1 is not None:
                                          raise _jn_fexc_1

A ``finally`` without its own exit keeps Python's ``finally`` as it is.
"""
from __future__ import annotations

import gast

from janus.convert import templates as T

_DEFS = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)


def loop_exit_in(stmts: list) -> bool:
    """A ``break`` or ``continue`` in ``stmts`` that leaves the loop around them (not one of a loop inside)."""
    stack = list(stmts)
    while stack:
        node = stack.pop()
        if isinstance(node, (gast.Break, gast.Continue)):
            return True
        if isinstance(node, _DEFS):
            continue
        if isinstance(node, (gast.For, gast.While)):
            stack.extend(node.orelse)  # a loop's else belongs to the enclosing loop
            continue
        stack.extend(gast.iter_child_nodes(node))
    return False


def _returns_in(stmts) -> bool:
    stack = list(stmts)
    while stack:
        node = stack.pop()
        if isinstance(node, gast.Return):
            return True
        if not isinstance(node, _DEFS):
            stack.extend(gast.iter_child_nodes(node))
    return False


def exits_own_block(stmts: list) -> bool:
    """``stmts`` (a ``finally`` block) can leave by a ``return``, ``break`` or ``continue`` of its own."""
    return _returns_in(stmts) or loop_exit_in(stmts)


class CatchForFinally(gast.NodeTransformer):
    def __init__(self):
        self.counter = 0

    def visit_Lambda(self, node):
        return node

    def visit_Try(self, node: gast.Try):
        self.generic_visit(node)  # inner try statements first
        if not node.finalbody or not exits_own_block(node.finalbody):
            return node
        self.counter += 1
        pending, caught = f"_jn_fexc_{self.counter}", f"_jn_fexc_tmp_{self.counter}"
        inner = [gast.Try(body=node.body, handlers=node.handlers, orelse=node.orelse, finalbody=[])] \
            if node.handlers else node.body
        handler = gast.ExceptHandler(type=T.name("BaseException"), name=T.name(caught, store=True),
                                     body=T.stmts(f"{pending} = {caught}"))
        reraise = T.stmts(f"if {pending} is not None:\n    raise {pending}")
        wrapped = gast.Try(body=inner, handlers=[handler], orelse=[], finalbody=node.finalbody + reraise)
        return [T.located(s, node) for s in T.stmts(f"{pending} = None")] + [T.located(wrapped, node)]
