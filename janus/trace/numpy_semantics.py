"""NumPy's arithmetic and comparisons, computed by TensorFlow with NumPy's bits.

A fed NumPy array (``janus.trace.arrays``) that NumPy combines with a number — PPO's
``advantage > 0`` and ``(1 + clip) * advantage``, a frame's ``obs / 255.0`` — would
otherwise be read as NumPy, and the argument guarded by its values: a new array at every
call, a graph never reused.  When the operation is one whose result TensorFlow computes
bitwise as NumPy does, the graph computes it instead (:func:`compute`, :func:`where`).

* **Which operations**: ``+ - *``, ``/`` (true division), the six comparisons, unary
  ``-``, ``+``, ``abs()``, and the functions ``np.add``, ``subtract``, ``multiply``,
  ``divide``/``true_divide``, ``negative``, ``positive``, ``absolute``/``abs``, ``square``,
  ``sqrt``, ``less`` ... ``not_equal`` and ``np.where``: each is correctly rounded (or
  exact) in both libraries.  Reductions (``np.sum``, ``np.mean``: NumPy sums pairwise),
  transcendental functions and ``np.minimum``/``maximum`` are not computed here.
* **Operands**: arrays (their tensor, dtype, class and rank: :class:`Array`), Python
  ``int``/``float``, NumPy scalars, and Python floats the graph carries (a rate fed as a
  number: :class:`Number`, NumPy's weak float, rounded to the loop's dtype as NumPy does).  The result's dtype and class (an ``ndarray``, or a
  NumPy scalar when every operand is 0-d) are NumPy's own, found by running the same
  function on stand-in values of the same dtypes and on the real numbers: NumPy's
  promotion (NEP 50) and its errors (an ``np.int8`` array ``+ 300`` raises) are NumPy's.
  TensorFlow casts each operand to the dtype of NumPy's inner loop
  (``ufunc.resolve_dtypes``) and applies the same operation.  Only integer and 32/64-bit
  float loops are computed (bool arithmetic is logical in NumPy; float16 and complex stay
  NumPy's).
* **Where the bits could differ**: TensorFlow's CPU kernels treat subnormal numbers as
  zero (comparisons included) and flush subnormal results; NumPy keeps them, and warns
  where a float result overflows, is invalid or divides by zero.  A float operation
  carries a run-time check (``numpy_range``, :func:`_check_operands`) that its operands
  are in a range where none of this happens: when it fails, the run aborts and the call
  re-runs eagerly (NumPy's numbers and warnings); after it failed as often as it held,
  the next conversions read such arrays as NumPy.  Integer results that would be NumPy
  scalars (which warn on overflow) are not computed.

Anything not computed here raises :class:`NotComputed`; the caller reads the arrays as NumPy.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import tensorflow as tf

from janus.trace.active import current
from janus.trace.scalars import converted_line
from janus.trace import speculation

# loop dtypes TensorFlow computes as NumPy does, for the operations below
_NUMERIC = frozenset(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
                                           np.uint64, np.float32, np.float64))
_BOOL = np.dtype(np.bool_)
_SCALAR_TYPES = frozenset(d.type for d in _NUMERIC | {_BOOL})

# ufunc -> the TensorFlow op of the same operation on operands of its loop dtype
UFUNCS: dict[np.ufunc, Callable[..., tf.Tensor]] = {
    np.add: tf.math.add, np.subtract: tf.math.subtract, np.multiply: tf.math.multiply,
    np.true_divide: tf.math.divide, np.negative: tf.math.negative, np.positive: tf.identity,
    np.absolute: tf.math.abs, np.square: tf.math.square, np.sqrt: tf.math.sqrt,
    np.less: tf.math.less, np.less_equal: tf.math.less_equal, np.greater: tf.math.greater,
    np.greater_equal: tf.math.greater_equal, np.equal: tf.math.equal, np.not_equal: tf.math.not_equal,
}
# Python's operator dunder -> (ufunc, operands reflected)
OPERATORS: dict[str, tuple[np.ufunc, bool]] = {
    "__add__": (np.add, False), "__radd__": (np.add, True), "__sub__": (np.subtract, False),
    "__rsub__": (np.subtract, True), "__mul__": (np.multiply, False), "__rmul__": (np.multiply, True),
    "__truediv__": (np.true_divide, False), "__rtruediv__": (np.true_divide, True),
    "__lt__": (np.less, False), "__le__": (np.less_equal, False), "__gt__": (np.greater, False),
    "__ge__": (np.greater_equal, False), "__eq__": (np.equal, False), "__ne__": (np.not_equal, False),
    "__neg__": (np.negative, False), "__pos__": (np.positive, False), "__abs__": (np.absolute, False),
}
FUNCTIONS = frozenset(UFUNCS) | {np.where}

_SIGN_ONLY = frozenset((np.negative, np.positive, np.absolute))  # exact on every value: sign bits only
_COMPARISONS = frozenset((np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal))
# float32 / float64: (its bits as, the magnitude mask, the bits of 2**-60 / 2**-500, of
# 2**60 / 2**500, of the smallest normal number): operands zero or in that range make
# results that are neither subnormal nor past the largest number, for + - * / and sqrt
_RANGES = {
    tf.float32: (tf.int32, 0x7FFFFFFF, (127 - 60) << 23, (127 + 60) << 23, 1 << 23),
    tf.float64: (tf.int64, 0x7FFFFFFFFFFFFFFF, (1023 - 500) << 52, (1023 + 500) << 52, 1 << 52),
}


@dataclass(frozen=True)
class Array:
    """An array operand: the tensor of its values, its NumPy dtype, its class (``np.ndarray``
    or a NumPy scalar type) and its rank."""

    tensor: tf.Tensor
    dtype: np.dtype
    cls: type
    ndim: int


@dataclass(frozen=True)
class Number:
    """A Python float the graph carries (a fed number): NumPy takes it as a weak scalar."""

    tensor: tf.Tensor


class NotComputed(Exception):
    """The operation is not one TensorFlow computes here with NumPy's bits (the message says why)."""


def compute(ufunc: np.ufunc, operands: tuple) -> tuple[tf.Tensor, type]:
    """``ufunc(*operands)`` as NumPy computes it: the tensor of the result, and its class."""
    name = f"np.{ufunc.__name__}"
    if ufunc not in UFUNCS or len(operands) != ufunc.nin:
        raise NotComputed(f"{name} of {len(operands)} operands")
    try:
        with np.errstate(all="ignore"):
            eager = ufunc(*(_stand_in(o) for o in operands))
        loop = ufunc.resolve_dtypes(tuple(_dtype(o) for o in operands) + (None,))
    except (TypeError, ValueError, OverflowError) as error:  # NumPy raises: eager's error, from an eager run
        raise NotComputed(f"{name} raises ({type(error).__name__})") from None
    inputs, out_dtype = loop[:-1], loop[-1]
    if not all(d in _NUMERIC for d in inputs) or out_dtype not in _NUMERIC | {_BOOL}:
        raise NotComputed(f"{name} over {', '.join(d.name for d in inputs)}")
    if type(eager) is not np.ndarray and eager.dtype.kind in "iu":
        raise NotComputed(f"{name} of NumPy integer scalars (NumPy warns on overflow)")
    if ufunc in _SIGN_ONLY and inputs[0].kind == "u":
        raise NotComputed(f"{name} of unsigned integers")  # TensorFlow has no kernel
    tensors = [_tensor(o, d) for o, d in zip(operands, inputs)]
    _check_operands(ufunc, tensors)
    out = UFUNCS[ufunc](*tensors)
    if np.dtype(out.dtype.as_numpy_dtype) != eager.dtype:
        raise NotComputed(f"{name} to {eager.dtype}")
    return out, type(eager)


def where(operands: tuple) -> tuple[tf.Tensor, type]:
    """``np.where(cond, x, y)`` as NumPy computes it (a selection: no check needed)."""
    if len(operands) != 3:
        raise NotComputed(f"np.where of {len(operands)} arguments")
    cond, x, y = operands
    try:
        eager = np.where(_stand_in(cond), _stand_in(x), _stand_in(y))
    except (TypeError, ValueError) as error:
        raise NotComputed(f"np.where raises ({type(error).__name__})") from None
    if _dtype(cond) != _BOOL or eager.dtype not in _NUMERIC:
        raise NotComputed(f"np.where over {eager.dtype}")
    return tf.where(_tensor(cond, _BOOL), _tensor(x, eager.dtype), _tensor(y, eager.dtype)), type(eager)


def _check_operands(ufunc: np.ufunc, tensors: list) -> None:
    """A run-time check that TensorFlow computes NumPy's bits from these operands: magnitudes
    zero or within ``2**-60 .. 2**60`` (float64: ``2**-500 .. 2**500``) for ``+ - * /`` and
    ``sqrt`` (a divisor also nonzero, a square root's operand not negative); a comparison's
    operands not subnormal.  Read on the bits: compared as floats, a subnormal is zero."""
    floats = [t for t in tensors if t.dtype in _RANGES]
    if ufunc in _SIGN_ONLY or not floats:
        return
    where_, line, text = converted_line()
    assumption = current().checks.check(speculation.NUMPY_RANGE, None, line, where=where_, detail=text)
    if assumption is None:
        raise NotComputed("a NumPy operation whose operands left the range TensorFlow computes its bits in, before")
    oks = [_in_range(ufunc, t, divisor=ufunc is np.true_divide and i == 1) for i, t in enumerate(floats)]
    ok = tf.reduce_all(tf.stack([tf.reduce_all(o) for o in oks]))
    current().assert_that(ok, assumption.message, assumption)


def _in_range(ufunc: np.ufunc, t: tf.Tensor, divisor: bool) -> tf.Tensor:
    int_type, mask, low, high, normal = _RANGES[t.dtype]
    bits = tf.bitcast(t, int_type)
    size = tf.bitwise.bitwise_and(bits, tf.constant(mask, int_type))
    zero = tf.equal(size, 0)
    if ufunc in _COMPARISONS:
        return tf.logical_or(zero, size >= normal)
    in_range = tf.logical_and(size >= low, size <= high)
    if divisor:
        return in_range
    if ufunc is np.sqrt:
        in_range = tf.logical_and(in_range, bits >= 0)
    return tf.logical_or(zero, in_range)


def _stand_in(value: Any) -> Any:
    """A value of ``value``'s dtype and class for NumPy to compute the result's kind on."""
    if isinstance(value, Array):
        return np.ones((1,) * value.ndim, value.dtype) if value.cls is np.ndarray else value.cls(1)
    if type(value) in (int, float) or type(value) in _SCALAR_TYPES:
        return value
    if isinstance(value, Number):
        return 1.0
    raise NotComputed(f"an operand of type {type(value).__name__}")


def _dtype(value: Any) -> Any:
    """What ``ufunc.resolve_dtypes`` takes for ``value``: its dtype, or ``int``/``float`` for
    a Python number (NEP 50's weak scalars)."""
    if isinstance(value, Array):
        return value.dtype
    if type(value) in (int, float):
        return type(value)
    if isinstance(value, Number):
        return float
    return np.dtype(type(value))


def _tensor(value: Any, dtype: np.dtype) -> tf.Tensor:
    """``value`` as a tensor of ``dtype``: an array's cast by TensorFlow, a number converted by NumPy."""
    if isinstance(value, (Array, Number)):
        return tf.cast(value.tensor, dtype)
    return tf.constant(np.asarray(value).astype(dtype))
