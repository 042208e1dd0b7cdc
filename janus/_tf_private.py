"""The only place Janus touches TensorFlow internals, each use with the reason.

Everything else in Janus uses public TensorFlow APIs.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import tensorflow as tf
from tensorflow.python.framework import func_graph
from tensorflow.python.framework import ops as tf_ops
from tensorflow.python.ops import cond_v2
from tensorflow.python.ops import control_flow_util_v2 as cf_util


def call_time_input(graph: Any, closure: Callable[[], Any], spec: tf.TensorSpec, key: str):
    """A placeholder of ``graph`` whose value is ``closure()`` at each call.

    Why: heap tensors (``self.h``, a global) must be graph inputs fed fresh at every
    call, never constants captured at trace time, and which ones exist is only known
    while tracing.  ``FuncGraph.capture_call_time_value`` is the FuncGraph method that
    does exactly this (it is how ``tf.function`` implements late-bound captures); it is
    a method of TF's internal ``FuncGraph`` class, hence it lives here.  The capture is
    made on the outermost graph so that branch and loop bodies capture it normally.
    """
    with graph.as_default():
        return graph.capture_call_time_value(closure, spec, key=key)


def call_flat(concrete: Any, inputs: Sequence[Any]) -> Any:
    """Call a concrete function with already-flat tensor inputs.

    Why: ``ConcreteFunction.__call__`` re-validates and re-flattens structured
    arguments on every call (tens of microseconds); Janus has already checked the
    inputs with its own generated guard, so it calls the flat entry point.
    """
    return concrete._call_flat(list(inputs), concrete.captured_inputs)  # noqa: SLF001


def add_control_inputs(op: Any, deps: Sequence[Any]) -> None:
    """Make ``op`` run only after ``deps``.

    Why: stateful ops (variable assignments, optimizer updates) are created deep inside
    user and Keras code, before Janus knows every assertion the trace will emit; the
    all-or-nothing rule needs each of them to wait for every assertion, so the edges
    are added once the trace is complete.  ``Operation._add_control_inputs`` is the
    graph-construction method TF itself uses for this.
    """
    op._add_control_inputs(list(deps))  # noqa: SLF001


def barrier(ops: Sequence[Any]) -> Any:
    """A no-op that runs after all of ``ops`` (their control-dependency sink)."""
    op = tf.no_op(name="janus_barrier")
    add_control_inputs(op, ops)
    return op


# -- conditionals traced once (``janus.runtime.control_flow._cond``) -----------------
# Why: ``tf.cond`` traces both sides and requires them to return the same structure
# right away.  Janus must first see what each side produces (a Python number on one side
# and a tensor on the other, a result only one side defines, effects each side records)
# before it knows the outputs, and tracing each side twice (a probe, then ``tf.cond``)
# makes k nested conditionals trace the innermost body 2**k times.  TensorFlow's own
# ``cond_v2`` builds a conditional in three steps: trace each side into a branch
# ``FuncGraph``, match their outputs afterwards, build the ``If`` op from the graphs.
# These helpers expose those steps (``cond_v2`` has no public entry point for them).

def cond_scope() -> Any:
    """A name scope for one conditional; entering it gives the scope name ``build_cond`` needs."""
    return tf_ops.name_scope("cond")


def branch_graph(fn: Callable[[], list], scope: str, side: bool) -> Any:
    """Trace ``fn`` (returning a list of tensors) once into a new branch graph of a conditional,
    exactly as ``cond_v2`` traces a side (automatic control dependencies included)."""
    outer = tf_ops.get_default_graph()
    name = cf_util.unique_fn_name(scope, "true" if side else "false")
    graph = cf_util.CondBranchFuncGraph(name, collections=outer._collections)  # noqa: SLF001
    return func_graph.func_graph_from_py_func(
        name, fn, [], {}, func_graph=graph,
        add_control_dependencies=outer._add_control_dependencies)  # noqa: SLF001


def set_branch_outputs(graph: Any, outputs: list) -> None:
    """Make ``outputs`` (tensors of ``graph``, traced or added after the trace) its outputs,
    as ``cond_v2`` does when it matches the sides' outputs after tracing them."""
    graph.outputs = list(outputs)
    graph.structured_outputs = list(outputs)


def build_cond(pred: Any, true_graph: Any, false_graph: Any, scope: str) -> list:
    """The ``If`` op of two branch graphs with matching outputs; returns its outputs."""
    cond_v2.verify_captures(cond_v2._COND, [true_graph, false_graph])  # noqa: SLF001
    outs = cond_v2._build_cond(  # noqa: SLF001
        pred, true_graph, false_graph, true_graph.external_captures, false_graph.external_captures,
        building_gradient=False, name=scope)
    return list(outs) if isinstance(outs, (list, tuple)) else [outs]
