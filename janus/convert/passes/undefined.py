"""Bind possibly-unassigned variables to ``_jn.UNDEF`` at the top of each function.

The control-flow pass passes the variables a block modifies into the block's
function; one assigned only inside the block may not exist yet, and reading it would
raise where eager Python would not.  The definedness analysis
(:mod:`janus.convert.analysis.definedness`) says which locals a block operation may
receive unbound; those start as ``UNDEF``, which stands for "not assigned": any use of
it fails the conversion, so the call runs eagerly and eager raises what it raises.
Variables a function reads from an enclosing function are never bound here.
"""
from __future__ import annotations

import gast

from janus.convert import analysis
from janus.convert import templates as T


class BindUndefined(gast.NodeTransformer):
    def visit_FunctionDef(self, node: gast.FunctionDef):
        self.generic_visit(node)
        missing = sorted(analysis.possibly_unbound(node))
        if missing:
            node.body = T.stmts("\n".join(f"{m} = _jn.UNDEF" for m in missing)) + node.body
        return node
