"""Tensor values Python needs while tracing: folded when the trace knows them, and the
inputs they come from specialized by value when it does not.

Eager code turns tensors into Python numbers to drive Python logic: SPINN's parser pushes
or pops its stack on ``int(transition)``, a loop runs ``int(n)`` times.  In a graph such
a number is only a tensor (a :class:`~janus.trace.scalars.PyScalar`), and logic that
needs its value (a list popped on one branch, ``range`` of it) fails the trace.

* A tensor whose value the trace can compute is *known*: it is made only of constants
  and of stateless ops on them (a tensor specialized by value, a shape the guards fix).
  ``int(t)``, ``float(t)`` and ``bool(t)`` of it are the Python number itself, computed
  by the op's own kernel as eager computes it, ``t.numpy()`` is eager's array, and an
  ``if``, ``and``, ``or`` or ``not`` on it is Python's (``janus.lowering.truth.known_truth``).
  A ``while`` test is not folded: a loop bounded by a large constant would unroll in Python.
* A tensor computed from fed tensor inputs (integer or boolean, at most
  ``config.LIMITS.max_known_elements`` elements) through stateless ops only, whose value Python needed or
  an ``if`` tested, is *wanted*: if the trace then fails, :class:`TensorValuesKept` makes
  the next trace specialize those inputs by value (a constant in the graph, guarded by
  dtype, shape and elements), so that the number is known.  The policy stops specializing
  an input whose value keeps changing (``janus.driver.policy``): then the statement that
  needs the number is a graph break.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import tensorflow as tf

from janus import _tf_private, config
from janus.errors import ConversionError, TensorValuesKept
from janus.trace.active import current
from janus.trace.sources import Source

if TYPE_CHECKING:
    from janus.trace.heap import HeapModel
    from janus.trace.speculation import Speculator

# stateless by TensorFlow's account, but running Python: never run while tracing
_PYTHON_OPS = frozenset({"PyFunc", "PyFuncStateless", "EagerPyFunc"})


class KnownValue:
    """A tensor's value the trace knows; ``numpy()`` is what eager's ``t.numpy()`` returns:
    a fresh array, or a NumPy scalar for rank 0."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = np.asarray(value)

    def numpy(self) -> Any:
        return self.value[()] if self.value.ndim == 0 else self.value.copy()


def specialize_wanted(heap: "HeapModel", speculator: "Speculator", error: Exception,
                      arrays: frozenset[Source]) -> None:
    """After a trace failed with ``error``: if Python needed values made of small integer
    tensor inputs (``heap.values_wanted``) that are not specialized yet, raise
    :class:`TensorValuesKept` with them (the next trace specializes them) (``arrays``:
    the NumPy arrays the trace fed, never specialized here)."""
    if isinstance(error, ConversionError) and not error.permanent:
        _specialize(heap, speculator, arrays)


def prefer_values(heap: "HeapModel", speculator: "Speculator", arrays: frozenset[Source]) -> None:
    """After a trace that succeeded with lists whose length the graph computes
    (``heap.graph_lists``, ``janus.lowering.graph_lists``): the values that drove them are
    specialized first, as after a failed trace, for graphs without conditionals over
    ``TensorList``s; once they change at every call (``speculator.never_values``) the
    general graph is kept."""
    if heap.graph_lists:
        _specialize(heap, speculator, arrays)


def _specialize(heap: "HeapModel", speculator: "Speculator", arrays: frozenset[Source]) -> None:
    wanted = {s: why for s, why in heap.values_wanted.items()
              if s not in speculator.tensor_values and s not in speculator.never_values
              and s not in arrays and s not in heap.state_arrays}
    if wanted:
        raise TensorValuesKept(wanted) from None


def may_specialize(value: Any) -> bool:
    """A tensor input small and discrete enough to be specialized by value."""
    return (value.dtype.is_integer or value.dtype == tf.bool) and value.shape.num_elements() is not None \
        and value.shape.num_elements() <= config.LIMITS.max_known_elements


def known_value(t: tf.Tensor) -> np.ndarray | None:
    """The value of graph tensor ``t`` if the trace can compute it (see the module), else None."""
    memo: dict[str, Any] = {}
    return _fold(t, memo)


def needed_value(t: tf.Tensor, what: str) -> np.ndarray | None:
    """The value of graph tensor ``t``, which Python needs (``what``: for what), if the trace
    knows it; else None, the inputs it is made of noted for a next trace to specialize."""
    value = known_value(t)
    if value is None:
        current().heap.want_value(t, what)
    return value


def _fold(t: tf.Tensor, memo: dict[str, Any]) -> np.ndarray | None:
    if t.name in memo:
        return memo[t.name]
    size = t.shape.num_elements()
    if len(memo) > config.LIMITS.max_fold_ops or size is None or size > config.LIMITS.max_folded_elements:
        return None
    memo[t.name] = None  # a cycle (none in a graph) or an unfinished visit folds nothing
    value = tf.get_static_value(t)
    op = t.op
    if value is None and op.inputs and not op.op_def.is_stateful and op.type not in _PYTHON_OPS:
        inputs = [_fold(i, memo) for i in op.inputs]
        if all(v is not None for v in inputs):
            outputs = _tf_private.run_op_eagerly(op, inputs)
            if outputs is not None:
                for out, v in zip(op.outputs, outputs):
                    memo[out.name] = v
                return memo[t.name]
    memo[t.name] = value
    return value


def fed_sources(t: tf.Tensor, placeholders: dict[str, Source]) -> set[Source] | None:
    """The inputs (by ``placeholders``: graph tensor name to source) whose values alone
    make ``t``'s, through stateless ops; None if anything else goes into it (a variable, a
    random op, a loop variable, a fed number)."""
    found: set[Source] = set()
    seen: set[str] = set()
    stack = [t]
    while stack:
        t = stack.pop()
        if t.name in seen:
            continue
        seen.add(t.name)
        if len(seen) > config.LIMITS.max_fold_ops:
            return None
        source = placeholders.get(t.name)
        if source is not None:
            found.add(source)
            continue
        op = t.op
        if op.type == "Placeholder" or op.op_def.is_stateful:
            return None
        stack += op.inputs
    return found or None


def fed_numbers(tensors: list[tf.Tensor], heap: "HeapModel", branches: dict[Any, tuple]) -> set[Source]:
    """The Python numbers fed to the graph (``heap.fed_scalars``) whose values alone make
    ``tensors``' — through stateless ops, across the captures of branch and loop body
    graphs; empty when anything else goes into them (a tensor input, a variable, a loop
    variable), since then specializing the numbers would not make the values known.  An
    output of a conditional whose branch graphs ``branches`` holds (its op -> the true and
    false graph) is made of its predicate and of that output of each side: a return flag
    set on one side is made of the predicate alone."""
    fed = {}
    for source in heap.fed_scalars:
        placeholder = heap.arg_inputs.get(source)
        if placeholder is None and source in heap.heap_inputs:
            placeholder = heap.heap_inputs[source].placeholder
        if isinstance(placeholder, tf.Tensor):
            fed[placeholder.ref()] = source
    found: set[Source] = set()
    seen: set = set()
    stack = list(tensors)
    while stack:
        t = stack.pop()
        if t.ref() in seen:
            continue
        seen.add(t.ref())
        if len(seen) > config.LIMITS.max_fold_ops:
            return set()
        if t.ref() in fed:
            found.add(fed[t.ref()])
            continue
        if t.op.type == "Placeholder":
            outer = _tf_private.captured_external(t)
            if outer is None:
                return set()
            stack.append(outer)
        elif t.op in branches:
            stack += [t.op.inputs[0]] + [graph.outputs[t.value_index] for graph in branches[t.op]]
        elif t.op.op_def.is_stateful:
            return set()
        else:
            stack += t.op.inputs
    return found
