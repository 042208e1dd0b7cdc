"""Turn ``if``, ``while`` and ``for`` into calls of ``janus.ops`` with function bodies.

Each block becomes a nested function taking and returning the variables it
modifies that are live (the analysis annotated which), e.g. for a loop::

    while i < n:                   def _jn_while_test_3(i, s):
        s = s + x[i]                   return i < n
        i = i + 1          ==>     def _jn_while_body_3(i, s):
                                       s = s + x[i]
                                       i = i + 1
                                       return (i, s)
                                   (i, s) = _jn.while_stmt(_jn_while_test_3, _jn_while_body_3, (i, s), ('i', 's'))

At trace time the operation runs the block in Python when the condition is a Python
value, and builds ``tf.cond`` / ``tf.while_loop`` when it is a tensor.
"""
from __future__ import annotations

import gast

from janus.converter import analysis
from janus.converter import templates as T

_GENERATED = ("_jn_if_", "_jn_else_", "_jn_while_", "_jn_for_")


def _modified(stmts) -> set[str]:
    return {n for n in analysis.assigned(stmts) if not n.startswith(_GENERATED)}


def _with_return(stmts: list, outs: list[str]) -> list:
    """The block followed by ``return (outs...)``, unless it ends by raising."""
    if stmts and isinstance(stmts[-1], gast.Raise):
        return stmts
    return stmts + [gast.Return(value=T.tuple_of(outs))]


class LowerControlFlow(gast.NodeTransformer):
    def __init__(self, sites: list):
        self.counter = 0
        self.sites = sites

    def visit_FunctionDef(self, node: gast.FunctionDef):
        analysis.annotate_liveness(node)
        self.generic_visit(node)
        return node

    def _next(self) -> int:
        self.counter += 1
        return self.counter

    def _assign_result(self, outs: list[str], call: gast.Call) -> gast.stmt:
        if not outs:
            return gast.Expr(value=call)
        return gast.Assign(targets=[T.tuple_of(outs, store=True)], value=call, type_comment=None)

    def _names_arg(self, names: list[str]) -> gast.Tuple:
        return gast.Tuple(elts=[T.const(n) for n in names], ctx=gast.Load())

    def visit_If(self, node: gast.If):
        self.generic_visit(node)
        n = self._next()
        mod = _modified(node.body) | _modified(node.orelse)
        outs = sorted(mod & node.jn_live_out)
        ins = sorted(mod & (node.jn_live_out | node.jn_live_body | node.jn_live_orelse))
        body = T.func_def(f"_jn_if_{n}", ins, _with_return(node.body, outs))
        orelse = T.func_def(f"_jn_else_{n}", ins, _with_return(node.orelse, outs))
        call = gast.Call(func=T.jn("if_stmt"), args=[node.test, T.name(body.name), T.name(orelse.name),
                                                     T.tuple_of(ins), self._names_arg(outs),
                                                     T.site_ref(self.sites, node)], keywords=[])
        return [body, orelse, self._assign_result(outs, call)]

    def visit_While(self, node: gast.While):
        self.generic_visit(node)
        n = self._next()
        carried = sorted(_modified(node.body) & (node.jn_live_head | node.jn_live_body))
        test = T.func_def(f"_jn_while_test_{n}", carried, [gast.Return(value=node.test)])
        body = T.func_def(f"_jn_while_body_{n}", carried, node.body + [gast.Return(value=T.tuple_of(carried))])
        call = gast.Call(func=T.jn("while_stmt"), args=[T.name(test.name), T.name(body.name), T.tuple_of(carried),
                                                        self._names_arg(carried), T.site_ref(self.sites, node)],
                         keywords=[])
        return [test, body, self._assign_result(carried, call)] + node.orelse

    def visit_For(self, node: gast.For):
        self.generic_visit(node)
        n = self._next()
        target = analysis.assigned([node.target])
        carried = sorted((_modified(node.body) | target) & (node.jn_live_head | node.jn_live_body)
                         - (target - node.jn_live_out))
        item = f"_jn_item_{n}"
        bind = gast.Assign(targets=[node.target], value=T.name(item), type_comment=None)
        body = T.func_def(f"_jn_for_body_{n}", [item] + carried,
                          [bind] + node.body + [gast.Return(value=T.tuple_of(carried))])
        out = [body]
        extra = getattr(node, "jn_extra_test", None)
        if extra is not None:
            test = T.func_def(f"_jn_for_test_{n}", carried, [gast.Return(value=extra)])
            out.insert(0, test)
            extra_arg = T.name(test.name)
        else:
            extra_arg = T.const(None)
        call = gast.Call(func=T.jn("for_stmt"), args=[node.iter, extra_arg, T.name(body.name), T.tuple_of(carried),
                                                      self._names_arg(carried), T.site_ref(self.sites, node)],
                         keywords=[])
        return out + [self._assign_result(carried, call)] + node.orelse
