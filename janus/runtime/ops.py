"""The operations generated code calls, imported there as ``_jn``.

They are the paper's graph-side operations: state reads and writes (PyGetAttr /
PySetAttr and friends), control flow decided at trace time, calls, assertions.
"""
from janus.runtime.branches import and_, if_stmt, ifexp, not_, or_, test_and, test_or
from janus.runtime.builtin_shims import mod
from janus.runtime.calls import call, mutate_attr, mutate_cell, mutate_global
from janus.runtime.checks import assert_, caught
from janus.runtime.contexts import context_manager
from janus.runtime.deletes import del_attr, del_subscr, unbind
from janus.runtime.deletes import declared as del_declared
from janus.runtime.dunders import contains, proto, unpack
from janus.runtime.escapes import block_left, escaped
from janus.runtime.fstrings import field, fstring
from janus.runtime.graph_lists import own_lists
from janus.runtime.imports import import_from, import_name
from janus.runtime.loops import for_stmt, while_stmt
from janus.runtime.operators import op
from janus.runtime.state import aug_operand, ld_attr, ld_cell, ld_global, st_attr, st_cell, st_global, st_subscr
from janus.trace.values import UNDEF

__all__ = [
    "call", "mod", "field", "fstring",
    "UNDEF", "and_", "assert_", "caught", "for_stmt", "if_stmt", "ifexp", "not_", "or_", "test_and", "test_or", "while_stmt",
    "ld_attr", "ld_cell", "ld_global", "mutate_attr", "mutate_cell", "mutate_global", "st_attr", "st_subscr",
    "aug_operand", "st_global", "st_cell", "context_manager", "import_name", "import_from", "block_left", "escaped",
    "own_lists", "proto", "contains", "unpack", "op", "unbind", "del_attr", "del_subscr", "del_declared",
]
