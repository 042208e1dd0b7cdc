"""Truth values of what converted code tests: a Python value's own, or a graph's boolean.

Every test of converted code (``if``, ``while``, ``and``/``or``/``not``, ``assert``,
``bool(t)``) first asks :func:`is_tensor`: a value the graph computes is tested by a
boolean tensor computed as eager's ``bool(t)`` computes it.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

from janus.errors import ConversionError
from janus.reporting.codes import Code
from janus.trace import known_values
from janus.trace.values import PyScalar, is_symbolic
from janus.trace.scalars import PyOrTensor


def is_tensor(x: Any) -> bool:
    """A value the graph computes: a graph tensor or a Python scalar derived from one (or either)."""
    return is_symbolic(x) or isinstance(x, (PyScalar, PyOrTensor))


def to_bool(cond: Any) -> tf.Tensor:
    """The truth value of a scalar tensor, as eager's ``bool(t)`` computes it."""
    if isinstance(cond, PyScalar):
        cond = cond.tensor
    if isinstance(cond, PyOrTensor):  # the number's truth or the tensor's, as the path went
        number = tf.not_equal(cond.number, tf.zeros([], cond.number.dtype))
        return tf.where(cond.is_number, number, to_bool(cond.tensor))
    if cond.shape.rank is None or cond.shape.rank > 0 and cond.shape.num_elements() != 1:
        raise ConversionError("truth value of a non-scalar tensor", code=Code.TENSOR_VALUE)
    cond = tf.reshape(cond, [])
    if cond.dtype != tf.bool:
        cond = tf.not_equal(cond, tf.zeros([], cond.dtype))
    return cond


def truth(value: Any) -> tf.Tensor:
    """The truth of any value as a boolean tensor (a constant for a Python value)."""
    return to_bool(value) if is_tensor(value) else tf.constant(bool(value))


def known_truth(cond: Any) -> bool | None:
    """The truth of a condition the graph computes, when the trace knows its value
    (``janus.trace.known_values``): then the branch is Python's, right for every run the
    guards admit.  None otherwise, noting the tensor inputs the value is made of (a trace
    that fails may specialize them)."""
    t = cond.tensor if isinstance(cond, PyScalar) else cond
    if not is_symbolic(t) or t.shape.num_elements() != 1:
        return None
    value = known_values.needed_value(t, "a condition on it")
    return None if value is None else bool(np.asarray(value).reshape(()))
