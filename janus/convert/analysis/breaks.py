"""Analyses of a function about to be split at graph breaks (:mod:`janus.convert.splitting`):
whether it can be, and what its statements read, bind, return and exit.  They only read
the tree.
"""
from __future__ import annotations

import gast

from janus.convert.analysis.scopes import assigned, cell_vars, scope_nodes


def unsplittable_reason(node: gast.FunctionDef, qualname: str) -> str | None:
    """Why ``node`` cannot be split (None: it can)."""
    if cell_vars(node):
        return "a nested function or lambda reads its locals (their cells would be copied)"
    if "<locals>" not in qualname.split(".")[-1:] and "." in qualname and any(
            isinstance(n, (gast.Name, gast.Attribute)) and _mangled(getattr(n, "id", None) or n.attr)
            for n in gast.walk(node)):
        return "names mangled by its class (__name)"
    if any(isinstance(n, gast.Call) and isinstance(n.func, gast.Name) and n.func.id == "super" and not n.args
           for n in gast.walk(node)):
        return "super() without arguments"
    return None


def _mangled(name: str) -> bool:
    return name.startswith("__") and not name.endswith("__")


def with_targets(s: gast.stmt) -> set[str]:
    """Names the ``with`` statements of ``s`` (its own scope) bind with ``as``."""
    return assigned([i.optional_vars for n in scope_nodes([s]) if isinstance(n, gast.With)
                              for i in n.items if i.optional_vars is not None])


def return_kind(group: list[gast.stmt]) -> str | None:
    """None: ``group`` never returns; "last": only by its final statement, a ``return``;
    "some": from somewhere else too."""
    returns = [n for n in scope_nodes(group) if isinstance(n, gast.Return)]
    if not returns:
        return None
    if len(returns) == 1 and returns[0] is group[-1]:
        return "last"
    return "some"


def holds_return(stmts: list[gast.stmt]) -> bool:
    """``stmts`` hold a ``return`` of the function (not of a nested one)."""
    return any(isinstance(n, gast.Return) for n in scope_nodes(stmts))


def exits_loop(s: gast.stmt) -> bool:
    """``s`` holds a ``break`` or ``continue`` of a loop around it."""
    if isinstance(s, (gast.Break, gast.Continue)):
        return True
    if isinstance(s, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
        return False
    if isinstance(s, (gast.For, gast.While)):
        return any(exits_loop(c) for c in s.orelse)
    return any(exits_loop(c) for c in gast.iter_child_nodes(s) if isinstance(c, gast.stmt)) or any(
        exits_loop(c) for h in getattr(s, "handlers", []) for c in h.body)


def surely_bound(stmts: list[gast.stmt]) -> set[str]:
    """Names every run of ``stmts`` to its end binds (its plain statements and ``with`` targets)."""
    out: set[str] = set()
    for s in stmts:
        if isinstance(s, gast.With):
            out |= assigned([i.optional_vars for i in s.items if i.optional_vars is not None])
            out |= surely_bound(s.body)
        elif not isinstance(s, (gast.If, gast.For, gast.While, gast.Try)):
            out |= assigned([s])
    return out


def read_first(stmts: list[gast.stmt]) -> set[str]:
    """Names ``stmts`` may read before binding them themselves."""
    bound: set[str] = set()
    out: set[str] = set()
    for s in stmts:
        out |= loads([s]) - bound
        bound |= surely_bound([s])
    return out


def loads(stmts: list[gast.stmt]) -> set[str]:
    """Names ``stmts`` read (an augmented assignment reads its target, ``del`` its name)."""
    return {n.id for s in stmts for n in gast.walk(s)
            if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Load, gast.Del))} | {
        n.target.id for s in stmts for n in gast.walk(s) if isinstance(n, gast.AugAssign) and isinstance(n.target, gast.Name)}
