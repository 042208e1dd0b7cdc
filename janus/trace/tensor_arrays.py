"""What a ``tf.TensorArray`` the graph built needs to leave the graph as eager's.

Inside a graph a ``TensorArray`` is a ``TensorList`` (its ``flow``) that forgets what eager's
keeps: ``clear_after_read`` (eager clears an item it reads), the ``element_shape`` it was
made with (eager merges the shapes written into it), ``infer_shape``.  Converted code records
them where it constructs one (:class:`TensorArrayMade`, ``janus.runtime.tensor_arrays``), and
the packer (``janus.commit.packing``) rebuilds an eager ``TensorArray`` with them after the
run, or refuses when it cannot tell which settings, or what eager's reads cleared.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import tensorflow as tf

from janus.errors import ConversionError
from janus.reporting.codes import Code

READ_OPS = frozenset({"TensorListGetItem"})  # TensorArray.read: eager clears the item (clear_after_read)


@dataclass(frozen=True)
class TensorArrayMade:
    """The settings of one ``tf.TensorArray(...)`` converted code constructed; ``given``:
    they were Python values (an array of settings the graph computes cannot leave it)."""

    dtype: tf.DType
    dynamic_size: bool
    clear_after_read: bool
    infer_shape: bool
    element_shape: tuple | None  # None: the rank is unknown
    given: bool = True


def settings_of(value: tf.TensorArray, made: Iterable[TensorArrayMade], what: str) -> TensorArrayMade:
    """The settings ``value`` was constructed with, as far as the trace can tell: the one
    kind of array of its dtype and ``dynamic_size`` the trace made (ConversionError if it
    made none, made several kinds, or one with settings that are not Python values)."""
    kinds = {m for m in made if m.dtype == value.dtype and m.dynamic_size == bool(value.dynamic_size)}
    if not kinds:
        raise ConversionError(f"{what} is a TensorArray library code made inside the graph: its eager settings "
                              "are unknown", permanent=True, code=Code.GRAPH_LIST)
    if len(kinds) > 1:
        raise ConversionError(f"{what} is one of TensorArrays made with different settings inside the graph: "
                              "which eager one it is is unknown", permanent=True, code=Code.GRAPH_LIST)
    settings = kinds.pop()
    if not settings.given:
        raise ConversionError(f"{what} is a TensorArray whose settings are computed inside the graph", permanent=True,
                              code=Code.GRAPH_LIST)
    return settings


def reads_items(graph: Any) -> bool:
    """Whether ``graph``, or a function it calls (a loop's body), reads an item of a
    ``TensorList``: an eager ``TensorArray`` with ``clear_after_read`` would have cleared it."""
    if any(op.type in READ_OPS for op in graph.get_operations()):
        return True
    return any(node.op in READ_OPS for f in graph.as_graph_def().library.function for node in f.node_def)


def eager_tensor_array(flow: tf.Tensor, made: TensorArrayMade) -> tf.TensorArray:
    """The eager ``TensorArray`` of settings ``made`` holding the items of the ``TensorList``
    ``flow`` (an eager variant tensor), written in order as eager wrote them (so that its
    element shape merges theirs)."""
    length = int(tf.raw_ops.TensorListLength(input_handle=flow))
    ta = tf.TensorArray(made.dtype, size=length, dynamic_size=made.dynamic_size,
                        clear_after_read=made.clear_after_read, infer_shape=made.infer_shape,
                        element_shape=made.element_shape)
    shape = tf.raw_ops.TensorListElementShape(input_handle=flow, shape_type=tf.int32)
    try:
        items = tf.raw_ops.TensorListStack(input_handle=flow, element_dtype=made.dtype, element_shape=shape)
    except tf.errors.InvalidArgumentError:  # items of several shapes, or unwritten ones of an unknown shape
        return _written_one_by_one(ta, flow, shape, length, made.dtype)
    return ta.scatter(tf.range(length), items)


def _written_one_by_one(ta: tf.TensorArray, flow: tf.Tensor, shape: tf.Tensor, length: int,
                        dtype: tf.DType) -> tf.TensorArray:
    """``ta`` with each item of ``flow`` written; an item never written, of a shape the list
    does not know, left unwritten (as in eager)."""
    for i in range(length):
        try:
            item = tf.raw_ops.TensorListGetItem(input_handle=flow, index=i, element_shape=shape, element_dtype=dtype)
        except tf.errors.InvalidArgumentError:
            continue
        ta = ta.write(i, item)
    return ta
