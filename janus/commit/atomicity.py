"""All-or-nothing graphs: state changes wait for every assertion.

After a trace, every stateful op of the graph gets a control dependency on every
assertion op (and on every cond/loop op that contains assertions), so a failed
assertion aborts the run before any variable changes.  This is impossible when an
assertion itself depends on a state change (it checks a value computed after an
assignment): then the graph is rejected, naming the assumptions involved, and the
caller retraces without them.
"""
from __future__ import annotations

from typing import Any

import tensorflow as tf

from janus import _tf_private
from janus.errors import ConversionError

_WRITER_PREFIXES = ("Assign", "ResourceApply", "ResourceScatter", "ResourceSparseApply", "ResourceStridedSliceAssign",
                    # tf.random.Generator advances its state variable with these:
                    "RngReadAndSkip", "RngSkip", "StatefulStandardNormal", "StatefulUniform", "StatefulTruncatedNormal",
                    "StatefulRandomBinomial", "NonDeterministicInts")


class StateBeforeAssertion(ConversionError):
    """An assertion depends on a state update, so the graph cannot be all-or-nothing."""

    def __init__(self, assumptions: list):
        self.assumptions = [a for a in assumptions if a is not None]
        super().__init__("an assertion checks a value computed after a state update")


def writes_state(op: Any, constructs: set) -> bool:
    """Does ``op`` change a variable?  ``constructs``: cond/loop ops whose bodies do."""
    return op.type.startswith(_WRITER_PREFIXES) or op.type == "StatefulPartitionedCall" or op in constructs


def graph_writes_state(graph: Any, constructs: set) -> bool:
    return any(writes_state(op, constructs) for op in graph.get_operations())


def _ancestors(op: Any) -> set:
    seen: set = set()
    stack = [op]
    while stack:
        current = stack.pop()
        for dep in [t.op for t in current.inputs] + list(current.control_inputs):
            if dep not in seen:
                seen.add(dep)
                stack.append(dep)
    return seen


def _descendants(ops: list, graph: Any) -> set:
    """Ops that run after any of ``ops``, counting the edges TensorFlow's automatic
    control dependencies will add when the trace ends: later uses of a resource an op
    wrote, and later stateful ops without resource inputs (which TF runs in order)."""
    consumers: dict = {}
    last_writer: dict = {}
    last_unresourced = None
    writers = set(ops)
    for op in graph.get_operations():
        for t in op.inputs:
            consumers.setdefault(t.op, []).append(op)
            if t.dtype == tf.resource:
                if id(t) in last_writer:
                    consumers.setdefault(last_writer[id(t)], []).append(op)
                if op in writers:
                    last_writer[id(t)] = op
        for c in op.control_inputs:
            consumers.setdefault(c, []).append(op)
        if op.op_def.is_stateful and not any(t.dtype == tf.resource for t in op.inputs):
            if last_unresourced is not None:
                consumers.setdefault(last_unresourced, []).append(op)
            if op in writers:
                last_unresourced = op
    seen: set = set()
    stack = list(ops)
    while stack:
        for nxt in consumers.get(stack.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


_INERT = ("Placeholder", "Const", "NoOp", "VarHandleOp", "Identity")


def gate_state_on_assertions(graph: Any, assertions: list[tuple[Any, list]], constructs: set) -> list:
    """Make every state change wait for everything that can still abort the run; returns
    the ops that run before any state change (all of them in a graph without writes).

    An assertion (a speculation's check or the user's ``assert``) that depends on a
    state change cannot be ordered before it: :class:`StateBeforeAssertion`.  Every
    other op that does not depend on a state change — assertions included, and ops
    that may fail at run time such as a ``gather`` out of range — runs before the
    first variable is written, through one barrier op.  Edges only go into writers
    from ops upstream-independent of every writer, so no cycle can form.
    """
    writers = [op for op in graph.get_operations() if writes_state(op, constructs)]
    check_ops = {op for op, _ in assertions}
    for op, assumptions in assertions:
        if any(writes_state(a, constructs) for a in _ancestors(op)):
            raise StateBeforeAssertion(assumptions)
    if not writers:
        return graph.get_operations()
    after_writes = _descendants(writers, graph) | set(writers)
    before = [op for op in graph.get_operations() if op not in after_writes]
    gated = [op for op in before if op.type not in _INERT or op in check_ops]
    if not gated:
        return before
    with graph.as_default(), graph.control_dependencies(None):
        barrier = _tf_private.barrier(gated)
    for op in writers:
        _tf_private.add_control_inputs(op, [barrier])
    return before
