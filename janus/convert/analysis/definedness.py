"""Definedness: which variables may still be unbound where converted code passes them on.

After the control-flow pass, every function (the user's, and each generated block
function) is straight-line code: ``if``/``while``/``for`` became calls of ``_jn``
operations that take the block's variables as a tuple.  A variable passed to such a
call must exist in Python; eager code may legitimately leave it unbound on the path
taken (it is first assigned inside the block).  This analysis walks a function's
statements in order (through ``with`` bodies and ``try`` blocks) and reports, for the variables the
function itself binds, those passed before they are definitely bound.  A variable the
function does not bind is read from an enclosing function and is never reported:
binding it here would shadow the enclosing one.
"""
from __future__ import annotations

from typing import Iterable

import gast

from janus.convert.analysis.scopes import assigned, params

# Position of the tuple of passed-in variables in each operation's arguments.
BLOCK_OPERATIONS = {"if_stmt": 3, "while_stmt": 2, "for_stmt": 3}


def possibly_unbound(fn: gast.FunctionDef) -> set[str]:
    """Locals of ``fn`` that a block operation receives before every path has bound them."""
    local = set(params(fn.args)) | assigned(fn.body)
    defined = set(params(fn.args))
    missing: set[str] = set()
    _scan(fn.body, defined, local, missing)
    return missing


def _scan(stmts: Iterable[gast.stmt], defined: set[str], local: set[str], missing: set[str]) -> None:
    for stmt in stmts:
        if isinstance(stmt, gast.With):
            defined |= assigned([i.optional_vars for i in stmt.items if i.optional_vars is not None])
            _scan(stmt.body, defined, local, missing)
            continue
        if isinstance(stmt, gast.Try):
            # Any statement of the body may raise: only the finally block surely runs to its end.
            for block in [stmt.body, stmt.orelse] + [h.body for h in stmt.handlers]:
                _scan(block, set(defined), local, missing)
            _scan(stmt.finalbody, defined, local, missing)
            continue
        passed = _passed(getattr(stmt, "value", None))
        missing |= (passed & local) - defined
        if isinstance(stmt, (gast.Return, gast.Raise)):
            return
        defined |= assigned([stmt])


def _passed(call: gast.AST | None) -> set[str]:
    func = getattr(call, "func", None)
    if not (isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) and func.value.id == "_jn"
            and func.attr in BLOCK_OPERATIONS):
        return set()
    return {e.id for e in call.args[BLOCK_OPERATIONS[func.attr]].elts}
