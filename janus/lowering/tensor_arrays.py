"""``tf.TensorArray(...)`` and its methods in converted code, with eager's meaning.

A graph's ``TensorArray`` forgets the settings eager's keeps (``clear_after_read``, the
element shape it was made with); the trace records them (``janus.trace.tensor_array_state``) so
that an array leaving the graph — across a graph break, returned, stored — is rebuilt as
eager's (``janus.commit.packing``).  Its methods (:func:`method`) behave as eager's: a write
changes the one array every handle sees, a read clears the item (zeros for a later
``stack``; a second read is eager's error, so the trace fails and the call runs eagerly).
"""
from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import tensorflow as tf

from janus._tf_private import repeats_in_loop, set_tensor_array_flow
from janus.errors import ConversionError
from janus.reporting.codes import Code
from janus.trace import aborts
from janus.trace.active import current
from janus.trace.tensor_array_state import FILLS, WRITES, Lineage, TensorArrayMade, settings_of

_SIGNATURE = inspect.signature(tf.TensorArray.__init__)
_DEFAULTS = {"dynamic_size": False, "clear_after_read": True}  # eager's, where the signature says None


def construct(*args: Any, **kwargs: Any) -> tf.TensorArray:
    """``tf.TensorArray(*args, **kwargs)``, recorded in the trace in progress."""
    ta = tf.TensorArray(*args, **kwargs)
    ctx = current()
    if ctx is not None:
        given = _SIGNATURE.bind(None, *args, **kwargs)
        given.apply_defaults()
        made = _made(ta.dtype, given.arguments)
        ctx.tensor_arrays.append(made)
        ctx.arrays.made(ta, made)
    return ta


def method(array: tf.TensorArray, name: str, args: tuple, kwargs: dict) -> Any:
    """``array.name(*args, **kwargs)`` as eager's one mutable ``TensorArray`` would do it."""
    ctx = current()
    lineage = ctx.arrays.lineage(array)
    if lineage.spoiled is not None:
        raise ConversionError(f"uses a TensorArray after it was {lineage.spoiled}", code=Code.TENSOR_ARRAY)
    if array.flow.graph is not tf.compat.v1.get_default_graph():
        return _nested(lineage, array, name, args, kwargs)
    if name == "read":
        return _read(lineage, array, *args, **kwargs)
    if name in FILLS and (lineage.cleared or lineage.unsure or lineage.read_at) and \
            (lineage.shape is None or not lineage.shape.is_fully_defined()):
        raise ConversionError(f"{name}s a TensorArray with items a read cleared, of an element shape the trace "
                              "does not know fully (eager's zeros for them take it, or eager raises)",
                              code=Code.TENSOR_ARRAY)
    out = getattr(array, name)(*args, **kwargs)
    _account(lineage, name, *args, **kwargs)
    if isinstance(out, tf.TensorArray):
        ctx.arrays.adopt(lineage, out, set_tensor_array_flow)
    return out


def _nested(lineage: Lineage, array: tf.TensorArray, name: str, args: tuple, kwargs: dict) -> Any:
    """A method of an array made outside the conditional or loop body being traced: a write
    or a clearing read there cannot change the array outside, as eager's does, so the array
    is spoiled for any later use.  A clearing read inside a tensor loop may read one item in
    two iterations (eager raises; the graph cannot tell): the trace fails.  A read in a
    conditional's branch runs at most once: asserted not to be an item read before."""
    if name in WRITES:
        lineage.spoiled = "written inside a conditional or loop (eager changes it in place)"
    elif name == "read" and _clears(lineage, array):
        if lineage.unsure or repeats_in_loop(tf.compat.v1.get_default_graph(), array.flow.graph):
            raise ConversionError("reads a TensorArray made outside a tensor loop inside it: whether two "
                                  "iterations read one item (eager raises) is unknown (clear_after_read)",
                                  code=Code.TENSOR_ARRAY)
        _assert_not_read(lineage, _index(*args, **kwargs))
        lineage.spoiled = "read inside a conditional or loop (eager cleared the items it read)"
    return getattr(array, name)(*args, **kwargs)


def _read(lineage: Lineage, array: tf.TensorArray, *args: Any, **kwargs: Any) -> tf.Tensor:
    """``array.read(index)``: eager clears the item (``clear_after_read``); the graph writes
    zeros there, which a later ``stack``/``gather``/``concat`` sees as eager's does.  A read
    eager would refuse (the item read before) fails the trace when the indices are Python's,
    and is an assertion of the graph when it computes them (eager re-runs and raises)."""
    if not _clears(lineage, array):
        return array.read(*args, **kwargs)
    index = _index(*args, **kwargs)
    static = _static(index)
    if lineage.carried and not _was_written(lineage, index, static):
        raise ConversionError("reads a TensorArray a loop or conditional carries at an index not written in "
                              "this trace: whether eager cleared it before is unknown", code=Code.TENSOR_ARRAY)
    if static is not None and static in lineage.cleared:
        raise ConversionError(f"reads item {static} of a TensorArray a second time: eager raises "
                              "(clear_after_read)", code=Code.TENSOR_ARRAY)
    if lineage.unsure:
        raise ConversionError("reads a TensorArray again after a write at an index the graph computes: which "
                              "items eager had cleared is unknown (clear_after_read)", code=Code.TENSOR_ARRAY)
    if static is None or lineage.read_at:
        _assert_not_read(lineage, index)
    value = array.read(*args, **kwargs)
    current().arrays.adopt(lineage, array.write(index, tf.zeros_like(value)), set_tensor_array_flow)
    if static is None:
        lineage.read_at.append(index)
    else:
        lineage.cleared.add(static)
    return value


def _assert_not_read(lineage: Lineage, index: Any) -> None:
    """An assertion of the graph that ``index`` is none of the items read (and not written
    since, as far as Python knows): eager raises on such a read, so the run aborts and the
    call re-runs eagerly."""
    before = [tf.cast(i, tf.int32) for i in lineage.read_at] + [tf.constant(i) for i in sorted(lineage.cleared)]
    if before:
        fresh = tf.reduce_all(tf.not_equal(tf.stack(before), tf.cast(index, tf.int32)))
        current().assert_that(fresh, f"{aborts.marker(aborts.CheckKind.USER_ASSERT)} a TensorArray item read twice")


def _account(lineage: Lineage, name: str, *args: Any, **kwargs: Any) -> None:
    """What method ``name`` did to the items eager's reads had cleared."""
    if name in ("unstack", "split"):  # every item new
        lineage.cleared.clear()
        lineage.written.clear()
        lineage.read_at.clear()
        lineage.unsure = lineage.carried = False
    elif name in FILLS and name != "gather":  # eager wrote zeros in every cleared item
        lineage.cleared.clear()
        lineage.read_at.clear()
        lineage.unsure = False
    elif name in ("write", "scatter", "gather"):
        indices = args[0] if args else kwargs.get("index", kwargs.get("indices"))
        if name != "gather":
            _merge_shape(lineage, name, args[1] if len(args) > 1 else kwargs.get("value"))
        static = _static(indices)
        items = ([static] if name == "write" else list(static)) if static is not None else None
        if items is None:
            lineage.unsure = lineage.unsure or (name != "gather" and bool(lineage.cleared or lineage.read_at))
            if name == "write" and isinstance(indices, tf.Tensor):
                lineage.written.add(indices.ref())
            return
        lineage.cleared.difference_update(items)
        if name != "gather":
            lineage.written.update(items)


def _merge_shape(lineage: Lineage, name: str, value: Any) -> None:
    """Eager's ``infer_shape``: a write (each item of a scatter) merges its shape into the
    array's element shape, the shape of the zeros it gives for a cleared item."""
    if lineage.infers and lineage.shape is not None:
        shape = tf.TensorShape(getattr(value, "shape", None))
        if name == "scatter":
            shape = shape[1:] if shape.rank else tf.TensorShape(None)
        lineage.shape = lineage.shape.merge_with(shape) if shape.is_compatible_with(lineage.shape) else None
        lineage.merged = True


def _clears(lineage: Lineage, array: tf.TensorArray) -> bool:
    """Whether eager's array clears the items it reads (its settings, as the trace knows them)."""
    if lineage.clears is None:
        lineage.clears = settings_of(array, current().tensor_arrays, "a TensorArray it reads").clear_after_read
    return lineage.clears


def _index(index: Any, name: Any = None) -> Any:
    return index


def _static(index: Any) -> Any:
    """The index (an int, or a list of ints) as a Python value, or None if the graph computes it."""
    value = tf.get_static_value(index) if isinstance(index, tf.Tensor) else index
    if value is None:
        return None
    value = np.asarray(value)
    if value.dtype.kind not in "iu":  # a number the trace carries symbolically
        return None
    return int(value) if value.ndim == 0 else [int(v) for v in value.reshape(-1)]


def _was_written(lineage: Lineage, index: Any, static: Any) -> bool:
    """Whether this trace wrote item ``index`` of the array (by value, or the same index tensor)."""
    if static is not None:
        return static in lineage.written
    return isinstance(index, tf.Tensor) and index.ref() in lineage.written


def _made(dtype: tf.DType, arguments: dict) -> TensorArrayMade:
    """The settings of the call's ``arguments`` (eager's defaults for None)."""
    flags = [_DEFAULTS.get(name) if arguments[name] is None else arguments[name]
             for name in ("dynamic_size", "clear_after_read", "infer_shape")]
    given = all(type(f) is bool for f in flags)
    try:
        shape = tf.TensorShape(arguments["element_shape"])
    except (TypeError, ValueError):  # a shape the graph computes
        shape, given = tf.TensorShape(None), False
    dims = tuple(shape.as_list()) if shape.rank is not None else None
    return TensorArrayMade(dtype, *(f is True for f in flags), dims, given)
