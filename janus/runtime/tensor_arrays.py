"""``tf.TensorArray(...)`` in converted code: made as written, its settings recorded.

A graph's ``TensorArray`` forgets the settings eager's keeps (``clear_after_read``, the
element shape it was made with); the trace records them (``janus.trace.tensor_arrays``) so
that an array leaving the graph — across a graph break, returned, stored — is rebuilt as
eager's (``janus.commit.packing``).
"""
from __future__ import annotations

import inspect
from typing import Any

import tensorflow as tf

from janus.trace.active import current
from janus.trace.tensor_arrays import TensorArrayMade

_SIGNATURE = inspect.signature(tf.TensorArray.__init__)
_DEFAULTS = {"dynamic_size": False, "clear_after_read": True}  # eager's, where the signature says None


def construct(*args: Any, **kwargs: Any) -> tf.TensorArray:
    """``tf.TensorArray(*args, **kwargs)``, recorded in the trace in progress."""
    ta = tf.TensorArray(*args, **kwargs)
    ctx = current()
    if ctx is not None:
        given = _SIGNATURE.bind(None, *args, **kwargs)
        given.apply_defaults()
        ctx.tensor_arrays.append(_made(ta.dtype, given.arguments))
    return ta


def _made(dtype: tf.DType, arguments: dict) -> TensorArrayMade:
    """The settings of the call's ``arguments`` (eager's defaults for None)."""
    flags = [_DEFAULTS.get(name) if arguments[name] is None else arguments[name]
             for name in ("dynamic_size", "clear_after_read", "infer_shape")]
    given = all(type(f) is bool for f in flags)
    try:
        shape = tf.TensorShape(arguments["element_shape"])
    except (TypeError, ValueError):  # a shape the graph computes
        shape, given = tf.TensorShape(None), False
    dims = tuple(shape.as_list()) if shape.rank is not None else None
    return TensorArrayMade(dtype, *(f is True for f in flags), dims, given)
