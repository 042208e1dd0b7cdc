"""Python numbers whose value the graph computes, and the tensors they are made of.

Eager code often derives a plain Python ``int``, ``float`` or ``bool`` from tensor
values: a counter incremented inside a ``while`` on a tensor condition, the index
where a loop broke, ``not t``, ``int(t)``.  In a graph such a value can only be a
tensor, but it must keep *Python* semantics (``i + 1`` is an ``int``, ``n / 2`` a
``float``) and come back to the user as the Python type.  :class:`PyScalar` is that
value: a tensor (``int64``, ``float64`` or ``bool``, as wide as Python's own) plus
the Python kind.  Arithmetic follows Python's promotion rules; mixed with a tensor it
converts like a Python scalar does; anything that needs the concrete value while
tracing (indexing a list, ``range`` length in Python, formatting) fails the
conversion, so the call runs eagerly.  :class:`PyOrTensor` is a variable that is such a
number on some paths and a tensor on others.

A Python ``str`` that changes between calls is a ``PyScalar`` of kind ``str`` too (a
``tf.string`` of its UTF-8 bytes) while only TensorFlow reads it: handed to TensorFlow or
Keras (alone or in a list, ``vectorize([sentence])``), joined with ``+``, returned or
stored.  Anything else (a comparison, a dict key, a str method, a call into code that is
not TensorFlow's) needs its value: the trace fails, and the next one specializes the fed
strings it is made of (:func:`value_needed`).

The graph-tensor predicates (:func:`is_symbolic`, :func:`is_eager_tensor`) live here,
below :mod:`janus.trace.values`, because the arithmetic needs them.
"""
from __future__ import annotations

import linecache
import os
import sys
from typing import Any, NoReturn

import numpy as np
import tensorflow as tf

from janus.convert.registry import is_converted_code
from janus.errors import ConversionError
from janus.reporting.codes import Code
from janus.trace.active import current
from janus.trace import known_values, speculation

EAGER_TENSOR = type(tf.constant(0))


def is_symbolic(x: Any) -> bool:
    """A graph tensor (not an eager value)."""
    return isinstance(x, tf.Tensor) and not isinstance(x, EAGER_TENSOR)


def is_eager_tensor(x: Any) -> bool:
    """An eager tensor (a value, not a node of a graph)."""
    return isinstance(x, EAGER_TENSOR)


DTYPES = {bool: tf.bool, int: tf.int64, float: tf.float64}
# what a Python value fed to a graph is carried as: a number as wide as Python's, a str as UTF-8
FED_DTYPES = {**DTYPES, str: tf.string}
# the Python values a graph is fed once they change between calls (a bool stays a value: it
# decides branches); a str only while TensorFlow alone reads it
FED_KINDS = (int, float, str)
_NP_DTYPES = {bool: np.bool_, int: np.int64, float: np.float64, str: np.bytes_}


def fed_scalar(value: Any, kind: type) -> tf.Tensor:
    """The eager tensor a Python number or string is fed to a graph as, at each call.

    Through NumPy: ``tf.constant(python_number)`` keeps one cached tensor per distinct
    value for the life of the process (a counter in state grew memory ~0.8 KB per call).
    A string is its UTF-8 bytes (its guard checks it has them), as eager converts it.
    """
    if hasattr(kind, "feed"):  # a list of numbers (janus.trace.number_lists)
        return kind.feed(value)
    if kind is str:
        value = value.encode("utf-8")
    return tf.constant(np.asarray(value, _NP_DTYPES[kind]))


def fed_spec(kind: Any) -> tf.TensorSpec:
    """The graph input a value of fed ``kind`` is (a Python number or str, or a list's kind)."""
    spec = getattr(kind, "spec", None)
    return spec if spec is not None else tf.TensorSpec([], FED_DTYPES[kind])


def fits(value: Any, kind: Any) -> bool:
    """``value`` is of fed ``kind`` (a type, or a kind with its own ``fits``)."""
    check = getattr(kind, "fits", None)
    return check(value) if check is not None else type(value) is kind


def encodes(value: str) -> bool:
    """``value`` has UTF-8 bytes (no lone surrogate): TensorFlow can take it as eager does."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


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
    __array_ufunc__ = None  # NumPy defers to it (and it refuses): never an object array of them

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
            raise ConversionError(self._what(f"used with a {type(other).__name__}"), code=Code.TENSOR_VALUE)
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
            raise ConversionError(self._what("used with a float"), code=Code.TENSOR_VALUE)
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
        raise ConversionError(self._what("used as a truth value"), code=Code.TENSOR_VALUE)

    def __getattr__(self, name: str) -> Any:
        raise ConversionError(self._what(f"asked for .{name}"), code=Code.TENSOR_VALUE)

    __hash__ = None


def _refuse(use: str):
    def method(self, *args):
        raise ConversionError(self._what(use), code=Code.TENSOR_VALUE)
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
    # NumPy defers to it instead of building an object array of per-item graph ops, which
    # would leave the graph as Janus's own objects: NumPy arithmetic with it is refused below
    __array_ufunc__ = None

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
            tensor = tf.constant(value, FED_DTYPES[kind])
        if tensor.dtype != FED_DTYPES[kind]:
            if tf.string in (tensor.dtype, FED_DTYPES[kind]):
                value_needed(tensor, f"used as a {kind.__name__}")
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
        if self.kind is str:
            if dtype in (None, tf.string):
                return self.tensor
            value_needed(self.tensor, f"converted to {dtype.name}")
        if dtype is None and self.kind is int:
            return as_int32(self.tensor)
        if dtype is None and self.kind is float:
            return tf.cast(self.tensor, tf.float32)  # eager converts a Python float to float32
        if dtype is not None and dtype != self.tensor.dtype:
            return tf.cast(self.tensor, dtype)
        return self.tensor

    def _binary(self, other: Any, op: str, reflected: bool = False) -> Any:
        if self.kind is str or isinstance(other, PyScalar) and other.kind is str:
            return self._string_binary(other, op, reflected)
        if isinstance(other, (np.ndarray, np.generic)):
            if hasattr(type(other), "read_as_numpy"):  # a fed array's stand-in computes NumPy's result itself
                return NotImplemented
            raise ConversionError(f"NumPy arithmetic with a Python {self.kind.__name__} the graph carries (eager's "
                                  "result is a NumPy value)", code=Code.TENSOR_VALUE)
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

    def _string_binary(self, other: Any, op: str, reflected: bool) -> "PyScalar":
        """A str the graph carries joined to another (``s + " " + token``): the graph joins
        their UTF-8 bytes, which is Python's concatenation; any other operation needs the value."""
        if op != "add" or not (type(other) is str and encodes(other) or isinstance(other, PyScalar) and other.kind is str):
            value_needed(self.tensor, f"used with {op}")
        theirs = other.tensor if isinstance(other, PyScalar) else tf.constant(other.encode("utf-8"))
        parts = [theirs, self.tensor] if reflected else [self.tensor, theirs]
        return PyScalar(tf.strings.join(parts), str)

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
            raise ConversionError("round() to decimal digits of a value computed from tensors", code=Code.TENSOR_VALUE)
        return PyScalar.of(tf.round(PyScalar.of(self, float).tensor), int)

    def _concrete(self, *args, **kwargs):
        if self.kind is str:
            value_needed(self.tensor, "needed while tracing")
        raise ConversionError(f"a Python {self.kind.__name__} computed from tensors is needed while tracing",
                              code=Code.TENSOR_VALUE)

    __bool__ = __index__ = __int__ = __float__ = __len__ = __iter__ = __hash__ = _concrete
    __format__ = __str__ = _concrete

    def __getattr__(self, name: str) -> Any:
        # a str method (s.split(), s.lower()) needs the value; anything else is not there, as
        # for a number (hasattr checks of TensorFlow's conversions see an AttributeError)
        if self.kind is str and not name.startswith("_") and hasattr(str, name):
            value_needed(self.tensor, f"asked for .{name}")
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __repr__(self) -> str:
        return f"<PyScalar {self.kind.__name__} {self.tensor!r}>"


_PARTIAL = ("truediv", "floordiv", "mod", "pow")


def value_needed(tensor: tf.Tensor, use: str, noun: str = "str") -> NoReturn:
    """Python needs the value of a str (or another ``noun``: a list of numbers) the graph was
    fed (``use``: for what): the trace fails, and the inputs it is made of are specialized by
    value from the next trace on (``janus.trace.known_values``): such a value is fed only
    while TensorFlow alone reads it."""
    ctx = current()
    for source in known_values.fed_numbers([tensor], ctx.heap, ctx.bounds.branches):
        ctx.heap.values_wanted.setdefault(source, f"a {noun} {use}")
    raise ConversionError(f"a Python {noun} the graph carries is {use} (Python needs its value)",
                          code=Code.TENSOR_VALUE)


def as_int32(tensor: tf.Tensor) -> tf.Tensor:
    """``tensor`` (int64) as the int32 TensorFlow makes of Python ints when no dtype is asked
    for; eager would pick int64 for a value outside int32, so that case is asserted away: an
    ``int32`` assumption (``janus.trace.speculation``) about the converted code's line."""
    ctx = current()
    where, line, text = converted_line()
    assumption = ctx.checks.check(speculation.INT32, None, line, where=where, detail=text)
    in_range = tf.reduce_all(tf.logical_and(tensor >= INT32[0], tensor <= INT32[1]))
    ctx.assert_that(in_range, assumption.message, assumption)
    return tf.cast(tensor, tf.int32)


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


def converted_line() -> tuple[str, int, str]:
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
    """The Python scalar of ``kind`` for an eager result tensor (a str from its UTF-8 bytes)."""
    if kind is str:
        return value.numpy().decode("utf-8")
    return kind(value.numpy().item())
