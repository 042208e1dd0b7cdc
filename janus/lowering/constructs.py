"""What tracing a tensor-dependent ``tf.cond`` and ``tf.while_loop`` have in common.

Both refuse to rebind a closure's cell, name the op that gates state on the assertions
inside them, ask whether their body writes a variable, compare seed positions, and quote
the first line of a library error when they fail the conversion.
"""
from __future__ import annotations

from typing import Any, Sequence

import tensorflow as tf

from janus.trace import atomicity
from janus.errors import ConversionError
from janus.reporting.codes import Code
from janus.trace.active import current


def no_cells(cells: Sequence[str], what: str) -> None:
    """A tensor-dependent construct cannot rebind a closure's cell: refuse the conversion."""
    if cells:
        raise ConversionError(f"{what}: {', '.join(cells)} is read by a closure and rebound inside "
                              f"tensor-dependent control flow", code=Code.TENSOR_BRANCH)


def op_of(outs: list) -> Any:
    """The op a TF construct's outputs come from (to gate state on assertions inside it)."""
    for t in outs:
        if isinstance(t, tf.Tensor):
            op = t.op
            while op.type == "Identity" and op.inputs:
                op = op.inputs[0].op
            return op
    if len(outs) == 1 and isinstance(outs[0], tf.Operation):
        return outs[0]
    raise ConversionError("a tensor-dependent construct without outputs", code=Code.TENSOR_BRANCH)


def body_writes_state() -> bool:
    """Whether the cond/loop body being traced (the default graph) changes a variable."""
    ctx = current()
    return atomicity.graph_writes_state(tf.compat.v1.get_default_graph(), ctx.checks.writer_constructs)


def same_position(a: Any, b: Any) -> bool:
    """Two seed stream positions (``janus.trace.seeds``) are the same: one object, or equal ints."""
    return a is b or isinstance(a, int) and isinstance(b, int) and a == b
