"""What a ``tf.TensorArray`` the graph built needs to leave the graph as eager's.

Inside a graph a ``TensorArray`` is a ``TensorList`` (its ``flow``) that forgets what eager's
keeps: ``clear_after_read`` (eager clears an item it reads), the ``element_shape`` it was
made with (eager merges the shapes written into it), ``infer_shape``.  Converted code records
them where it constructs one (:class:`TensorArrayMade`, ``janus.lowering.tensor_arrays``), and
the packer (``janus.commit.packing``) rebuilds an eager ``TensorArray`` with them after the
run, or refuses when it cannot tell which settings, or what eager's reads cleared.

Inside the trace, :class:`ArrayModel` keeps what eager's ``TensorArray`` is and a graph's is
not: one mutable array (``write`` changes it in place, so every handle of it sees the write)
whose ``read`` clears the item (a second read raises, ``stack`` sees zeros there).  What the
trace cannot know — an array read or written inside a conditional or loop, then used after
it; an item read twice at indices the graph computes — fails the trace instead.
"""
from __future__ import annotations

from dataclasses import dataclass, field
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


def eager_tensor_array(flow: tf.Tensor, made: TensorArrayMade, shape_known: bool = False) -> tf.TensorArray:
    """The eager ``TensorArray`` of settings ``made`` holding the items of the ``TensorList``
    ``flow`` (an eager variant tensor).  ``shape_known``: ``made.element_shape`` is the one
    eager's array ended with, so the items go in as ``unstack`` puts them (no merging);
    otherwise they are written in order as eager wrote them (so its element shape merges
    theirs)."""
    length = int(tf.raw_ops.TensorListLength(input_handle=flow))
    ta = tf.TensorArray(made.dtype, size=length, dynamic_size=made.dynamic_size,
                        clear_after_read=made.clear_after_read, infer_shape=made.infer_shape,
                        element_shape=made.element_shape)
    shape = tf.raw_ops.TensorListElementShape(input_handle=flow, shape_type=tf.int32)
    try:
        items = tf.raw_ops.TensorListStack(input_handle=flow, element_dtype=made.dtype, element_shape=shape)
    except tf.errors.InvalidArgumentError:  # items of several shapes, or unwritten ones of an unknown shape
        return _written_one_by_one(ta, flow, shape, length, made.dtype)
    return ta.unstack(items) if shape_known and length else ta.scatter(tf.range(length), items)


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


WRITES = frozenset({"write", "unstack", "scatter", "split"})  # eager changes the array in place
FILLS = frozenset({"stack", "concat", "gather"})  # eager writes zeros where it had cleared an item


@dataclass
class Lineage:
    """One eager ``TensorArray``: the graph ``TensorArray`` objects that are its handles (all
    on its newest flow), and which items eager's reads cleared.

    ``cleared`` holds static indices read and not written since, ``read_at`` the index tensors
    of reads at indices the graph computes; ``unsure`` says a write at a computed index made
    them incomplete; ``carried``: the trace
    met it as a loop's or branch's input, so items read before (in an earlier iteration) are
    unknown; ``written`` the indices (values, or the index tensors) written in this trace;
    ``spoiled`` why it can no longer be used (read or written inside a nested graph)."""

    handles: list
    clears: bool | None  # clear_after_read; None: not known yet
    carried: bool
    shape: tf.TensorShape | None = None  # eager's element shape (its zeros' shape); None: unknown
    infers: bool = False  # infer_shape: a write merges its item's shape into ``shape``
    merged: bool = False  # a write merged an item's shape (whose run-time dims the trace may not know)
    cleared: set = field(default_factory=set)
    read_at: list = field(default_factory=list)  # index tensors read (and so cleared) at indices the graph computes
    written: set = field(default_factory=set)
    unsure: bool = False
    spoiled: str | None = None


class ArrayModel:
    """The eager ``TensorArray`` each graph ``TensorArray`` of a trace stands for."""

    def __init__(self) -> None:
        self._of: dict[int, Lineage] = {}

    def made(self, array: tf.TensorArray, made: TensorArrayMade) -> None:
        """``array`` was constructed by converted code with the settings ``made``."""
        shape = tf.TensorShape(made.element_shape) if made.given else None
        self._of[id(array)] = Lineage([array], made.clear_after_read if made.given else None,
                                      carried=False, shape=shape, infers=made.infer_shape)

    def lineage(self, array: tf.TensorArray) -> Lineage:
        """The eager array ``array`` is a handle of (a new one at first sight)."""
        found = self._of.get(id(array))
        if found is None or not any(h is array for h in found.handles):
            carried = array.flow.op.type == "Placeholder"
            found = self._of[id(array)] = Lineage([array], None, carried)
        return found

    def adopt(self, lineage: Lineage, array: tf.TensorArray, set_flow) -> None:
        """``array`` (a write's result) is the newest handle of ``lineage``: every handle
        moves to its flow, as eager's one object would have changed."""
        for handle in lineage.handles:
            if handle is not array:
                set_flow(handle, array.flow)
        if not any(h is array for h in lineage.handles):
            lineage.handles.append(array)
        self._of[id(array)] = lineage
