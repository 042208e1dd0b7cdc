"""Route expressions whose meaning depends on the value's kind through ``janus.lowering.ops``.

``and``/``or``/``not``, conditional expressions, chained comparisons and ``assert``
become calls that run in Python on Python values and build graph ops on tensors
(keeping the short circuit: the right side is a lambda).  f-string fields and
``"..." % x`` go through helpers that refuse to format a graph tensor into text
at trace time (eager would format the computed value).
"""
from __future__ import annotations

import copy

import gast

from janus.convert import templates as T
from janus.convert.anno import Anno, getanno, setanno


def _lambda(body: gast.expr) -> gast.Lambda:
    args = gast.arguments(args=[], posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    return gast.Lambda(args=args, body=body)


def _call(op: str, *args: gast.expr) -> gast.Call:
    return gast.Call(func=T.jn(op), args=list(args), keywords=[])


class LowerExpressions(gast.NodeTransformer):
    def __init__(self, sites: list):
        self.sites = sites

    def _test(self, node: gast.expr) -> gast.expr:
        """A condition whose truth alone matters: ``and``/``or`` need not keep the operand's kind."""
        if isinstance(node, gast.BoolOp):
            op = "test_and" if isinstance(node.op, gast.And) else "test_or"
            values = [self._test(v) for v in node.values]
            result = values[-1]
            for value in reversed(values[:-1]):
                result = _call(op, value, _lambda(result))
            return result
        if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.Not):
            return _call("not_", self._test(node.operand))
        return self.visit(node)

    def visit_If(self, node: gast.If):
        node.test = self._test(node.test)
        node.body = [self.visit(s) for s in node.body]
        node.orelse = [self.visit(s) for s in node.orelse]
        return node

    def visit_While(self, node: gast.While):
        node.test = self._test(node.test)
        node.body = [self.visit(s) for s in node.body]
        node.orelse = [self.visit(s) for s in node.orelse]
        return node

    def visit_comprehension(self, node: gast.comprehension):
        node.target = self.visit(node.target)
        node.iter = self.visit(node.iter)
        node.ifs = [self._test(i) for i in node.ifs]
        return node

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
        test = self._test(node.test)
        body, orelse = self.visit(node.body), self.visit(node.orelse)
        return _call("ifexp", test, _lambda(body), _lambda(orelse), T.site_ref(self.sites, node))

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
        test = self._test(node.test)
        if node.msg is not None:
            node.msg = self.visit(node.msg)
        args = [test] + ([_lambda(node.msg)] if node.msg is not None else [])
        return T.located(gast.Expr(value=_call("assert_", *args)), node)

    def visit_JoinedStr(self, node: gast.JoinedStr):
        """``f"..."`` becomes ``_jn.fstring(...)``: formatting a value the graph computes is
        deferred until the run has produced it (eager formats the computed value)."""
        if not any(isinstance(v, gast.FormattedValue) for v in node.values):
            return node
        parts = []
        for value in node.values:
            if isinstance(value, gast.FormattedValue):
                spec = self.visit(value.format_spec) if value.format_spec is not None else T.const("")
                parts.append(_call("field", self.visit(value.value), T.const(value.conversion), spec))
            else:
                parts.append(value)
        return _call("fstring", *parts)

    def visit_BinOp(self, node: gast.BinOp):
        self.generic_visit(node)
        if isinstance(node.op, gast.Mod) and isinstance(node.left, (gast.Constant, gast.JoinedStr)) \
                and isinstance(getattr(node.left, "value", ""), (str, bytes)):
            return _call("mod", node.left, node.right)
        return node

    def visit_For(self, node: gast.For):
        self.generic_visit(node)
        extra = getanno(node, Anno.EXTRA_TEST)
        if extra is not None:
            setanno(node, Anno.EXTRA_TEST, self._test(extra))
        return node
