"""Check each ``with`` item's context manager at trace time: ``_jn.context_manager(expr)``.

A ``with`` statement stays a ``with`` in converted code, entered and exited in Python
while tracing.  Only TensorFlow's own context managers (a tape, a name scope, a device,
control dependencies) act on the graph that way, as eager's act on each call; the
runtime check (``janus.lowering.contexts``) lets them through and fails the conversion
for any other (a ``threading.Lock`` would be held only while tracing)::

    with self.lock:          ==>    with _jn.context_manager(_jn.ld_attr(self, 'lock')):
        ...                             ...
"""
from __future__ import annotations

import gast

from janus.convert import templates as T


class CheckContextManagers(gast.NodeTransformer):
    def visit_With(self, node: gast.With):
        self.generic_visit(node)
        for item in node.items:
            item.context_expr = gast.Call(func=T.jn("context_manager"), args=[item.context_expr], keywords=[])
            for n in gast.walk(item.context_expr):  # a failing check points at the with line
                if getattr(n, "lineno", None) is None and "lineno" in n._attributes:
                    n.lineno, n.col_offset, n.end_lineno, n.end_col_offset = \
                        node.lineno, node.col_offset, node.lineno, node.col_offset
        return node
