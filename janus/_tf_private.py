"""The only place Janus touches TensorFlow internals, each use with the reason.

Everything else in Janus uses public TensorFlow APIs.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import tensorflow as tf


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
