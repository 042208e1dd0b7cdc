"""What a Python island returns, as the graph carries it: one record per kind of value.

An island (``janus.lowering.islands``: a user method drawing from its generator, a vouched
environment's ``step``, a NumPy draw) runs as a ``tf.numpy_function``; its spec says which
tensors its result becomes (``dtypes``), how the result is checked and flattened into them
when it runs (``flatten``), and how converted code sees them while tracing (``rebuild``).
"""
from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any, Iterator, Union

import numpy as np
import tensorflow as tf

from janus.trace.arrays import IslandArray, TensorValues
from janus.trace.scalars import DTYPES, PyScalar


@dataclass(frozen=True)
class ScalarSpec:
    """A Python ``int``, ``float`` or ``bool``."""

    kind: type

    def dtypes(self) -> list:
        return [DTYPES[self.kind]]

    def flatten(self, result: Any, flat: list) -> bool:
        if type(result) is not self.kind:
            return False
        flat.append(np.asarray(result, DTYPES[self.kind].as_numpy_dtype))
        return True

    def rebuild(self, outs: Iterator, fn: types.FunctionType, misused: dict) -> Any:
        t = next(outs)
        t.set_shape([])
        return PyScalar(t, self.kind)


@dataclass(frozen=True)
class ArraySpec:
    """A NumPy array of this dtype and shape; ``new``: a new array at every call (an
    environment's observation), which leaves the graph as one."""

    dtype: np.dtype
    shape: tuple
    new: bool = False

    def dtypes(self) -> list:
        return [tf.as_dtype(self.dtype)]

    def flatten(self, result: Any, flat: list) -> bool:
        if type(result) is not np.ndarray or result.dtype != self.dtype or result.shape != self.shape:
            return False
        flat.append(np.array(result))  # a copy: the tensor must not share the object's array
        return True

    def rebuild(self, outs: Iterator, fn: types.FunctionType, misused: dict) -> Any:
        t = next(outs)
        t.set_shape(self.shape)
        return TensorValues(t) if self.new else IslandArray(t, np.empty(0, self.dtype), self.shape, fn, misused)


@dataclass(frozen=True)
class NoneSpec:
    """``None``."""

    def dtypes(self) -> list:
        return []

    def flatten(self, result: Any, flat: list) -> bool:
        return result is None

    def rebuild(self, outs: Iterator, fn: types.FunctionType, misused: dict) -> Any:
        return None


@dataclass(frozen=True)
class EmptyDictSpec:
    """An empty ``dict`` (an environment's ``info``)."""

    def dtypes(self) -> list:
        return []

    def flatten(self, result: Any, flat: list) -> bool:
        return type(result) is dict and not result

    def rebuild(self, outs: Iterator, fn: types.FunctionType, misused: dict) -> Any:
        return {}  # a new dict, as eager's call returns one


@dataclass(frozen=True)
class SequenceSpec:
    """A ``tuple`` or ``list`` of these parts."""

    type: type
    parts: tuple

    def dtypes(self) -> list:
        return [d for part in self.parts for d in part.dtypes()]

    def flatten(self, result: Any, flat: list) -> bool:
        return type(result) is self.type and len(result) == len(self.parts) and \
            all(part.flatten(value, flat) for value, part in zip(result, self.parts))

    def rebuild(self, outs: Iterator, fn: types.FunctionType, misused: dict) -> Any:
        return self.type(part.rebuild(outs, fn, misused) for part in self.parts)


IslandSpec = Union[ScalarSpec, ArraySpec, NoneSpec, EmptyDictSpec, SequenceSpec]
