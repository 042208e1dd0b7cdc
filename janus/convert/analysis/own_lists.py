"""Own lists: local variables that only ever hold a list the function made and never hands on.

A variable is one when every binding of it makes a new list (a list display or
comprehension, a slice, ``list(...)`` or ``sorted(...)``) and every use of it only calls a
list method on it, indexes it or takes its ``len``.  No other name, object or
function can then see the list: a block that changes it may work on a copy of its own and
hand the copy back (``passes.control_flow``).  Both sides of a tensor conditional can
then be traced, each on its own copy, and the list's length may become a value the graph
computes (``janus.lowering.graph_lists``).

A parameter, a cell, a ``global`` or ``nonlocal`` name and a name any nested scope uses are
never own lists.  A slice is taken to make a new list as a list's does (a class whose
slice returns a list it keeps would fool this).
"""
from __future__ import annotations

import gast

from janus.convert.analysis.scopes import NESTED_SCOPES, cell_vars, declared, params, scope_nodes

LIST_METHODS = frozenset({"append", "pop", "extend", "insert", "remove", "reverse", "sort", "clear",
                          "index", "count", "copy"})
MUTATORS = frozenset({"append", "pop", "extend", "insert", "remove", "reverse", "sort", "clear"})
_FRESH_CALLS = frozenset({"list", "sorted"})


def own_lists(fn: gast.FunctionDef) -> frozenset[str]:
    """The own lists of ``fn`` (in its own scope; nested functions have theirs)."""
    parents: dict[int, gast.AST] = {}
    bound: set[str] = set()
    refused = set(params(fn.args)) | set().union(*declared(fn).values()) | cell_vars(fn)
    for node in scope_nodes(fn.body):
        for child in gast.iter_child_nodes(node):
            parents[id(child)] = node
        if isinstance(node, NESTED_SCOPES):
            refused |= {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}
            refused.add(getattr(node, "name", ""))
        elif isinstance(node, (gast.Import, gast.ImportFrom)):
            refused |= {(a.asname or a.name).split(".")[0] for a in node.names}
    for node in scope_nodes(fn.body):
        if not isinstance(node, gast.Name) or id(node) not in parents:
            continue
        parent = parents[id(node)]
        if isinstance(node.ctx, gast.Store):
            if _fresh_binding(node, parent):
                bound.add(node.id)
            else:
                refused.add(node.id)
        elif not (isinstance(node.ctx, gast.Load) and _harmless_use(node, parent, parents)):
            refused.add(node.id)
    return frozenset(bound - refused)


def _fresh_binding(name: gast.Name, parent: gast.AST) -> bool:
    """``name = <a new list>``, the only target."""
    return isinstance(parent, gast.Assign) and parent.targets == [name] and _makes_list(parent.value)


def _makes_list(value: gast.expr) -> bool:
    if isinstance(value, (gast.List, gast.ListComp)):
        return True
    if isinstance(value, gast.Subscript):
        return isinstance(value.slice, gast.Slice)
    return (isinstance(value, gast.Call) and isinstance(value.func, gast.Name) and value.func.id in _FRESH_CALLS
            and not value.keywords)


def _harmless_use(name: gast.Name, parent: gast.AST, parents: dict[int, gast.AST]) -> bool:
    """A use that lets nothing else hold the list: a list method called on it, an item of it
    (read or assigned), ``len`` of it.  (A ``for`` over it would go on over the list while
    its body changed a copy.)"""
    if isinstance(parent, gast.Attribute):
        call = parents.get(id(parent))
        return parent.attr in LIST_METHODS and isinstance(call, gast.Call) and call.func is parent
    if isinstance(parent, gast.Subscript):
        return parent.value is name and not isinstance(parent.ctx, gast.Del)
    return isinstance(parent, gast.Call) and isinstance(parent.func, gast.Name) and parent.func.id == "len" \
        and parent.args == [name] and not parent.keywords
