"""Route reads and writes of Python state through the state operations.

* a global name becomes ``_jn.ld_global(_jn_g, 'name')`` and a free variable of
  the converted function ``_jn.ld_cell(_jn_c, i, 'name')`` (PyGetAttr on a module
  or a cell): read at trace time, guarded, and fed as a graph input if a tensor;
* ``obj.attr`` becomes ``_jn.ld_attr(obj, 'attr')`` (PyGetAttr);
* ``obj.attr = v`` and ``obj[k] = v`` become ``_jn.st_attr`` / ``_jn.st_subscr``
  (PySetAttr / PySetSubscr), deferred when ``obj`` is Python state.

Which names are local follows Python's scoping rules on the original function and
its nested functions, lambdas and comprehensions.
"""
from __future__ import annotations

import gast

from janus.convert import analysis
from janus.convert import templates as T
from janus.convert.passes.lower_calls import DEFERRABLE_MUTATORS


class LowerStateAccess(gast.NodeTransformer):
    def __init__(self, freevars: tuple[str, ...]):
        self.freevars = {n: i for i, n in enumerate(freevars)}
        self.scopes: list[set[str]] = []
        self.tmp = 0
        self.globals: set[str] = set()  # declared ``global`` / ``nonlocal`` by the converted function
        self.nonlocals: set[str] = set()

    # -- scopes ---------------------------------------------------------------------
    def _scoped(self, node, names: set[str]):
        self.scopes.append(names)
        try:
            self.generic_visit(node)
        finally:
            self.scopes.pop()
        return node

    def visit_FunctionDef(self, node: gast.FunctionDef):
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        node.args.defaults = [self.visit(d) for d in node.args.defaults]
        node.args.kw_defaults = [d if d is None else self.visit(d) for d in node.args.kw_defaults]
        if not self.scopes:  # the converted function: its global/nonlocal statements become state writes
            names = analysis.declared(node)
            self.globals, self.nonlocals = names["global"], names["nonlocal"]
        self.scopes.append(analysis.local_names(node))
        try:
            node.body = [self.visit(s) for s in node.body]
            node.body = [s for item in node.body if item is not None
                         for s in (item if isinstance(item, list) else [item])]
        finally:
            self.scopes.pop()
        return node

    def visit_Lambda(self, node: gast.Lambda):
        return self._scoped(node, set(analysis.params(node.args)))

    def _comprehension(self, node):
        names = analysis.assigned([g.target for g in node.generators])
        # The first iterable is evaluated in the enclosing scope.
        node.generators[0].iter = self.visit(node.generators[0].iter)
        self.scopes.append(names)
        try:
            first = node.generators[0]
            first.target = self.visit(first.target)
            first.ifs = [self.visit(i) for i in first.ifs]
            for g in node.generators[1:]:
                self.visit(g)
            for field in ("elt", "key", "value"):
                if hasattr(node, field):
                    setattr(node, field, self.visit(getattr(node, field)))
        finally:
            self.scopes.pop()
        return node

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def visit_Call(self, node: gast.Call):
        """``X.append(v)`` on a global or closure container: mutate without reading it."""
        if (T.is_jn_call(node) and node.func.attr == "call" and node.args
                and isinstance(node.args[0], gast.Attribute) and node.args[0].attr in DEFERRABLE_MUTATORS
                and isinstance(node.args[0].value, gast.Name) and not node.keywords):
            name = node.args[0].value.id
            rest = [self.visit(a) for a in node.args[1:]]
            if not name.startswith("_jn") and not any(name in s for s in self.scopes):
                method = T.const(node.args[0].attr)
                if name in self.freevars:
                    head = [T.name("_jn_c"), T.const(self.freevars[name]), T.const(name), method]
                    return gast.Call(func=T.jn("mutate_cell"), args=head + rest, keywords=[])
                head = [T.name("_jn_g"), T.const(name), method]
                return gast.Call(func=T.jn("mutate_global"), args=head + rest, keywords=[])
        self.generic_visit(node)
        return node

    # -- reads ----------------------------------------------------------------------
    def visit_Name(self, node: gast.Name):
        if not isinstance(node.ctx, gast.Load) or node.id.startswith("_jn") or any(node.id in s for s in self.scopes):
            return node
        if node.id in self.freevars:
            return T.expr(f"_jn.ld_cell(_jn_c, {self.freevars[node.id]}, {node.id!r})")
        return T.expr(f"_jn.ld_global(_jn_g, {node.id!r})")

    def visit_Attribute(self, node: gast.Attribute):
        if isinstance(node.value, gast.Name) and node.value.id == "_jn":
            return node
        node.value = self.visit(node.value)
        if isinstance(node.ctx, gast.Load):
            return T.expr(f"_jn.ld_attr(OBJ, {node.attr!r})", OBJ=node.value)
        return node

    # -- writes ---------------------------------------------------------------------
    def visit_Assign(self, node: gast.Assign):
        node.value = self.visit(node.value)
        if len(node.targets) == 1 and isinstance(node.targets[0], (gast.Attribute, gast.Subscript)):
            return [T.located(self._store(node.targets[0], node.value), node)]
        writes: list = []
        node.targets = [self._target(t, writes) for t in node.targets]
        return [node] + [T.located(w, node) for w in writes]

    def visit_Global(self, node):
        return None  # the writes go through _jn.st_global

    def visit_Nonlocal(self, node):
        return None  # the writes go through _jn.st_cell

    def visit_AugAssign(self, node: gast.AugAssign):
        if isinstance(node.target, gast.Name) and self._declared(node.target.id):
            name = node.target.id
            current = T.expr(f"_jn.aug_operand(CURRENT, {name!r})", CURRENT=self.visit(gast.Name(
                id=name, ctx=gast.Load(), annotation=None, type_comment=None)))
            value = gast.BinOp(left=current, op=node.op, right=self.visit(node.value))
            return T.located(self._rebind(name, value), node)
        self.generic_visit(node)
        return node

    def _declared(self, name: str) -> bool:
        """A name the converted function declared global or nonlocal (and no nested scope rebinds)."""
        return (name in self.globals or name in self.nonlocals) and not any(name in s for s in self.scopes)

    def _rebind(self, name: str, value) -> gast.stmt:
        if name in self.nonlocals:
            return T.stmts(f"_jn.st_cell(_jn_c, {self.freevars[name]}, {name!r}, VALUE)", VALUE=value)[0]
        return T.stmts(f"_jn.st_global(_jn_g, {name!r}, VALUE)", VALUE=value)[0]

    def _target(self, target, writes: list):
        if isinstance(target, gast.Name) and self._declared(target.id):
            self.tmp += 1
            tmp = f"_jn_tmp_{self.tmp}"
            writes.append(self._rebind(target.id, T.name(tmp)))
            return T.name(tmp, store=True)
        if isinstance(target, (gast.Attribute, gast.Subscript)):
            self.tmp += 1
            tmp = f"_jn_tmp_{self.tmp}"
            writes.append(self._store(target, T.name(tmp)))
            return T.name(tmp, store=True)
        if isinstance(target, (gast.Tuple, gast.List)):
            target.elts = [self._target(e, writes) for e in target.elts]
            return target
        return self.visit(target)

    def _store(self, target, value) -> gast.stmt:
        obj = self.visit(target.value)
        if isinstance(target, gast.Attribute):
            return T.stmts(f"_jn.st_attr(OBJ, {target.attr!r}, VALUE)", OBJ=obj, VALUE=value)[0]
        key = T.subscript_key(target.slice)
        return T.stmts("_jn.st_subscr(OBJ, KEY, VALUE)", OBJ=obj, KEY=self.visit(key), VALUE=value)[0]
