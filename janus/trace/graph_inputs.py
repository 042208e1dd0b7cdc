"""The values a trace feeds into its graph at every call, read by :class:`~janus.trace.heap.HeapModel`.

A tensor argument is a placeholder of the concrete function; a tensor, a composite tensor,
a NumPy array, a dataset or an iterator read from Python state (an attribute, a global, a
closure cell) is captured *at call time*: a placeholder fed by the guard namespace's getter
of its source at every call, so the graph never holds a stale constant of it.  A small
integer tensor the policy specializes by value is a constant instead (``janus.trace.known_values``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import tensorflow as tf

from janus import _tf_private
from janus.trace import known_values
from janus.trace.active import CALL
from janus.trace.arrays import FedArray
from janus.trace.guards import fits_spec
from janus.trace.seeds import DATASET_RANDOM_OPS, STATEFUL_RANDOM_OPS
from janus.trace.sources import Source


@dataclass
class HeapInput:
    """A tensor, a fed Python number, a dataset or an iterator read from Python state, fed
    into the graph at every call."""

    source: Source
    spec: tf.TypeSpec
    placeholder: tf.Tensor | None = None


class GraphInputs:
    """The graph-input readers of :class:`~janus.trace.heap.HeapModel` (a base class of it:
    they use its fields, ``guard_set``, ``arg_inputs``, ``heap_inputs`` and the others)."""

    def _tensor_input(self, value: tf.Tensor, source: Source) -> tf.Tensor:
        if source in self.tensor_values and known_values.may_specialize(value):
            # a constant of the graph, which the trace knows (janus.trace.known_values)
            self.guard_set.equals_tensor(source, value)
            with self.outer_graph.as_default():
                return tf.constant(value.numpy(), value.dtype)
        spec = self.arg_specs.get(source) or tf.TensorSpec(self.heap_shapes.get(source, value.shape), value.dtype)
        self.guard_set.tensor(source, value.dtype, tuple(spec.shape.as_list()))
        if source in self.arg_inputs:
            return self.arg_inputs[source]
        return self._call_time_input(source, spec)

    def want_value(self, t: tf.Tensor, what: str) -> None:
        """The trace needs graph tensor ``t``'s value (``what``: for what): note the small
        integer tensor inputs it is made of, which a next trace may specialize by value."""
        placeholders = {ph.name: self._read_from.get(id(ph), s)  # the source as the trace named it
                        for s, ph in self.arg_inputs.items() if isinstance(ph, tf.Tensor)}
        placeholders.update((h.placeholder.name, s) for s, h in self.heap_inputs.items()
                            if isinstance(h.placeholder, tf.Tensor))  # not a dataset's or an iterator's
        sources = known_values.fed_sources(t, placeholders) or set()
        specs = self.arg_specs | {s: h.spec for s, h in self.heap_inputs.items()}
        for source in sources:
            spec = specs.get(source)
            if isinstance(spec, tf.TensorSpec) and source not in self.fed_scalars and known_values.may_specialize(spec):
                self.values_wanted.setdefault(source, what)

    def _array_input(self, value: np.ndarray | np.generic, source: Source) -> FedArray:
        """A NumPy array argument fed to the graph: guarded on dtype and shape, seen as a
        :class:`FedArray` while only TensorFlow reads it (``janus.trace.arrays``)."""
        dims = tuple(self.arg_specs[source].shape.as_list())
        self.guard_set.array(source, value, dims)
        self._read_from[id(self.arg_inputs[source])] = source
        return FedArray(self.arg_inputs[source], value, dims, source, self.arrays_read)

    def _state_array_input(self, value: np.ndarray | np.generic, source: Source) -> FedArray:
        """A NumPy array of Python state (``env.state``, ``self.mean``), fed at every call like
        an argument's, guarded on dtype and shape: its values may change between calls.  Read
        as NumPy, it is a value in the next trace (``janus.trace.arrays``)."""
        dims = tuple(value.shape)
        self.guard_set.array(source, value, dims)
        placeholder = self._call_time_input(source, tf.TensorSpec(dims, tf.as_dtype(value.dtype)))
        self.state_arrays.add(source)
        return FedArray(placeholder, value, dims, source, self.arrays_read)

    def _composite_input(self, value: Any, source: Source) -> Any:
        """A ``RaggedTensor``, ``SparseTensor`` or ``ExtensionType``: fed through its
        ``TypeSpec`` at every call (the spec widened where sizes changed, as a tensor's
        shape is relaxed), never captured as a constant."""
        spec = self.composite_specs.get(source)
        if spec is None or not fits_spec(value, spec):
            spec = tf.type_spec_from_value(value)
        self.guard_set.composite(source, value, spec)
        return self._call_time_input(source, spec)

    def _call_time_input(self, source: Source, spec: tf.TypeSpec) -> Any:
        """The graph's placeholder for the value at ``source``, fed at every call."""
        existing = self.heap_inputs.get(source)
        if existing is not None:
            return existing.placeholder
        hi = HeapInput(source, spec)
        hi.placeholder = _capture_at_call_time(self, hi)
        self.heap_inputs[source] = hi
        return hi.placeholder

    def _dataset_input(self, value: tf.data.Dataset, source: Source) -> Any:
        """A dataset: fed to the graph through its ``DatasetSpec`` at every call, so any
        dataset with the same element structure runs the same graph (iterating it in the
        graph starts a new iterator, as eager's ``for`` does)."""
        spec = tf.data.DatasetSpec(value.element_spec)
        if _tf_private.dataset_op_types(value) & (DATASET_RANDOM_OPS | STATEFUL_RANDOM_OPS):
            self.random_datasets.append(source.label)
        self.guard_set.dataset(source, value.element_spec)
        return self._call_time_input(source, spec)

    def _iterator_input(self, value: tf.data.Iterator, source: Source) -> tf.data.Iterator:
        """A ``tf.data`` iterator: fed through its ``TypeSpec`` at every call, so any iterator
        of the same element structure runs the same graph.  Its ``get_next`` in the graph
        advances the caller's iterator, a state write (``janus.trace.atomicity``); returned
        or stored, it is the caller's object again."""
        self.guard_set.iterator(source, value)
        placeholder = self._call_time_input(source, tf.type_spec_from_value(value))
        if source not in self.fed_iterators:
            self.fed_iterators.append(source)
        self.track(placeholder, source)
        return placeholder


def _capture_at_call_time(heap: Any, hi: HeapInput) -> Any:
    getter = heap.guard_set.getter(hi.source)

    def closure():
        return getter(*CALL.args)

    return _tf_private.call_time_input(heap.outer_graph, closure, hi.spec, key=hi.source.expr)
