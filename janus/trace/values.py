"""Values converted code handles while tracing, and what kind a value is.

* :func:`is_symbolic`, :func:`is_eager_tensor`, :func:`is_framework_object`,
  :func:`is_user_class`: how a trace classifies what it reads;
* :class:`PyScalar`: a Python number the graph computes (below);
* :data:`UNDEF`: a local that eager Python would not have bound yet;
* :class:`DeferredStr`: an f-string of values the graph computes, formatted after the run.

Python scalars whose value the graph computes.

Eager code often derives a plain Python ``int``, ``float`` or ``bool`` from tensor
values: a counter incremented inside a ``while`` on a tensor condition, the index
where a loop broke, ``not t``, ``int(t)``.  In a graph such a value can only be a
tensor, but it must keep *Python* semantics (``i + 1`` is an ``int``, ``n / 2`` a
``float``) and come back to the user as the Python type.  ``PyScalar`` is that
value: a tensor (``int64``, ``float64`` or ``bool``, as wide as Python's own) plus
the Python kind.  Arithmetic follows Python's promotion rules; mixed with a tensor it
converts like a Python scalar does; anything that needs the concrete value while
tracing (indexing a list, ``range`` length in Python, formatting) fails the
conversion, so the call runs eagerly.
"""
from __future__ import annotations

import linecache
import os
import sys
import types
from typing import Any

import numpy as np
import tensorflow as tf

from janus.convert.pipeline import is_converted_code
from janus.errors import ConversionError, UndefinedValueError
from janus.trace.active import current
from janus_profiler import usercode

SCALARS = (int, float, bool, str, bytes, complex, type(None))
FRAMEWORK_PREFIXES = ("tensorflow", "keras", "tf_keras", "numpy", "absl")
EAGER_TENSOR = type(tf.constant(0))


def is_symbolic(x: Any) -> bool:
    """A graph tensor (not an eager value)."""
    return isinstance(x, tf.Tensor) and not isinstance(x, EAGER_TENSOR)


def is_eager_tensor(x: Any) -> bool:
    return isinstance(x, EAGER_TENSOR)


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


def is_graph_composite(x: Any) -> bool:
    return isinstance(x, (tf.RaggedTensor, tf.SparseTensor)) and not is_eager_composite(x)


def is_user_class(cls: type) -> bool:
    """A class of the user's program: defined in user code (``janus_profiler.usercode``)."""
    mod = cls.__module__ or ""
    if mod == "builtins" or mod.split(".")[0] in FRAMEWORK_PREFIXES:
        return False
    filename = getattr(sys.modules.get(mod), "__file__", None)
    return filename is None or usercode.is_user_file(filename)


def is_plain_callable(x: Any) -> bool:
    """Functions, modules, classes: read by identity, never copied."""
    return isinstance(x, (types.FunctionType, types.ModuleType, type))

DTYPES = {bool: tf.bool, int: tf.int64, float: tf.float64}
_NP_DTYPES = {bool: np.bool_, int: np.int64, float: np.float64}


def fed_scalar(value: Any, kind: type) -> tf.Tensor:
    """The eager tensor a Python number is fed to a graph as, at each call.

    Through NumPy: ``tf.constant(python_number)`` keeps one cached tensor per distinct
    value for the life of the process (a counter in state grew memory ~0.8 KB per call).
    """
    return tf.constant(np.asarray(value, _NP_DTYPES[kind]))
INT32 = (-2 ** 31, 2 ** 31 - 1)
PY_SCALARS = (bool, int, float)


def _kind_of(value: Any) -> type | None:
    if isinstance(value, PyScalar):
        return value.kind
    if type(value) in PY_SCALARS:
        return type(value)
    return None


def _result_kind(a: type, b: type, op: str) -> type:
    if op in ("lt", "le", "gt", "ge", "eq", "ne"):
        return bool
    if op == "truediv":
        return float
    if float in (a, b):
        return float
    if op in ("and", "or", "xor") and a is bool and b is bool:
        return bool
    return int


_OPS = {
    "add": tf.add, "sub": tf.subtract, "mul": tf.multiply, "truediv": tf.truediv,
    "floordiv": tf.math.floordiv, "mod": tf.math.floormod, "pow": tf.pow,
    "lt": tf.less, "le": tf.less_equal, "gt": tf.greater, "ge": tf.greater_equal,
    "eq": tf.equal, "ne": tf.not_equal, "and": tf.bitwise.bitwise_and, "or": tf.bitwise.bitwise_or,
    "xor": tf.bitwise.bitwise_xor,
}
_BOOL_OPS = {"and": tf.logical_and, "or": tf.logical_or, "xor": tf.math.logical_xor}


class PyOrTensor:
    """A variable that is a Python number on some paths and a tensor on others.

    ``total = 0`` followed by ``total += v`` under a tensor condition (a ``break`` on a
    tensor test, a branch taken on some calls) leaves ``total`` a Python number where the
    branch was not taken and a tensor where it was, as eager has it.  The graph carries
    both: ``number`` (the Python value as int64/float64/bool), ``tensor`` (valid on every
    path: on the number's paths it is the number converted to the tensor's dtype, which
    is what eager's ``number op tensor`` converts it to) and ``is_number``.  Combined with
    a tensor of the same dtype it is that tensor (both paths agree); leaving the graph it
    becomes the Python number or the tensor, as the run went (``janus.commit.packing``).
    Any other use (``bool()``, Python arithmetic, another dtype) fails the conversion.
    """

    __slots__ = ("number", "kind", "tensor", "is_number")

    def __init__(self, number: tf.Tensor, kind: type, tensor: tf.Tensor, is_number: tf.Tensor):
        self.number, self.kind, self.tensor, self.is_number = number, kind, tensor, is_number

    @property
    def dtype(self) -> tf.DType:
        return self.tensor.dtype

    def parts(self) -> list:
        """The three tensors a TF construct carries for it."""
        return [self.number, self.tensor, self.is_number]

    def _with(self, other: Any, op: str, reflected: bool) -> Any:
        if _kind_of(other) is not None:
            return self._with_number(other, op, reflected)
        if not is_symbolic(other) or other.dtype != self.tensor.dtype:
            raise ConversionError(self._what(f"used with a {type(other).__name__}"))
        a, b = (other, self.tensor) if reflected else (self.tensor, other)
        return _OPS[op](a, b)

    def _with_number(self, other: Any, op: str, reflected: bool) -> "PyOrTensor":
        """``self op n`` for a Python number ``n`` (or one the graph computes): Python
        arithmetic where ``self`` is the number, tensor arithmetic where it is the tensor
        (``n`` converted to the tensor's dtype, as eager converts it); still either."""
        number = PyScalar(self.number, self.kind)
        result = getattr(number, f"__{'r' if reflected else ''}{op}__")(other)
        if not isinstance(other, PyScalar):
            theirs = tf.convert_to_tensor(other, self.tensor.dtype)
        elif other.kind is float and not self.tensor.dtype.is_floating:
            raise ConversionError(self._what("used with a float"))
        else:
            theirs = tf.cast(other.tensor, self.tensor.dtype)
        a, b = (theirs, self.tensor) if reflected else (self.tensor, theirs)
        tensor = _OPS[op](a, b)
        # On the number's paths the tensor is the number's result converted, as eager would.
        tensor = tf.where(self.is_number, tf.cast(result.tensor, tensor.dtype), tensor)
        return PyOrTensor(result.tensor, result.kind, tensor, self.is_number)

    def _what(self, use: str) -> str:
        return f"a value that is a Python {self.kind.__name__} or a tensor, depending on the path taken, is {use}"

    def __tf_tensor__(self, dtype: tf.DType | None = None, name: str | None = None) -> tf.Tensor:
        # A TypeError, so that ``tensor + value`` falls back to ``value.__radd__``; other uses
        # fail the trace (and an ``except TypeError`` sees it come from library code).
        raise TypeError(self._what("passed to TensorFlow"))

    def __bool__(self) -> bool:
        raise ConversionError(self._what("used as a truth value"))

    def __getattr__(self, name: str) -> Any:
        raise ConversionError(self._what(f"asked for .{name}"))

    __hash__ = None


def _refuse(use: str):
    def method(self, *args):
        raise ConversionError(self._what(use))
    return method


def _combine(op: str, reflected: bool = False):
    def method(self, other):
        return self._with(other, op, reflected)
    return method


for _op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow"):
    setattr(PyOrTensor, f"__{_op}__", _combine(_op))
    setattr(PyOrTensor, f"__r{_op}__", _combine(_op, reflected=True))
for _op in ("lt", "le", "gt", "ge", "eq", "ne"):
    setattr(PyOrTensor, f"__{_op}__", _combine(_op))
for _dunder in ("neg", "pos", "abs", "invert", "int", "float", "index", "len", "iter", "getitem", "round",
                "and", "or", "xor", "rand", "ror", "rxor", "matmul", "rmatmul"):
    setattr(PyOrTensor, f"__{_dunder}__", _refuse(f"used with {_dunder}"))


class PyScalar:
    """A Python ``bool``/``int``/``float`` held in the graph as a tensor."""

    __slots__ = ("tensor", "kind")

    def __init__(self, tensor: tf.Tensor, kind: type):
        self.tensor = tensor
        self.kind = kind

    @classmethod
    def of(cls, value: Any, kind: type | None = None) -> "PyScalar":
        """Wrap a Python scalar, a PyScalar or a scalar tensor as a PyScalar of ``kind``."""
        kind = kind or _kind_of(value)
        if isinstance(value, PyScalar):
            tensor = value.tensor
        elif isinstance(value, tf.Tensor):
            tensor = value
        else:
            tensor = tf.constant(value, DTYPES[kind])
        if tensor.dtype != DTYPES[kind]:
            tensor = tf.cast(tensor, DTYPES[kind])
        return cls(tensor, kind)

    @property
    def dtype(self) -> tf.DType:
        """The dtype TensorFlow gives this value when it converts it (int32 for a Python
        int, float32 for a float)."""
        return tf.int32 if self.kind is int else tf.float32 if self.kind is float else self.tensor.dtype

    @property
    def shape(self) -> tf.TensorShape:
        return self.tensor.shape

    def __tf_tensor__(self, dtype: tf.DType | None = None, name: str | None = None) -> tf.Tensor:
        """The tensor TensorFlow would make of the Python value.

        A Python int becomes int32 unless a dtype is asked for, as in eager; eager would
        pick int64 for a value outside int32, so that case is asserted away: an ``int32``
        assumption (see ``janus.trace.speculation``) about the converted code's line.
        """
        if dtype is None and self.kind is int:
            ctx = current()
            where, line, text = _converted_line()
            assumption = ctx.checks.check("int32", None, line, where=where, detail=text)
            in_range = tf.logical_and(self.tensor >= INT32[0], self.tensor <= INT32[1])
            ctx.assert_that(in_range, assumption.message, assumption)
            return tf.cast(self.tensor, tf.int32)
        if dtype is None and self.kind is float:
            return tf.cast(self.tensor, tf.float32)  # eager converts a Python float to float32
        if dtype is not None and dtype != self.tensor.dtype:
            return tf.cast(self.tensor, dtype)
        return self.tensor

    def _binary(self, other: Any, op: str, reflected: bool = False) -> Any:
        kind = _kind_of(other)
        if kind is None:
            if isinstance(other, tf.Tensor):
                mine = tf.cast(self.tensor, other.dtype)
                a, b = (other, mine) if reflected else (mine, other)
                return _OPS[op](a, b)
            return NotImplemented
        result = _result_kind(self.kind, kind, op)
        operand = float if float in (self.kind, kind) else (bool if self.kind is kind is bool else int)
        mine = PyScalar.of(self, operand).tensor
        theirs = PyScalar.of(other, operand).tensor
        a, b = (theirs, mine) if reflected else (mine, theirs)
        fn = _BOOL_OPS[op] if operand is bool and op in _BOOL_OPS else _OPS[op]
        if operand is bool and op not in _BOOL_OPS and op not in ("eq", "ne"):
            a, b = tf.cast(a, tf.int64), tf.cast(b, tf.int64)
        if op == "truediv":
            a, b = tf.cast(a, tf.float64), tf.cast(b, tf.float64)
        if op in _PARTIAL:
            _python_defines(op, a, b)
        return PyScalar.of(fn(a, b), result)

    def __add__(self, o): return self._binary(o, "add")
    def __radd__(self, o): return self._binary(o, "add", True)
    def __sub__(self, o): return self._binary(o, "sub")
    def __rsub__(self, o): return self._binary(o, "sub", True)
    def __mul__(self, o): return self._binary(o, "mul")
    def __rmul__(self, o): return self._binary(o, "mul", True)
    def __truediv__(self, o): return self._binary(o, "truediv")
    def __rtruediv__(self, o): return self._binary(o, "truediv", True)
    def __floordiv__(self, o): return self._binary(o, "floordiv")
    def __rfloordiv__(self, o): return self._binary(o, "floordiv", True)
    def __mod__(self, o): return self._binary(o, "mod")
    def __rmod__(self, o): return self._binary(o, "mod", True)
    def __pow__(self, o): return self._binary(o, "pow")
    def __rpow__(self, o): return self._binary(o, "pow", True)
    def __and__(self, o): return self._binary(o, "and")
    def __rand__(self, o): return self._binary(o, "and", True)
    def __or__(self, o): return self._binary(o, "or")
    def __ror__(self, o): return self._binary(o, "or", True)
    def __xor__(self, o): return self._binary(o, "xor")
    def __rxor__(self, o): return self._binary(o, "xor", True)
    def __lt__(self, o): return self._binary(o, "lt")
    def __le__(self, o): return self._binary(o, "le")
    def __gt__(self, o): return self._binary(o, "gt")
    def __ge__(self, o): return self._binary(o, "ge")
    def __eq__(self, o): return self._binary(o, "eq")
    def __ne__(self, o): return self._binary(o, "ne")

    def __neg__(self):
        return PyScalar.of(-PyScalar.of(self, float if self.kind is float else int).tensor,
                           float if self.kind is float else int)

    def __pos__(self):
        return PyScalar.of(self, float if self.kind is float else int)

    def __abs__(self):
        kind = float if self.kind is float else int
        return PyScalar.of(tf.abs(PyScalar.of(self, kind).tensor), kind)

    def __round__(self, ndigits: int | None = None):
        if ndigits is not None:
            raise ConversionError("round() to decimal digits of a value computed from tensors")
        return PyScalar.of(tf.round(PyScalar.of(self, float).tensor), int)

    def _concrete(self, *args, **kwargs):
        raise ConversionError(f"a Python {self.kind.__name__} computed from tensors is needed while tracing")

    __bool__ = __index__ = __int__ = __float__ = __len__ = __iter__ = __hash__ = _concrete
    __format__ = __str__ = _concrete

    def __repr__(self) -> str:
        return f"<PyScalar {self.kind.__name__} {self.tensor!r}>"


_PARTIAL = ("truediv", "floordiv", "mod", "pow")


def _python_defines(op: str, a: tf.Tensor, b: tf.Tensor) -> None:
    """Assert that Python computes ``a op b`` as a number of the same kind: it raises
    ZeroDivisionError for ``x / 0``, ``x // 0``, ``x % 0`` and ``0.0 ** -1``, and gives a
    float or a complex number for ``2 ** -1`` and ``(-8.0) ** 0.5``, where TensorFlow gives
    inf, nan or an error.  A failed assertion makes the call re-run eagerly, which does
    what Python does."""
    zero = tf.zeros([], b.dtype)
    if op == "pow":
        if b.dtype.is_integer:
            ok = b >= zero
        else:
            ok = tf.logical_and(tf.logical_or(tf.not_equal(a, zero), b >= zero),
                                tf.logical_or(a >= zero, tf.equal(b, tf.floor(b))))
        message = "Python computes this power as another kind of number, or raises"
    else:
        ok, message = tf.not_equal(b, zero), "division by zero"
    current().assert_that(ok, message)


def _partitions(ragged: tf.RaggedTensor) -> list:
    out = []
    while isinstance(ragged, tf.RaggedTensor):
        out.append(ragged)
        ragged = ragged.values
    return out


def _converted_line() -> tuple[str, int, str]:
    """Where converted code makes TensorFlow convert a value: ``file.py:LINE`` of the user's
    line, that line number, and its text ("" when unknown).

    The innermost frame of generated code is it; generated code carries the user's file
    name and line numbers.
    """
    frame = sys._getframe(1)
    while frame is not None and not is_converted_code(frame.f_code):
        frame = frame.f_back
    if frame is None:
        return "converted code", 0, ""
    filename = frame.f_code.co_filename
    text = linecache.getline(filename, frame.f_lineno).strip()
    return f"{os.path.basename(filename)}:{frame.f_lineno}", frame.f_lineno, text


def to_python(value: Any, kind: type) -> Any:
    """The Python scalar of ``kind`` for an eager result tensor."""
    return kind(value.numpy().item())


class Undefined:
    """Value of a local that eager Python would not have bound yet."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<undefined>"

    def _fail(self, *args, **kwargs):
        raise UndefinedValueError("a variable is read before it is assigned")

    __bool__ = __call__ = __getattr__ = __getitem__ = __iter__ = __len__ = _fail
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
        raise ConversionError("uses a string formatted from values the graph has not computed yet")

    __str__ = __repr__ = __add__ = __radd__ = __len__ = __eq__ = __hash__ = __iter__ = __format__ = _concrete
    __getitem__ = __contains__ = __mod__ = __mul__ = _concrete


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
            raise ConversionError("reads the shape of a tensor whose rank the graph does not know")
        dims = static.as_list()
        if isinstance(tensor, tf.SparseTensor):
            dynamic = tensor.dense_shape
            return cls([d if d is not None else PyScalar(dynamic[i], int) for i, d in enumerate(dims)])
        if isinstance(tensor, tf.RaggedTensor):
            if any(p.uniform_row_length is not None for p in _partitions(tensor)):
                raise ConversionError("reads the shape of a ragged tensor with uniform row lengths")
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
        raise ConversionError("uses a shape the graph computes where Python needs its value")

    __eq__ = __ne__ = __hash__ = __str__ = __repr__ = __format__ = __bool__ = _concrete

    def __getattr__(self, name: str):
        raise ConversionError(f"TensorShape.{name} of a shape the graph computes")
