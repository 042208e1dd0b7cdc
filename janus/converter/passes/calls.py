"""Route every call through ``_jn.call``, which inlines user functions (converted)
and allow-lists library calls (``janus.calls``)."""
from __future__ import annotations

import gast

from janus.converter import templates as T


class LowerCalls(gast.NodeTransformer):
    def visit_Call(self, node: gast.Call):
        self.generic_visit(node)
        if T.is_jn_call(node):
            return node
        return gast.Call(func=T.jn("call"), args=[node.func] + node.args, keywords=node.keywords)
