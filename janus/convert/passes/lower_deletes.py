"""``del`` statements become operations of ``_jn`` (``janus.lowering.deletes``).

* ``del x`` of a local becomes ``x = _jn.unbind(x, 'x')``: an assignment, so that the later
  passes (loop and branch state, possibly-unbound locals) see the name rebound;
* ``del obj.name`` becomes ``_jn.del_attr(obj, 'name')`` and ``del obj[k]`` (a slice
  included) ``_jn.del_subscr(obj, k)``; ``LowerStateAccess`` then routes ``obj``'s reads;
* ``del x`` of a name the function declares ``global`` or ``nonlocal``: ``_jn.del_declared``,
  which refuses it at trace time (a graph break there).

Runs first, before the passes that collect assigned names.
"""
from __future__ import annotations

import copy

import gast

from janus.convert import templates as T


class LowerDelete(gast.NodeTransformer):
    def __init__(self) -> None:
        self.declared: list[set[str]] = [set()]

    def visit_FunctionDef(self, node: gast.FunctionDef):
        names = {n for stmt in gast.walk(node) if isinstance(stmt, (gast.Global, gast.Nonlocal)) for n in stmt.names}
        self.declared.append(names)
        self.generic_visit(node)
        self.declared.pop()
        return node

    def visit_Delete(self, node: gast.Delete):
        out: list[gast.stmt] = []
        for target in node.targets:
            out += self._deleted(target)
        return [T.located(s, node) for s in out]

    def _deleted(self, target) -> list[gast.stmt]:
        if isinstance(target, (gast.Tuple, gast.List)):
            return [s for t in target.elts for s in self._deleted(t)]
        if isinstance(target, gast.Name):
            if target.id in self.declared[-1]:
                return T.stmts(f"_jn.del_declared({target.id!r})")
            return T.stmts(f"{target.id} = _jn.unbind({target.id}, {target.id!r})")
        obj = _load(target.value)
        if isinstance(target, gast.Attribute):
            return T.stmts(f"_jn.del_attr(OBJ, {target.attr!r})", OBJ=obj)
        return T.stmts("_jn.del_subscr(OBJ, KEY)", OBJ=obj, KEY=_load(T.subscript_key(target.slice)))


def _load(node):
    """A copy of ``node`` read (a ``del`` target's parts are in the Del context)."""
    node = copy.deepcopy(node)
    for child in gast.walk(node):
        if hasattr(child, "ctx") and not isinstance(child.ctx, gast.Load):
            child.ctx = gast.Load()
    return node
