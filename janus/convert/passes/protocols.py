"""Route the protocols Python calls implicitly through ``janus.runtime.dunders``.

``obj[key]`` (a read) becomes ``_jn.proto(obj)[key]``, ``a in b`` becomes
``_jn.contains(b, a)`` (``not in``: its negation), and the value unpacked by ``a, b = v`` or
``f(*v)`` becomes ``_jn.unpack(v)``: an object whose ``__getitem__``, ``__contains__`` or
``__iter__`` is the user's runs it converted, one whose protocol Janus does not model fails
the trace, and everything else (a tensor, a list the trace copied) is itself.
``len``, ``iter``, ``bool``, ``int``, ``float`` and ``abs`` are calls already, and truth
tests go through ``_jn`` operations: both reach the same module at run time.
"""
from __future__ import annotations

import gast

from janus.convert import templates as T


class LowerProtocols(gast.NodeTransformer):
    def visit_Subscript(self, node: gast.Subscript):
        self.generic_visit(node)
        if isinstance(node.ctx, gast.Load):
            node.value = gast.Call(func=T.jn("proto"), args=[node.value], keywords=[])
        return node

    def visit_Compare(self, node: gast.Compare):
        self.generic_visit(node)
        if len(node.ops) != 1 or not isinstance(node.ops[0], (gast.In, gast.NotIn)):
            return node
        test = gast.Call(func=T.jn("contains"), args=[node.comparators[0], node.left], keywords=[])
        if isinstance(node.ops[0], gast.NotIn):
            return gast.Call(func=T.jn("not_"), args=[test], keywords=[])
        return test

    def visit_Assign(self, node: gast.Assign):
        self.generic_visit(node)
        if any(isinstance(t, (gast.Tuple, gast.List)) for t in node.targets):
            node.value = gast.Call(func=T.jn("unpack"), args=[node.value], keywords=[])
        return node

    def visit_Starred(self, node: gast.Starred):
        self.generic_visit(node)
        if isinstance(node.ctx, gast.Load):
            node.value = gast.Call(func=T.jn("unpack"), args=[node.value], keywords=[])
        return node
