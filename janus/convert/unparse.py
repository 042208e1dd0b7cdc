"""Generated source from an AST, with astunparse.

astunparse 1.6.3 predates Python 3.9's AST, where a multi-dimensional subscript is
a plain ``Tuple`` of slices; it prints ``x[(:, 1)]``, which does not parse.  The
subclass below prints such a subscript without the parentheses.
"""
from __future__ import annotations

import ast
import io

import astunparse


class _Unparser(astunparse.Unparser):
    def _Subscript(self, t):
        self.dispatch(t.value)
        self.write("[")
        if isinstance(t.slice, ast.Tuple) and t.slice.elts:
            for i, elt in enumerate(t.slice.elts):
                if i:
                    self.write(", ")
                self.dispatch(elt)
            if len(t.slice.elts) == 1:
                self.write(",")
        else:
            self.dispatch(t.slice)
        self.write("]")


def unparse(tree: ast.AST) -> str:
    out = io.StringIO()
    _Unparser(tree, file=out)
    return out.getvalue()
