"""The operations generated code calls, imported there as ``_jn``.

They are the paper's graph-side operations: state reads and writes (PyGetAttr /
PySetAttr and friends), control flow decided at trace time, calls, assertions.
"""
from janus.lowering.branches import and_, if_stmt, ifexp, not_, or_, test_and, test_or
from janus.lowering.builtin_shims import mod
from janus.lowering.calls import call, mutate_attr, mutate_cell, mutate_global
from janus.lowering.checks import assert_, caught
from janus.lowering.contexts import context_manager
from janus.lowering.deletes import del_attr, del_subscr, unbind
from janus.lowering.deletes import declared as del_declared
from janus.lowering.dunders import contains, proto, unpack
from janus.lowering.escapes import block_left, escaped
from janus.lowering.fstrings import field, fstring
from janus.lowering.graph_lists import own_lists
from janus.lowering.imports import import_from, import_name
from janus.lowering.loops import for_stmt, while_stmt
from janus.lowering.operators import op
from janus.lowering.state import aug_operand, ld_attr, ld_cell, ld_global, st_attr, st_cell, st_global, st_subscr
from janus.trace.values import UNDEF

__all__ = [
    "call", "mod", "field", "fstring",
    "UNDEF", "and_", "assert_", "caught", "for_stmt", "if_stmt", "ifexp", "not_", "or_", "test_and", "test_or", "while_stmt",
    "ld_attr", "ld_cell", "ld_global", "mutate_attr", "mutate_cell", "mutate_global", "st_attr", "st_subscr",
    "aug_operand", "st_global", "st_cell", "context_manager", "import_name", "import_from", "block_left", "escaped",
    "own_lists", "proto", "contains", "unpack", "op", "unbind", "del_attr", "del_subscr", "del_declared",
]
