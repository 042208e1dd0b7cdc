"""Guard ``except`` handlers: Janus's own errors, and errors whose eager form is unknown, pass through.

A ``try`` statement stays a ``try`` in converted code: it runs in Python while
tracing, so a handler catches what the traced code raised in Python (a ``raise`` of the
user's, a ``KeyError``, a ``ValueError`` from ``int("x")``), exactly as eager does,
under the trace's guards.  Each handler first calls ``_jn.caught(e)``, which re-raises
what the handler must not swallow: Janus's conversion errors, and exceptions raised
inside library code while *building* the graph (TensorFlow raises other errors at
graph construction than eager raises at run time), which make the conversion fail::

    except ValueError:          ==>    except ValueError as _jn_exc_1:
        recover()                          _jn.caught(_jn_exc_1)
                                           recover()
"""
from __future__ import annotations

import gast

from janus.convert import templates as T


class GuardHandlers(gast.NodeTransformer):
    def __init__(self):
        self.counter = 0

    def visit_ExceptHandler(self, node: gast.ExceptHandler):
        self.generic_visit(node)
        if node.name is None:
            self.counter += 1
            node.name = gast.Name(id=f"_jn_exc_{self.counter}", ctx=gast.Store(), annotation=None, type_comment=None)
        node.body = [T.located(s, node) for s in T.stmts(f"_jn.caught({node.name.id})")] + node.body
        return node
