"""Route expressions whose meaning depends on the value's kind through ``janus.ops``.

``and``/``or``/``not``, conditional expressions, chained comparisons and ``assert``
become calls that run in Python on Python values and build graph ops on tensors
(keeping the short circuit: the right side is a lambda).  f-string fields and
``"..." % x`` go through helpers that refuse to format a graph tensor into text
at trace time (eager would format the computed value).
"""
from __future__ import annotations

import copy

import gast

from janus.converter import templates as T


def _lambda(body: gast.expr) -> gast.Lambda:
    args = gast.arguments(args=[], posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    return gast.Lambda(args=args, body=body)


def _call(op: str, *args: gast.expr) -> gast.Call:
    return gast.Call(func=T.jn(op), args=list(args), keywords=[])


class LowerExpressions(gast.NodeTransformer):
    def visit_BoolOp(self, node: gast.BoolOp):
        self.generic_visit(node)
        op = "and_" if isinstance(node.op, gast.And) else "or_"
        result = node.values[-1]
        for value in reversed(node.values[:-1]):
            result = _call(op, value, _lambda(result))
        return result

    def visit_UnaryOp(self, node: gast.UnaryOp):
        self.generic_visit(node)
        if isinstance(node.op, gast.Not):
            return _call("not_", node.operand)
        return node

    def visit_IfExp(self, node: gast.IfExp):
        self.generic_visit(node)
        return _call("ifexp", node.test, _lambda(node.body), _lambda(node.orelse))

    def visit_Compare(self, node: gast.Compare):
        self.generic_visit(node)
        if len(node.ops) == 1:
            return node
        parts, left = [], node.left
        for op, right in zip(node.ops, node.comparators):
            parts.append(gast.Compare(left=copy.deepcopy(left), ops=[op], comparators=[right]))
            left = right
        result = parts[-1]
        for part in reversed(parts[:-1]):
            result = _call("and_", part, _lambda(result))
        return result

    def visit_Assert(self, node: gast.Assert):
        self.generic_visit(node)
        args = [node.test] + ([_lambda(node.msg)] if node.msg is not None else [])
        return gast.Expr(value=_call("assert_", *args))

    def visit_FormattedValue(self, node: gast.FormattedValue):
        self.generic_visit(node)
        spec = node.format_spec if node.format_spec is not None else T.const("")
        node.value = _call("fmt", node.value, T.const(node.conversion), spec)
        node.conversion, node.format_spec = -1, None
        return node

    def visit_BinOp(self, node: gast.BinOp):
        self.generic_visit(node)
        if isinstance(node.op, gast.Mod) and isinstance(node.left, (gast.Constant, gast.JoinedStr)) \
                and isinstance(getattr(node.left, "value", ""), (str, bytes)):
            return _call("mod", node.left, node.right)
        return node

    def visit_For(self, node: gast.For):
        self.generic_visit(node)
        extra = getattr(node, "jn_extra_test", None)
        if extra is not None:
            node.jn_extra_test = self.visit(extra)
        return node
