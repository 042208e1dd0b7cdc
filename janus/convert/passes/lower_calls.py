"""Route every call through ``_jn.call``, which inlines user functions (converted)
and allow-lists library calls (``janus.lowering.calls``).

``obj.attr.append(v)`` and the other mutators of a container held in an attribute
become ``_jn.mutate_attr(obj, 'attr', 'append', v)``: the container is changed
(deferred, when it is Python state) without being read, so a training step that
appends to ``self.history`` does not depend on the history's length.
"""
from __future__ import annotations

import gast

from janus.convert import templates as T

DEFERRABLE_MUTATORS = {"append", "extend", "insert", "add", "update", "clear", "discard"}


class LowerCalls(gast.NodeTransformer):
    def visit_Call(self, node: gast.Call):
        self.generic_visit(node)
        if T.is_jn_call(node):
            return node
        func = node.func
        if (isinstance(func, gast.Attribute) and func.attr in DEFERRABLE_MUTATORS and isinstance(func.value, gast.Attribute)
                and not node.keywords and not any(isinstance(a, gast.Starred) for a in node.args)):
            holder = func.value
            return gast.Call(func=T.jn("mutate_attr"),
                             args=[holder.value, T.const(holder.attr), T.const(func.attr)] + node.args, keywords=[])
        return gast.Call(func=T.jn("call"), args=[node.func] + node.args, keywords=node.keywords)
