"""Rewrite a few forms into simpler equivalent ones the later passes handle.

* zero-argument ``super()`` becomes ``super(__class__, <first parameter>)``: the
  converted function is compiled outside its class, so it has no implicit
  ``__class__`` cell; ``__class__`` is then read from the original closure.
* ``obj.attr op= v`` and ``obj[k] op= v`` become plain assignments, so that state
  reads and writes are each seen once by the state pass.
* ``import a.b`` / ``import a.b as c`` / ``from .m import x as y`` become assignments of
  what the import binds, looked up at trace time (``janus.lowering.imports``).
"""
from __future__ import annotations

import copy

import gast

from janus.convert import templates as T


class Desugar(gast.NodeTransformer):
    def __init__(self, first_param: str | None):
        self.first_param = first_param
        self.depth = 0

    def visit_FunctionDef(self, node: gast.FunctionDef):
        # Only the converted function's own zero-argument super() is rewritten; in a
        # nested def it fails eagerly too.
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1
        return node

    def visit_Call(self, node: gast.Call):
        self.generic_visit(node)
        if (isinstance(node.func, gast.Name) and node.func.id == "super" and not node.args
                and self.first_param and self.depth == 1):
            node.args = [T.name("__class__"), T.name(self.first_param)]
        return node

    def visit_AugAssign(self, node: gast.AugAssign):
        self.generic_visit(node)
        if isinstance(node.target, (gast.Attribute, gast.Subscript)):
            load = copy.deepcopy(node.target)
            load.ctx = gast.Load()
            value = gast.BinOp(left=load, op=node.op, right=node.value)
            return T.located(gast.Assign(targets=[node.target], value=value, type_comment=None), node)
        return node

    def visit_Import(self, node: gast.Import):
        out = []
        for alias in node.names:
            target = alias.asname or alias.name.split(".")[0]
            call = f"_jn.import_name({alias.name!r}, {alias.asname is not None})"
            out += [T.located(s, node) for s in T.stmts(f"{target} = {call}")]
        return out

    def visit_ImportFrom(self, node: gast.ImportFrom):
        targets = ", ".join(a.asname or a.name for a in node.names)
        names = tuple(a.name for a in node.names)
        call = f"_jn.import_from({node.module or ''!r}, _jn_g, {node.level or 0}, {names!r})"
        return [T.located(s, node) for s in T.stmts(f"({targets},) = {call}")]
