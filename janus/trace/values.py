"""What kind a value is, and the values converted code handles besides numbers.

* :func:`is_symbolic`, :func:`is_eager_tensor`, :func:`is_framework_object`,
  :func:`is_user_class`: how a trace classifies what it reads;
* :data:`UNDEF`: a local that eager Python would not have bound yet;
* :class:`DeferredStr`: an f-string of values the graph computes, formatted after the run;
* :class:`SymbolicShape`: the shape of a graph tensor whose dimensions the graph computes.

The Python numbers a graph computes (:class:`~janus.trace.scalars.PyScalar`,
:class:`~janus.trace.scalars.PyOrTensor`) are :mod:`janus.trace.scalars`.
"""
from __future__ import annotations

import sys
import types
from typing import Any

import tensorflow as tf

from janus.convert import libraries
from janus.errors import ConversionError, UndefinedAttributeError, UndefinedValueError
from janus.reporting.codes import Code
from janus.trace.scalars import PyScalar, is_eager_tensor, is_symbolic  # noqa: F401 - is_symbolic: a kind of value too
from janus_profiler import usercode

SCALARS = (int, float, bool, str, bytes, complex, type(None))
FRAMEWORK_PREFIXES = ("tensorflow", "keras", "tf_keras", "numpy", "absl")


def is_framework_object(x: Any) -> bool:
    """Objects whose behaviour is TensorFlow's own (their state lives in variables)."""
    if isinstance(x, (tf.Variable, tf.Module, tf.keras.layers.Layer, tf.keras.optimizers.Optimizer)):
        return True
    mod = type(x).__module__ or ""
    return mod.split(".")[0] in FRAMEWORK_PREFIXES


COMPOSITES = (tf.RaggedTensor, tf.SparseTensor, tf.experimental.ExtensionType, tf.distribute.DistributedValues)


def is_eager_composite(x: Any) -> bool:
    """A ``RaggedTensor``, ``SparseTensor``, ``ExtensionType`` or ``tf.distribute`` value
    (``PerReplica``) made of eager tensors: an input fed to the graph through its
    ``TypeSpec`` (distributed variables are variables, used as they are)."""
    if not isinstance(x, COMPOSITES) or isinstance(x, tf.Variable):
        return False
    parts = tf.nest.flatten(x, expand_composites=True)
    return bool(parts) and all(is_eager_tensor(t) for t in parts)


def is_dataset_iterator(x: Any) -> bool:
    """A ``tf.data`` iterator made eagerly (``iter(dataset)``): fed to the graph through its
    ``TypeSpec``, its ``get_next`` in the graph advancing the caller's iterator (other
    iterators, ``iter(list)`` or a generator, are Python's: a trace would consume them)."""
    if not isinstance(x, tf.data.Iterator):
        return False
    parts = tf.nest.flatten(x, expand_composites=True)  # [x] itself unless a composite of tensors
    return bool(parts) and all(is_eager_tensor(t) for t in parts)


def is_graph_composite(x: Any) -> bool:
    return isinstance(x, (tf.RaggedTensor, tf.SparseTensor)) and not is_eager_composite(x)


def is_user_class(cls: type) -> bool:
    """A class of the user's program: defined in user code (``janus_profiler.usercode``), or
    in a module whose code Janus converts (``janus.allow``): its objects' attributes are
    read and written as the user's are."""
    mod = cls.__module__ or ""
    if mod == "builtins" or mod.split(".")[0] in FRAMEWORK_PREFIXES:
        return False
    filename = getattr(sys.modules.get(mod), "__file__", None)
    return filename is None or usercode.is_user_file(filename) or libraries.is_allowed_module(mod)


def is_plain_callable(x: Any) -> bool:
    """Functions, modules, classes: read by identity, never copied."""
    return isinstance(x, (types.FunctionType, types.ModuleType, type))


class Undefined:
    """Value of a local that eager Python would not have bound yet."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<undefined>"

    def _fail(self, *args, **kwargs):
        raise UndefinedValueError("a variable is read before it is assigned")

    def __getattr__(self, name: str) -> Any:
        raise UndefinedAttributeError("a variable is read before it is assigned")

    __bool__ = __call__ = __getitem__ = __iter__ = __len__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = __neg__ = __str__ = __format__ = __index__ = _fail


UNDEF = Undefined()


class Field:
    """One ``{value!conversion:spec}`` of an f-string."""

    __slots__ = ("value", "conversion", "spec")

    def __init__(self, value: Any, conversion: int, spec: Any):
        self.value, self.conversion, self.spec = value, conversion, spec

    def render(self, value: Any) -> str:
        if self.conversion == ord("r"):
            value = repr(value)
        elif self.conversion == ord("s"):
            value = str(value)
        elif self.conversion == ord("a"):
            value = ascii(value)
        return format(value, str(self.spec))


class DeferredStr:
    """An f-string with fields the graph computes; formatted after the run (for print)."""

    __slots__ = ("parts",)

    def __init__(self, parts: tuple):
        self.parts = parts

    def render(self, values: list) -> str:
        it = iter(values)
        return "".join(p if isinstance(p, str) else p.render(next(it)) for p in self.parts)

    def _concrete(self, *args: Any, **kwargs: Any):
        raise ConversionError("uses a string formatted from values the graph has not computed yet",
                              code=Code.STRING_FORMAT)

    __str__ = __repr__ = __add__ = __radd__ = __len__ = __eq__ = __hash__ = __iter__ = __format__ = _concrete
    __getitem__ = __contains__ = __mod__ = __mul__ = _concrete


def _partitions(ragged: tf.RaggedTensor) -> list:
    out = []
    while isinstance(ragged, tf.RaggedTensor):
        out.append(ragged)
        ragged = ragged.values
    return out


class SymbolicShape:
    """``x.shape`` of a graph tensor whose shape was relaxed: dimensions the graph knows
    are Python ints (the input's shape guard pins them); a relaxed dimension is a
    :class:`PyScalar` computed from ``tf.shape(x)``, so code that reads it (``n = x.shape[0]``,
    ``range(n)``, ``tf.zeros([n, 4])``, ``tf.reshape(x, [n * m, -1])``) stays one graph for
    every size.  Eager shapes are always fully known, and so is this one, at run time.
    """

    __slots__ = ("dims",)

    def __init__(self, dims: list):
        self.dims = dims

    @classmethod
    def of(cls, tensor: Any) -> "SymbolicShape":
        """The shape eager would report for ``tensor`` (a graph tensor, ``RaggedTensor`` or
        ``SparseTensor``): a ragged dimension is None, as in eager; every other dimension
        is known to eager, so one the graph does not know is computed."""
        static = tensor.shape
        if static.rank is None:
            raise ConversionError("reads the shape of a tensor whose rank the graph does not know",
                                  code=Code.UNKNOWN_SHAPE)
        dims = static.as_list()
        if isinstance(tensor, tf.SparseTensor):
            dynamic = tensor.dense_shape
            return cls([d if d is not None else PyScalar(dynamic[i], int) for i, d in enumerate(dims)])
        if isinstance(tensor, tf.RaggedTensor):
            if any(p.uniform_row_length is not None for p in _partitions(tensor)):
                raise ConversionError("reads the shape of a ragged tensor with uniform row lengths",
                                      code=Code.UNKNOWN_SHAPE)
            ragged = tensor.ragged_rank
            inner = tf.shape(tensor.flat_values, out_type=tf.int64)

            def dim(i: int, d: int | None) -> Any:
                if d is not None or 0 < i <= ragged:  # known, or ragged (None in eager too)
                    return d
                if i == 0:
                    return PyScalar(tensor.nrows(out_type=tf.int64), int)
                return PyScalar(inner[i - ragged], int)

            return cls([dim(i, d) for i, d in enumerate(dims)])
        dynamic = tf.shape(tensor, out_type=tf.int64)
        return cls([d if d is not None else PyScalar(dynamic[i], int) for i, d in enumerate(dims)])

    @property
    def rank(self) -> int:
        return len(self.dims)

    ndims = rank

    def __len__(self) -> int:
        return len(self.dims)

    def __iter__(self):
        return iter(self.dims)

    def __getitem__(self, key):
        if isinstance(key, slice):
            return SymbolicShape(self.dims[key])
        return self.dims[key]

    def as_list(self) -> list:
        return list(self.dims)

    def is_fully_defined(self) -> bool:
        return True

    def num_elements(self):
        total = 1
        for d in self.dims:
            total = d * total
        return total

    def _concrete(self, *args, **kwargs):
        raise ConversionError("uses a shape the graph computes where Python needs its value", code=Code.UNKNOWN_SHAPE)

    __eq__ = __ne__ = __hash__ = __str__ = __repr__ = __format__ = __bool__ = _concrete

    def __getattr__(self, name: str):
        raise ConversionError(f"TensorShape.{name} of a shape the graph computes", code=Code.UNKNOWN_SHAPE)
