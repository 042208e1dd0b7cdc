"""Route the protocols Python calls implicitly through ``janus.lowering.dunders``.

``obj[key]`` (a read) becomes ``_jn.proto(obj)[key]``, ``a in b`` becomes
``_jn.contains(b, a)`` (``not in``: its negation), and the value unpacked by ``a, b = v`` or
``f(*v)`` becomes ``_jn.unpack(v)``, and operators ``a + b``, ``a < b``, ``-a``, ``x += v``
become ``_jn.op.add(a, b)``, ``_jn.op.lt(a, b)``, ``_jn.op.neg(a)``, ``x = _jn.op.iadd(x, v)``
(``janus.lowering.operators``): an object whose ``__getitem__``, ``__contains__``,
``__iter__`` or operator dunder is the user's runs it converted, one whose protocol Janus
does not model fails the trace, and everything else (a tensor, a list the trace copied)
is itself.
``len``, ``iter``, ``bool``, ``int``, ``float`` and ``abs`` are calls already, and truth
tests go through ``_jn`` operations: both reach the same module at run time.
"""
from __future__ import annotations

import gast

from janus.convert import templates as T


_BINARY = {gast.Add: "add", gast.Sub: "sub", gast.Mult: "mul", gast.MatMult: "matmul", gast.Div: "truediv",
           gast.FloorDiv: "floordiv", gast.Mod: "mod", gast.Pow: "pow", gast.LShift: "lshift", gast.RShift: "rshift",
           gast.BitOr: "or_", gast.BitXor: "xor", gast.BitAnd: "and_"}
_COMPARE = {gast.Eq: "eq", gast.NotEq: "ne", gast.Lt: "lt", gast.LtE: "le", gast.Gt: "gt", gast.GtE: "ge"}
_UNARY = {gast.USub: "neg", gast.UAdd: "pos", gast.Invert: "invert"}


def _op(name: str, *args: gast.expr) -> gast.Call:
    """``_jn.op.<name>(*args)``."""
    func = gast.Attribute(value=T.jn("op"), attr=name, ctx=gast.Load())
    return gast.Call(func=func, args=list(args), keywords=[])


class LowerProtocols(gast.NodeTransformer):
    def visit_Subscript(self, node: gast.Subscript):
        self.generic_visit(node)
        if isinstance(node.ctx, gast.Load):
            node.value = gast.Call(func=T.jn("proto"), args=[node.value], keywords=[])
        return node

    def visit_BinOp(self, node: gast.BinOp):
        self.generic_visit(node)
        return _op(_BINARY[type(node.op)], node.left, node.right)

    def visit_UnaryOp(self, node: gast.UnaryOp):
        self.generic_visit(node)
        name = _UNARY.get(type(node.op))
        return _op(name, node.operand) if name is not None else node

    def visit_AugAssign(self, node: gast.AugAssign):
        """``x op= v`` on a local: ``x = _jn.op.iop(x, v)`` (the user's ``__iop__``, else ``op``)."""
        self.generic_visit(node)
        if not isinstance(node.target, gast.Name):
            return node
        name = "i" + _BINARY[type(node.op)].rstrip("_")
        load = gast.Name(id=node.target.id, ctx=gast.Load(), annotation=None, type_comment=None)
        return T.located(gast.Assign(targets=[node.target], value=_op(name, load, node.value), type_comment=None), node)

    def visit_Compare(self, node: gast.Compare):
        self.generic_visit(node)
        if len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
            return _op(_COMPARE[type(node.ops[0])], node.left, node.comparators[0])
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
