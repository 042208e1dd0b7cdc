"""Bind possibly-unassigned variables to ``_jn.UNDEF`` at the top of each function.

The control-flow pass passes the variables a block modifies into the block's
function; one assigned only inside the block may not exist yet, and reading it would
raise where eager Python would not.  ``UNDEF`` stands for "not assigned": any use of
it fails the conversion, so the call runs eagerly and eager raises what it raises.
"""
from __future__ import annotations

import gast

from janus.convert import analysis
from janus.convert import templates as T

# Position of the tuple of passed-in variables in each operation's arguments.
_OPS = {"if_stmt": 3, "while_stmt": 2, "for_stmt": 3}


class BindUndefined(gast.NodeTransformer):
    def visit_FunctionDef(self, node: gast.FunctionDef):
        self.generic_visit(node)
        passed: set[str] = set()
        for stmt in node.body:
            call = getattr(stmt, "value", None)
            if T.is_jn_call(call) and call.func.attr in _OPS:
                passed |= {e.id for e in call.args[_OPS[call.func.attr]].elts}
        missing = sorted(passed - set(analysis.params(node.args)) - _defined_first(node.body))
        if missing:
            node.body = T.stmts("\n".join(f"{m} = _jn.UNDEF" for m in missing)) + node.body
        return node


def _defined_first(body) -> set[str]:
    """Names assigned by the leading simple assignments, before any control flow."""
    out: set[str] = set()
    for stmt in body:
        if T.is_jn_call(getattr(stmt, "value", None)) and stmt.value.func.attr in _OPS:
            break
        if isinstance(stmt, (gast.Assign, gast.AugAssign, gast.AnnAssign)):
            out |= analysis.assigned([stmt])
        elif isinstance(stmt, gast.FunctionDef):
            out.add(stmt.name)
        else:
            break
    return out
