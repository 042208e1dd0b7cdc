"""Lists of Python numbers fed to the graph as tensors while only TensorFlow reads them.

A replay buffer's sampled rewards and actions (``rewards_sample = [rewards_history[i] for i
in indices]``, handed to ``rewards_sample + gamma * q`` and ``one_hot(action_sample, n)``)
are new lists at every call: guarded by value, every graph would serve one call.  A list
argument of one kind of number (all ints or all floats) whose values changed between calls
is fed instead, as a tensor of its length (:class:`ListKind`: ``int64`` for ints, Python's or
NumPy's, ``float64`` or ``float32`` for floats), and converted code sees a :class:`FedList`:
TensorFlow converts it as it converts the list (int32, checked, for ints; float32 for
Python floats; a NumPy float's own dtype; or the dtype asked for), ``len`` is its length, and a tensor added to it
adds.  Anything else Python does with a list (items, iteration, ``append``, ``+`` with a
list, ``*``, comparisons, returning or storing it) needs its values: the trace restarts with
the list specialized by value, for good (``janus.trace.scalars.value_needed``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np
import tensorflow as tf

from janus.trace.scalars import as_int32, value_needed

# The items a fed list may hold (all of one type): what it is fed as, and what TensorFlow
# makes of such a list when no dtype is asked for (None: int32, or int64 for a value
# outside int32, as for Python ints; a NumPy int64 item converts the same way).
_ITEMS = {int: (np.int64, None), float: (np.float64, tf.float32), np.float64: (np.float64, tf.float64),
          np.float32: (np.float32, tf.float32)}
# Python's and NumPy's ints convert alike, mixed or not (int32 when every item fits): one kind.
_CLASS = {int: int, np.int64: int, np.int32: int, float: float, np.float64: np.float64, np.float32: np.float32}


@dataclass(frozen=True)
class ListKind:
    """A list of ``length`` Python numbers of type ``item`` (int or float), fed as a tensor."""

    item: type
    length: int

    @classmethod
    def of(cls, value: Any) -> "ListKind | None":
        """The kind of ``value`` if it is a non-empty list of ints (Python's or NumPy's, mixed
        or not, within int64) or of floats of one type (Python's, ``np.float64`` or ``np.float32``)."""
        if type(value) is not list or not value:
            return None
        item = _CLASS.get(type(value[0]))
        if item is None or not all(_CLASS.get(type(v)) is item for v in value):
            return None
        if item is int and not all(-2 ** 63 <= int(v) < 2 ** 63 for v in value):
            return None
        return cls(item, len(value))

    def fits(self, value: Any) -> bool:
        """``value`` is a list of this kind (the guard of a fed list)."""
        return ListKind.of(value) == self

    @property
    def spec(self) -> tf.TensorSpec:
        return tf.TensorSpec([self.length], tf.as_dtype(_ITEMS[self.item][0]))

    @property
    def converted(self) -> tf.DType | None:
        """The dtype TensorFlow makes of such a list (None: int32, checked)."""
        return _ITEMS[self.item][1]

    @property
    def integral(self) -> bool:
        return self.converted is None

    def feed(self, value: list) -> tf.Tensor:
        """The eager tensor the list is fed as, at each call (through NumPy, as a number is)."""
        return tf.constant(np.asarray(value, _ITEMS[self.item][0]))

    def describe(self) -> str:
        return f"a list of {self.length} {self.item.__name__}s"


class FedList:
    """A list of Python numbers the graph was fed (``tensor``), seen by converted code while
    only TensorFlow reads it."""

    __slots__ = ("tensor", "kind")
    __array_ufunc__ = None  # NumPy defers to it (and it refuses): never an object array of it

    def __init__(self, tensor: tf.Tensor, kind: ListKind):
        self.tensor, self.kind = tensor, kind

    def __tf_tensor__(self, dtype: tf.DType | None = None, name: str | None = None) -> tf.Tensor:
        """What TensorFlow makes of the list: int32 (checked in range) or float32, or ``dtype``."""
        if dtype is None:
            return as_int32(self.tensor) if self.kind.integral else tf.cast(self.tensor, self.kind.converted)
        if not (dtype.is_floating or dtype.is_integer) or not self.kind.integral and dtype.is_integer:
            self.needed(f"converted to {dtype.name}")
        return tf.cast(self.tensor, dtype)

    def as_constant(self, dtype: Any = None, shape: Any = None, name: str | None = None) -> tf.Tensor:
        """``tf.constant(xs, dtype)``: what eager's ``tf.constant`` makes of the list."""
        if shape is not None:
            self.needed("given to tf.constant with a shape")
        return self.__tf_tensor__(None if dtype is None else tf.as_dtype(dtype), name)

    def __len__(self) -> int:
        return self.kind.length

    def __add__(self, other: Any) -> Any:
        if isinstance(other, tf.Tensor):  # list + tensor: Python's list declines, the tensor adds
            return NotImplemented
        self.needed("joined with +")

    __radd__ = __add__

    def needed(self, use: str) -> NoReturn:
        value_needed(self.tensor, use, noun="list")

    def _concrete(self, *args: Any, **kwargs: Any) -> NoReturn:
        self.needed("needed while tracing")

    __getitem__ = __iter__ = __contains__ = __bool__ = __hash__ = __eq__ = __ne__ = _concrete
    __lt__ = __le__ = __gt__ = __ge__ = __mul__ = __rmul__ = __str__ = __format__ = __reversed__ = _concrete

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("_") and hasattr(list, name):  # append, index, sort ...
            self.needed(f"asked for .{name}")
        raise AttributeError(f"'FedList' object has no attribute '{name}'")

    def __repr__(self) -> str:
        return f"<FedList {self.kind.describe()} {self.tensor!r}>"
