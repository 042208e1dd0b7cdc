"""Builtins whose meaning on graph values needs care, called in their place by converted code.

:data:`SPECIAL` maps a builtin (and ``tf.constant``, ``tf.autograph.trace``) to its shim:
``len`` of a tensor is its first dimension, ``range`` over a tensor bound a loop the graph
runs, ``bool``/``int``/``float`` of a tensor a Python number the graph computes, ``print``
a deferred effect, ``type`` and ``isinstance`` see the Python number a :class:`PyScalar`
stands for; what eager would answer differently (``str`` of a tensor the graph has not
computed, ``type`` of a graph tensor) fails the conversion.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Callable

import tensorflow as tf

from janus.commit.effects import Print
from janus.errors import ConversionError
from janus.reporting.codes import Code
from janus.lowering import dunders, graph_lists, state, tensor_arrays
from janus.lowering.loops import EnumeratedDataset, TensorRange
from janus.lowering.truth import to_bool
from janus.trace.active import current
from janus.trace.arrays import FedArray
from janus.trace.number_lists import FedList
from janus.trace import known_values
from janus.lowering.trees.forest_plan import NodeView
from janus.trace.scalars import PyOrTensor, PyScalar, is_symbolic
from janus.trace.values import SymbolicShape


def print_(*args: Any, sep: str | None = " ", end: str | None = "\n", file: Any = None, flush: bool = False) -> None:
    """``print``: replayed after the graph ran, with the values it computed."""
    if file is not None and file is not sys.stdout:
        raise ConversionError("print to a file other than stdout", permanent=True, code=Code.STRING_FORMAT)
    current().effect(Print(args, sep, end), "print")


def mod(left: Any, right: Any) -> Any:
    """``left % right``: string formatting of a graph tensor is refused."""
    if isinstance(left, (str, bytes)) and (is_symbolic(right) or isinstance(right, tuple) and any(map(is_symbolic, right))):
        raise ConversionError("formats a tensor into a string inside the graph", code=Code.STRING_FORMAT)
    if isinstance(left, (str, bytes)):
        for value in right if isinstance(right, tuple) else (right,):
            dunders.as_text(value, "% formatting")
    return left % right


def no_symbolic(fn: Callable) -> Callable:
    """``fn``, refusing a tensor or Python number the graph has not computed yet (and, for
    the formatting builtins, a user object whose text its own dunders compute)."""
    def check(*args: Any, **kwargs: Any) -> Any:
        if any(is_symbolic(a) or isinstance(a, PyScalar) for a in args):
            raise ConversionError(f"{fn.__name__}() of a tensor the graph has not computed yet", code=Code.TENSOR_VALUE)
        if fn in (str, repr, format):
            args = tuple(dunders.as_text(a, f"{fn.__name__}()") for a in args)
        return fn(*args, **kwargs)
    return check


def _range(*bounds: Any):
    if any(is_symbolic(b) or isinstance(b, PyScalar) for b in bounds):
        return TensorRange(*bounds)
    return range(*bounds)


def _len(x: Any) -> Any:
    if isinstance(x, graph_lists.GraphList):
        return graph_lists.length(x)
    if is_symbolic(x):
        if x.shape.rank is None or x.shape.rank == 0:
            raise ConversionError("len() of a tensor whose rank the graph does not know", code=Code.UNKNOWN_SHAPE)
        return x.shape[0] if x.shape[0] is not None else SymbolicShape.of(x)[0]
    return dunders.length(x)


def _enumerate(x: Any, start: int = 0) -> Any:
    if isinstance(x, tf.data.Dataset) and type(start) is int:
        return EnumeratedDataset(x, start)
    return enumerate(_iterable(x), start)


def _iterable(x: Any) -> Any:
    if isinstance(x, (tf.data.Dataset, tf.data.Iterator)):
        raise ConversionError("a dataset iterated other than by a for loop (list(), zip(), ...)", code=Code.DATASET)
    if is_symbolic(x):
        if x.shape.rank is None or x.shape.rank == 0 or x.shape[0] is None:
            raise ConversionError("iteration over a tensor whose length the graph does not know",
                                  code=Code.UNKNOWN_SHAPE)
        return tf.unstack(x)
    return dunders.iterate(x)


def _scalar(kind: type):
    """``bool(t)``, ``int(t)``, ``float(t)`` of a graph value: a Python scalar the graph computes."""
    def convert(x: Any = 0, *rest: Any) -> Any:
        if isinstance(x, PyScalar):
            return PyScalar.of(to_bool(x), bool) if kind is bool else PyScalar.of(x, kind)
        if kind is bool and not is_symbolic(x):
            x = dunders.truth_operand(x)
            if isinstance(x, PyScalar):
                return x
        if not is_symbolic(x):
            return dunders.number(x, kind) if not rest and kind is not bool else kind(x, *rest)
        if x.shape.rank == 0:
            value = known_values.needed_value(x, f"{kind.__name__}() of it")
            if value is not None:  # the number itself, as eager computes it
                return kind(value)
        if kind is bool:
            return PyScalar(to_bool(x), bool)
        if x.shape.num_elements() != 1:
            raise ConversionError(f"{kind.__name__}() of a non-scalar tensor", code=Code.TENSOR_VALUE)
        t = tf.reshape(x, [])
        if kind is int and not x.dtype.is_integer:
            t = tf.cast(t, tf.float64)
        return PyScalar.of(t, kind)
    return convert


def _constant(value: Any, dtype: Any = None, shape: Any = None, name: str = "Const") -> Any:
    """``tf.constant`` of Python numbers some of which the graph computes (a fed number,
    a node's field), possibly in nested lists: the tensor eager would make of them, built
    from the graph's values (a Python int is int32 and a float float32, as eager has them).
    Of a NumPy array the graph is fed (or a Python island returned), the tensor it is fed
    as, when no other dtype or shape is asked for: eager makes that same tensor of it; of a
    list of numbers fed as a tensor, the tensor eager makes of the list."""
    if isinstance(value, FedArray) and shape is None and (dtype is None or tf.as_dtype(dtype) == value.dtype):
        return tf.convert_to_tensor(value)
    if isinstance(value, FedList):  # tf.constant(rewards_sample), a list fed as a tensor
        return value.as_constant(dtype, shape, name)
    if not _has_py_scalar(value):
        return tf.constant(value, dtype, shape, name)
    dtype = tf.as_dtype(dtype) if dtype is not None else _inferred_dtype(value)
    tensor = _stacked(value, dtype)
    if shape is None:
        return tensor
    return tf.fill(shape, tensor) if tensor.shape.rank == 0 else tf.reshape(tensor, shape)


def _has_py_scalar(value: Any) -> bool:
    if isinstance(value, PyScalar):
        return True
    return type(value) in (list, tuple) and any(_has_py_scalar(v) for v in value)


def _inferred_dtype(value: Any) -> tf.DType:
    kinds: set = set()

    def walk(v: Any) -> None:
        if type(v) in (list, tuple):
            for x in v:
                walk(x)
        else:
            kinds.add(v.kind if isinstance(v, PyScalar) else type(v))

    walk(value)
    if not kinds <= {bool, int, float}:
        raise ConversionError(f"tf.constant of {sorted(k.__name__ for k in kinds)} the graph computes",
                              code=Code.TENSOR_VALUE)
    return tf.float32 if float in kinds else tf.int32 if int in kinds else tf.bool


def _stacked(value: Any, dtype: tf.DType) -> tf.Tensor:
    if type(value) in (list, tuple):
        return tf.stack([_stacked(v, dtype) for v in value]) if value else tf.constant(value, dtype)
    if isinstance(value, PyScalar):
        return value.__tf_tensor__(dtype)
    return tf.constant(value, dtype)


def _type(*args: Any) -> Any:
    if len(args) == 1 and type(args[0]) is NodeView:
        return args[0].__class__  # the node's class (now a test of its case)
    if len(args) == 1 and is_symbolic(args[0]):
        raise ConversionError("type() of a graph tensor differs from eager's EagerTensor", code=Code.TYPE_QUERY)
    if len(args) == 1 and isinstance(args[0], PyScalar):
        return args[0].kind  # the Python number's type, as eager has it
    if len(args) == 1 and isinstance(args[0], PyOrTensor):
        raise ConversionError("type() of a value that is a Python number or a tensor, depending on the path",
                              code=Code.TYPE_QUERY)
    return type(*args)


def _isinstance(obj: Any, classes: Any) -> bool:
    """``isinstance`` seeing the Python number a PyScalar stands for."""
    if isinstance(obj, PyScalar):
        return issubclass(obj.kind, classes)
    if isinstance(obj, PyOrTensor):
        raise ConversionError("isinstance() of a value that is a Python number or a tensor, depending on the path",
                              code=Code.TYPE_QUERY)
    return isinstance(obj, classes)


def _getattr(obj: Any, name: str, *default: Any) -> Any:
    try:
        return state.ld_attr(obj, name)
    except AttributeError:
        if default:
            return default[0]
        raise


def _hasattr(obj: Any, name: str) -> bool:
    ctx = current()
    if ctx is not None and ctx.source_of(obj) is not None and not isinstance(obj, tf.Module):
        raise ConversionError("hasattr() on Python state", code=Code.TYPE_QUERY)
    return hasattr(obj, name)


VIEW_CALLS = {isinstance, type, getattr}  # what may be asked of a tree node (see _type, _getattr)

SPECIAL = {
    tf.constant: _constant,
    tf.autograph.trace: print_,  # TensorFlow's own Python-level print of its arguments
    tf.TensorArray: tensor_arrays.construct,  # its settings recorded: it may leave the graph as eager's
    range: _range,
    len: _len,
    bool: _scalar(bool),
    int: _scalar(int),
    float: _scalar(float),
    str: no_symbolic(str),
    repr: no_symbolic(repr),
    format: no_symbolic(format),
    type: _type,
    isinstance: _isinstance,
    getattr: _getattr,
    hasattr: _hasattr,
    setattr: state.st_attr,
    enumerate: _enumerate,
    zip: lambda *xs, **k: zip(*(_iterable(x) for x in xs), **k),
    list: lambda *x: list(_iterable(x[0])) if x else [],
    tuple: lambda *x: tuple(_iterable(x[0])) if x else (),
    iter: lambda x, *a: iter(x, *a) if a or isinstance(x, (tf.data.Dataset, tf.data.Iterator)) else iter(_iterable(x)),
    reversed: lambda x: reversed(dunders.library_argument(reversed, _iterable(x) if is_symbolic(x) else x)),
    abs: lambda x: abs(x) if is_symbolic(x) or isinstance(x, (PyScalar, PyOrTensor)) else dunders.absolute(x),
    os.getenv: lambda key, default=None: state.module_attribute(current(), os, "environ").get(key, default),
    id: no_symbolic(id),
    vars: dunders.own_dict,
}
