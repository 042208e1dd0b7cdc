"""Own lists in converted code: copies per block, and lists whose length the graph computes.

A block function (an ``if`` side, a loop body) that changes an own list of its function
(``janus.convert.analysis.own_lists``: a local list nothing else can see) starts with
``_jn.own_lists(...)``: it works on copies and hands them back.  Both sides of a tensor
conditional are traced, each on its own copy, so neither sees the other's changes; the
trace lets a body change only lists it made (``EffectLog.may_change``).

When the two sides leave an own list at different lengths (a shift-reduce parser's stack
under ``if transition == SHIFT``), the conditional cannot carry it as a Python list of
tensors: it becomes a :class:`GraphList`, a ``TensorList`` of tensors of one dtype and
shape whose length the graph computes (``janus.lowering.reconcile``).  Appending, popping the
last item, indexing, assigning an item and ``len`` work on it in the graph, and a tensor
``while`` loop carries it.  An index out of range, where eager raises ``IndexError``, is a
``list_index`` check: the run aborts, eager runs the call, and the graph stays while such
calls are rarer than the others (``janus.driver.aborted``).  Anything else a list can do
fails the conversion.
"""
from __future__ import annotations

from typing import Any, Sequence

import tensorflow as tf

from janus.errors import ConversionError
from janus.reporting.codes import Code
from janus.lowering.checks import assertion
from janus.trace.active import current
from janus.trace.scalars import PyScalar, converted_line
from janus.trace.values import is_symbolic
from janus.trace import speculation

_RAW = tf.raw_ops


def own_lists(*values: Any) -> tuple:
    """The block's own copies of the own lists it changes (other values as they are)."""
    copies = tuple(list(v) if type(v) is list else v.copy() if isinstance(v, GraphList) else v for v in values)
    ctx = current()
    if ctx is not None:
        for copy, value in zip(copies, values):
            if copy is not value:
                ctx.log.own(copy)
    return copies


class GraphList:
    """A list of tensors of one dtype and shape whose length the graph computes."""

    __slots__ = ("handle", "dtype", "shape")

    def __init__(self, handle: tf.Tensor, dtype: tf.DType, shape: tuple):
        self.handle, self.dtype, self.shape = handle, dtype, shape

    @classmethod
    def of(cls, items: Sequence[Any], dtype: tf.DType, shape: tuple) -> "GraphList":
        """A Python list of tensors as a GraphList (in the graph being built)."""
        current().heap.graph_lists += 1
        if items:
            handle = _RAW.TensorListFromTensor(tensor=tf.stack(list(items)), element_shape=_shape(shape))
        else:
            handle = _RAW.EmptyTensorList(element_shape=_shape(shape), max_num_elements=-1, element_dtype=dtype)
        return cls(handle, dtype, shape)

    def copy(self) -> "GraphList":
        return GraphList(self.handle, self.dtype, self.shape)

    def spec(self) -> tuple:
        return self.dtype, self.shape

    def length(self) -> tf.Tensor:
        return _RAW.TensorListLength(input_handle=self.handle)

    def append(self, value: Any) -> None:
        self._may_change("append")
        self.handle = _RAW.TensorListPushBack(input_handle=self.handle, tensor=self._item(value))

    def pop(self, index: Any = -1) -> tf.Tensor:
        self._may_change("pop")
        if not (type(index) is int and index == -1):
            raise ConversionError("list.pop of an item other than the last on a list whose length the graph computes",
                                  code=Code.GRAPH_LIST)
        with tf.control_dependencies([self._in_range(self.length() - 1)]):
            self.handle, item = _RAW.TensorListPopBack(input_handle=self.handle, element_shape=_shape(self.shape),
                                                       element_dtype=self.dtype)
        item.set_shape(self.shape)  # every item has it; the op's shape function does not know
        return item

    def __getitem__(self, index: Any) -> tf.Tensor:
        position = self._position(index)
        item = _RAW.TensorListGetItem(input_handle=self.handle, index=position, element_shape=_shape(self.shape),
                                      element_dtype=self.dtype)
        item.set_shape(self.shape)
        return item

    def __setitem__(self, index: Any, value: Any) -> None:
        self._may_change("item assignment")
        position = self._position(index)
        self.handle = _RAW.TensorListSetItem(input_handle=self.handle, index=position, item=self._item(value))

    def _may_change(self, what: str) -> None:
        ctx = current()
        if ctx is not None and not ctx.log.may_change(self):
            raise ConversionError(f"list.{what} inside tensor-dependent control flow on a list it did not copy",
                                  code=Code.GRAPH_LIST)

    def _item(self, value: Any) -> tf.Tensor:
        if not is_symbolic(value) or value.dtype != self.dtype or _dims(value) != self.shape:
            raise ConversionError(f"puts a {_describe(value)} in a list of {self.dtype.name}{list(self.shape)} "
                                  "tensors whose length the graph computes", code=Code.GRAPH_LIST)
        return value

    def _position(self, index: Any) -> tf.Tensor:
        """The item ``index`` names (negative from the end), asserted to be in the list."""
        length = self.length()
        if isinstance(index, PyScalar) and index.kind is int:
            index = tf.cast(index.tensor, tf.int32)
            position = tf.where(index < 0, index + length, index)
        elif type(index) is int:
            position = index + length if index < 0 else tf.constant(index)
        else:
            raise ConversionError(f"indexes a list whose length the graph computes with a {type(index).__name__}",
                                  code=Code.GRAPH_LIST)
        with tf.control_dependencies([self._in_range(position)]):
            return tf.identity(position)

    def _in_range(self, position: tf.Tensor) -> Any:
        """An assertion that ``position`` is an item of the list (eager raises IndexError)."""
        where, line, text = converted_line()
        assumption = current().checks.check(speculation.LIST_INDEX, None, line, where=where, detail=text)
        return assertion(tf.logical_and(position >= 0, position < self.length()), assumption.message, assumption)

    def __len__(self) -> int:
        raise ConversionError("len() of a list whose length the graph computes, where Python needs an int",
                              code=Code.GRAPH_LIST)

    def __iter__(self):
        raise ConversionError("iterates over a list whose length the graph computes", code=Code.GRAPH_LIST)

    def __bool__(self) -> bool:
        raise ConversionError("the truth of a list whose length the graph computes", code=Code.GRAPH_LIST)

    def __getattr__(self, name: str) -> Any:
        if hasattr(list, name):
            raise ConversionError(f"list.{name} on a list whose length the graph computes", code=Code.GRAPH_LIST)
        raise AttributeError(name)


def length(value: GraphList) -> PyScalar:
    """``len()`` of a GraphList: a Python int the graph computes."""
    return PyScalar(value.length(), int)


def common_spec(values: Sequence[Any], name: str) -> tuple[tf.DType, tuple]:
    """The one dtype and shape of the items of ``values`` (lists and GraphLists), the spec of
    the GraphList they become; ConversionError if they have none."""
    specs = set()
    for value in values:
        if isinstance(value, GraphList):
            specs.add(value.spec())
            continue
        for item in value:
            if not is_symbolic(item) or item.shape.rank is None:
                raise ConversionError(f"{name} changes length in tensor-dependent control flow and holds a "
                                      f"{_describe(item)}", code=Code.GRAPH_LIST)
            specs.add((item.dtype, _dims(item)))
    if len(specs) != 1:
        raise ConversionError(f"{name} changes length in tensor-dependent control flow and holds tensors of "
                              f"several dtypes or shapes ({len(specs) or 'no'} kinds)", code=Code.GRAPH_LIST)
    return specs.pop()


def _dims(value: Any) -> tuple | None:
    return tuple(value.shape.as_list()) if value.shape.rank is not None else None


def _shape(shape: tuple) -> tf.Tensor:
    return tf.constant([-1 if d is None else d for d in shape], tf.int32)


def _describe(value: Any) -> str:
    if is_symbolic(value):
        return f"{value.dtype.name}{value.shape} tensor"
    return type(value).__name__
