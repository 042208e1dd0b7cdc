"""NumPy arrays among the arguments, fed to the graph like tensors while only TensorFlow reads them.

A numeric ``np.ndarray`` argument (bool, int, uint, float, complex; alone or inside the
arguments' tuples, lists and dicts) is a graph input guarded on dtype and shape and
converted to a tensor of its own dtype at every call, as ``tf.function`` treats NumPy
inputs: a loop over minibatches ``x[i:i + 16]`` runs one graph.  A NumPy scalar
(``np.float32(0.5)``, what ``np.percentile`` or ``np.mean`` return) is fed the same way,
guarded on its type: a statistic computed in Python between two graph segments changes
at every call.  Converted code sees a
:class:`FedArray`, a stand-in that TensorFlow converts to that input (the tensor
conversion registry) and that answers what the shape guard fixes: ``shape``, ``dtype``,
``ndim``, ``size``, ``len()``, ``isinstance(x, np.ndarray)``.

Eager hands the array itself to the code.  Arithmetic and comparisons with a number or
another fed array (``x > 0``, ``(1 + clip) * x``, ``np.where``) are NumPy's, computed by the
graph where its bits are NumPy's (``janus.trace.numpy_semantics``).  Where the code does
something else only NumPy or Python can do with it — read its values (``x.mean()``,
``np.sum(x)``, ``x[0] > 0``, a ``for`` over its rows, ``print``), write into it
(``x[0] = 1``, ``x.fill(0)``, ``x += 1``), convert it to another dtype (NumPy would cast; a
tensor input would not), hash, return or store it — the stand-in is *read as NumPy*: it marks its
source and raises.  The mark is sticky (library code that catches the error cannot hide the
use); the trace fails and the argument is traced again as a Python value, guarded by value
(``janus.graphs.tracing``), which the function's policy remembers.  An operator between the
array and a tensor or variable is the tensor's, as in eager (NumPy defers to it).
``type(x)`` and ``id(x)`` would tell the stand-in from eager's array: a trace that calls
either builtin keeps every array a value.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import tensorflow as tf

from janus.errors import ConversionError
from janus.reporting.codes import Code
from janus.trace import numpy_semantics
from janus.trace.active import current
from janus.trace.scalars import PyScalar, is_symbolic
from janus.trace.sources import Source
from janus.trace.values import SymbolicShape

# NumPy dtypes a fed array may have: TensorFlow makes a tensor of the same dtype of each.
FED_DTYPES = frozenset(np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, np.float32, np.float64, np.complex64, np.complex128))

# NumPy scalar types fed like 0-d arrays (``np.float32``, ``np.int64``, ``np.bool_``, ...).
FED_SCALAR_TYPES = frozenset(d.type for d in FED_DTYPES)

_NDARRAY_NAMES = frozenset(dir(np.ndarray)).union(*(dir(t) for t in FED_SCALAR_TYPES))


def is_fed_array(value: Any) -> bool:
    """A NumPy array the graph may take as an input: exactly an ``ndarray`` of a numeric
    dtype in native byte order, or a NumPy scalar of such a dtype."""
    if type(value) in FED_SCALAR_TYPES:
        return True
    return type(value) is np.ndarray and value.dtype in FED_DTYPES and value.dtype.isnative


class ReadAsNumPy(ConversionError):
    """Converted code used fed arrays as NumPy arrays: they are traced again as Python values."""

    code = Code.TENSOR_VALUE

    def __init__(self, sources: dict[Source, str]):
        first, what = next(iter(sources.items()))
        super().__init__(f"{first.what} is read as a NumPy array ({what}): it is guarded by value")
        self.sources = dict(sources)


class FedArray:
    """What converted code sees for a NumPy array argument fed to the graph (see the module)."""

    __slots__ = ("_input", "_cls", "_dtype", "_dims", "_source", "_marks")

    def __init__(self, placeholder: tf.Tensor, value: np.ndarray | np.generic, dims: tuple, source: Source,
                 marks: dict[Source, str]):
        dtype = value.dtype
        object.__setattr__(self, "_input", placeholder)
        object.__setattr__(self, "_cls", type(value))  # np.ndarray, or the scalar's type
        object.__setattr__(self, "_dtype", dtype)
        object.__setattr__(self, "_dims", dims)  # the guarded shape; None where it varies
        object.__setattr__(self, "_source", source)
        object.__setattr__(self, "_marks", marks)  # the trace's record of arrays read as NumPy

    def read_as_numpy(self, what: str) -> None:
        """Mark this argument as used by NumPy or Python, and fail the trace."""
        self._marks.setdefault(self._source, what)
        raise ReadAsNumPy({self._source: what})

    @property
    def __class__(self) -> type:  # isinstance(x, np.ndarray) (or np.floating, float), as eager answers
        return self._cls

    @property
    def scalar_type(self) -> type | None:
        """The NumPy scalar type this stands for (``np.float32``, ...); None for an array."""
        return None if self._cls is np.ndarray else self._cls

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def ndim(self) -> int:
        return len(self._dims)

    @property
    def dims(self) -> tuple:
        """The shape the trace knows: None where it varies."""
        return self._dims

    def stand_in(self) -> np.ndarray | np.generic:
        """A value of this array's type, dtype and shape (the trace knows all three): a
        uniform distribution for floats (a valid ``p=``), zeros otherwise."""
        if self.scalar_type is not None:
            return self.scalar_type(0)
        size = int(np.prod(self._dims))
        fill = 1.0 / size if size and np.issubdtype(self._dtype, np.inexact) else 0
        return np.full(self._dims, fill, self._dtype)

    @property
    def shape(self) -> tuple:
        """Eager's tuple: a dimension that varies is a Python int the graph computes."""
        if None not in self._dims:
            return self._dims
        return tuple(SymbolicShape.of(self._input).dims)

    @property
    def size(self) -> Any:
        total = 1
        for d in self.shape:
            total = d * total
        return total

    @property
    def itemsize(self) -> int:
        return self._dtype.itemsize

    @property
    def nbytes(self) -> Any:
        return self.size * self._dtype.itemsize

    def __len__(self) -> int:
        if not self._dims:
            self.read_as_numpy("len() of a 0-d array or scalar")
        if self._dims[0] is None:  # not a value read: the trace is tried again with this call's shape
            raise ConversionError("len() of a NumPy array whose first dimension varies", code=Code.UNKNOWN_SHAPE)
        return self._dims[0]

    def __getattr__(self, name: str) -> Any:
        if name in _NDARRAY_NAMES:
            self.read_as_numpy(f".{name}")
        raise AttributeError(f"'numpy.{self._cls.__name__}' object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        self.read_as_numpy(f"sets .{name}")

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        self.read_as_numpy("converted by NumPy")

    def __repr__(self) -> str:
        self.read_as_numpy("repr()")


def _reads_values(what: str):
    """A method of :class:`FedArray` that needs the array's values (or its identity as an object)."""
    def read(self: FedArray, *args: Any, **kwargs: Any) -> Any:
        self.read_as_numpy(what)
    return read


def _operator(name: str):
    """A binary or unary operator of :class:`FedArray`: the tensor's own with a tensor or
    variable; NumPy's, computed by the graph, with numbers and fed arrays
    (``janus.trace.numpy_semantics``); read as NumPy otherwise (in place: eager changes
    the caller's array)."""
    def op(self: FedArray, *other: Any) -> Any:
        if other and isinstance(other[0], (tf.Tensor, tf.Variable)):
            return NotImplemented  # NumPy defers to the tensor's operator, which converts the array
        if name not in numpy_semantics.OPERATORS:
            self.read_as_numpy(f"operator {name}" + (f" with a {type(other[0]).__name__}" if other else ""))
        ufunc, reflected = numpy_semantics.OPERATORS[name]
        return _computed(numpy_semantics.compute, ufunc, (*other, self) if reflected else (self, *other))
    return op


for _name, _what in {"__str__": "str()", "__format__": "format()", "__bool__": "truth value", "__hash__": "hash()",
                     "__int__": "int()", "__float__": "float()", "__complex__": "complex()", "__index__": "as an index",
                     "__iter__": "iteration", "__contains__": "in", "__reversed__": "reversed()",
                     "__getitem__": "indexing", "__setitem__": "item assignment", "__delitem__": "item deletion",
                     "__invert__": "~x",
                     "__reduce__": "pickled", "__reduce_ex__": "pickled", "__copy__": "copied",
                     "__deepcopy__": "copied"}.items():
    setattr(FedArray, _name, _reads_values(_what))
for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lshift",
              "rshift"):
    for _form in (f"__{_name}__", f"__r{_name}__", f"__i{_name}__"):
        setattr(FedArray, _form, _operator(_form))
for _form in ("__divmod__", "__rdivmod__", "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__", "__neg__",
              "__pos__", "__abs__"):
    setattr(FedArray, _form, _operator(_form))
del _name, _what, _form


class LoweredArray(FedArray):
    """A NumPy array (or scalar) the graph computes from fed arrays with NumPy's semantics
    (``janus.trace.numpy_semantics``): a stand-in like theirs, whose tensor is the result.
    Read as NumPy, it marks every fed array it was computed from."""

    __slots__ = ("_sources",)

    def __init__(self, tensor: tf.Tensor, cls: type, sources: dict, marks: dict[Source, str]):
        super().__init__(tensor, cls(0) if cls is not np.ndarray else np.empty(0, tensor.dtype.as_numpy_dtype),
                         tuple(tensor.shape.as_list()), next(iter(sources)), marks)
        object.__setattr__(self, "_sources", dict(sources))

    @property
    def tensor(self) -> tf.Tensor:
        """What the graph computed: eager's array as a tensor of its dtype and shape."""
        return self._input

    def read_as_numpy(self, what: str) -> None:
        for source in self._sources:
            self._marks.setdefault(source, what)
        raise ReadAsNumPy({s: what for s in self._sources})


class IslandArray(FedArray):
    """A NumPy array a Python island returned: a tensor only TensorFlow may use (eager's
    array is the object's own, which NumPy code, a return or a store would show).  Used
    otherwise, it marks its island's method (``heap.islands_misused``, sticky like a fed
    array's mark) and fails the trace; the next trace calls that method as written."""

    __slots__ = ()

    def read_as_numpy(self, what: str) -> None:
        self._marks.setdefault(self._source, what)
        raise ConversionError(f"uses as NumPy ({what}) an array a Python island returned", code=Code.ISLAND)

    @property
    def tensor(self) -> tf.Tensor:
        return self._input

    def carried(self, tensor: tf.Tensor) -> "IslandArray":
        """The array ``tensor`` carries out of a tensor conditional or loop (``janus.lowering.reconcile``):
        an island's array of the same dtype and shape, marking the same method if misused."""
        tensor.set_shape(self._dims)
        return IslandArray(tensor, np.empty(0, self._dtype), self._dims, self._source, self._marks)


class TensorValues(LoweredArray):
    """The NumPy array eager's NumPy makes of a tensor the graph computes
    (``np.squeeze(action_probs)``, ``np.asarray(t)``): in eager, a new ``ndarray`` of the
    tensor's dtype and values.  Converted code sees this stand-in, whose tensor is those
    values; a Python island (``np.random.choice(n, p=...)``, ``env.step``) is handed eager's
    array, and the array leaves the graph as a new one (packing: a :class:`LoweredArray`).
    An island that returns a new array (a gymnasium environment's observation) returns one.
    Anything else NumPy or Python would do with it (arithmetic, indexing, ``print``) reads its
    values, which the graph has not computed yet: the trace fails there (a graph break)."""

    __slots__ = ()

    def __init__(self, tensor: tf.Tensor):
        FedArray.__init__(self, tensor, np.empty(0, tensor.dtype.as_numpy_dtype), tuple(tensor.shape.as_list()),
                          None, {})
        object.__setattr__(self, "_sources", {})

    def read_as_numpy(self, what: str) -> None:
        ctx = current()
        if ctx is not None:
            ctx.heap.computed_arrays_read.append(what)  # sticky: checked after the trace (janus.graphs.vetting)
        raise ConversionError(f"NumPy or Python reads ({what}) the values of a NumPy array the graph computes",
                              code=Code.TENSOR_VALUE)

    @property
    def tensor(self) -> tf.Tensor:
        return self._input

    def carried(self, tensor: tf.Tensor) -> "TensorValues":
        """The array ``tensor`` carries out of a tensor conditional or loop (``janus.lowering.reconcile``)."""
        tensor.set_shape(self._dims)
        return TensorValues(tensor)


# NumPy's functions that make an array of a tensor's values, and the keywords that keep eager's dtype
_TENSOR_VALUES = {np.squeeze: frozenset({"axis"}), np.asarray: frozenset(), np.array: frozenset()}


def tensor_values(f: Any, args: tuple, kwargs: dict) -> TensorValues | None:
    """``f(*args, **kwargs)`` when it makes eager's NumPy array of a tensor the graph computes
    (``np.squeeze(probs)``, ``np.asarray(t)``): its stand-in; None for any other call."""
    try:
        if f not in _TENSOR_VALUES or len(args) != 1 or not kwargs.keys() <= _TENSOR_VALUES[f]:
            return None
    except TypeError:  # an unhashable callee
        return None
    t = args[0]
    if not is_symbolic(t) or np.dtype(t.dtype.as_numpy_dtype) not in FED_DTYPES or not t.shape.is_fully_defined():
        return None
    axis = kwargs.get("axis")
    if axis is not None and not (type(axis) is int or type(axis) is tuple and all(type(a) is int for a in axis)):
        return None
    return TensorValues(tf.squeeze(t, axis) if f is np.squeeze else tf.identity(t))


def _sources(value: FedArray) -> tuple:
    return tuple(value._sources) if isinstance(value, LoweredArray) else (value._source,)


def _computed(how: Callable, *args: Any) -> LoweredArray:
    """``how(*args)`` of :mod:`~janus.trace.numpy_semantics` with the fed arrays among
    ``args[-1]`` as its operands: their result; they are read as NumPy if it cannot."""
    operands = args[-1]
    arrays = [o for o in operands if isinstance(o, FedArray)]
    try:
        if any(type(a) not in (FedArray, LoweredArray) for a in arrays):  # an island's array is its own
            raise numpy_semantics.NotComputed("NumPy arithmetic on an array a Python island returned")
        views = tuple(_view(o) for o in operands)
        tensor, cls = how(*args[:-1], views)
    except numpy_semantics.NotComputed as why:
        arrays[0].read_as_numpy(str(why))
        raise AssertionError("read_as_numpy raises") from None
    sources = dict.fromkeys(s for a in arrays for s in _sources(a))
    return LoweredArray(tensor, cls, sources, arrays[0]._marks)


def _view(operand: Any) -> Any:
    """What :mod:`~janus.trace.numpy_semantics` computes with for ``operand``."""
    if isinstance(operand, FedArray):
        return numpy_semantics.Array(operand._input, operand.dtype, operand._cls, operand.ndim)
    if isinstance(operand, PyScalar) and operand.kind is float:
        return numpy_semantics.Number(operand.tensor)
    return operand


def lowers(f: Any, args: tuple, kwargs: dict) -> bool:
    """``f(*args, **kwargs)`` is a NumPy function the graph computes (``np.where``, ``np.add``,
    ...) with a fed array among its arguments."""
    return f in numpy_semantics.FUNCTIONS and not kwargs and any(isinstance(a, FedArray) for a in args)


def lowered_call(f: Any, args: tuple) -> LoweredArray:
    """``f(*args)`` for a call :func:`lowers` accepts."""
    if f is np.where:
        return _computed(numpy_semantics.where, args)
    return _computed(numpy_semantics.compute, f, args)


def _to_tensor(value: FedArray, dtype: tf.DType | None = None, name: str | None = None,
               as_ref: bool = False) -> tf.Tensor:
    """TensorFlow's conversion of a fed array: the graph input, when TensorFlow asks for the
    array's own dtype (or none).  Asked for another dtype (``dtype`` or a preferred one),
    eager's NumPy conversion would cast where a tensor input raises: that reads it as NumPy."""
    if dtype is not None and tf.as_dtype(dtype).base_dtype != value._input.dtype:  # noqa: SLF001
        value.read_as_numpy(f"converted to {tf.as_dtype(dtype).name}")
    return value._input  # noqa: SLF001


tf.register_tensor_conversion_function(FedArray, _to_tensor)
