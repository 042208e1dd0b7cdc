"""What kind of Python value a trace read: the one classification every reader uses.

A value read from outside the trace (an argument, a global, a closure cell, an attribute,
an item of a container read so) is classified once, where the trace first meets it, by
:func:`classify`.  The kind decides how the heap model (``janus.trace.heap``) guards it,
feeds it, and shows it to converted code, and whether a write to it can be deferred.
The rule every kind keeps: **a value whose contents the trace reads is guarded on what
was read, fed as a graph input, or the read fails the trace** (the statement runs in
Python, at a graph break or eagerly) — an identity guard alone covers only a value that
cannot change (a function, a class, a module, an immutable object) or one whose every
read goes through guarded paths (a tracked object's attributes).
``docs/architecture.md`` has the table of kinds with their guard, feed, write and pack.
"""
from __future__ import annotations

import array
import collections
import collections.abc
import datetime
import decimal
import enum
import fractions
import os
import pathlib
import re
import types
from typing import Any

import numpy as np
import tensorflow as tf

from janus.trace.arrays import FED_SCALAR_TYPES
from janus.trace.values import (
    SCALARS, UNDEF, is_dataset_iterator, is_eager_composite, is_eager_tensor, is_framework_object, is_plain_callable,
    is_user_class,
)


class Kind(enum.Enum):
    """The kinds of values a trace reads; each value says what the kind is guarded on."""

    TENSOR = "an eager tensor: fed at every call, guarded on dtype and shape"
    COMPOSITE = "a ragged, sparse or extension tensor: fed through its TypeSpec, guarded on it"
    CONSTANT = "True, False or None: guarded to be that object"
    SCALAR = ("an int, float, str, bytes or complex: guarded by value (an int or float fed once it changes, a str "
              "fed once it changes while only TensorFlow reads it)")
    UNDEF = "a local not bound yet: any use fails the trace"
    SEQUENCE = ("a tuple, list or named tuple: guarded on type and length, items read in turn (a list argument of "
                "numbers whose values change is fed while only TensorFlow reads it)")
    MAPPING = ("a dict, OrderedDict, defaultdict, Counter or plain dict subclass: guarded on type and keys "
               "in order, values read in turn; the trace changes a copy, writes are deferred")
    DEQUE = ("a collections.deque: guarded on type, maxlen and length, items read in turn; the trace "
             "changes a copy, its methods are deferred (the deque evicts as eager's does)")
    SET = "a set or frozenset of Python scalars: guarded by value"
    TYPED_ARRAY = "an array.array: guarded on typecode and elements"
    MAPPING_PROXY = "a types.MappingProxyType: guarded on keys in order, values read in turn"
    ENVIRON = "os.environ: each variable the trace reads guarded on its value (or its absence)"
    WRAPPER = ("a UserDict, UserList, UserString or ChainMap: guarded on its class, its data (.data, .maps) read "
               "in turn into a copy whose own code reads the trace's copies; a change to it fails the trace")
    DATASET = "a tf.data.Dataset: fed through its DatasetSpec, guarded on its element spec"
    DATA_ITERATOR = "a tf.data iterator: fed, its get_next advancing the caller's iterator"
    PY_ITERATOR = "a Python iterator or generator: the trace would consume it, so it fails"
    NUMPY = "a NumPy array or scalar: fed by dtype and shape, or guarded by value"
    NAMED = "a function, module or class: guarded to be that object"
    IMMUTABLE = ("an immutable library object (range, slice, Decimal, date, path, a bare object() sentinel ...): "
                 "guarded to be that object")
    TENSOR_ARRAY = ("an eager tf.TensorArray: its write changes it in place, so a trace (which would write graph "
                    "tensors into it) fails")
    FRAMEWORK = "a TensorFlow, Keras or NumPy object (state in variables): guarded to be that object"
    USER_OBJECT = ("an object of a user class: guarded on its class; its attributes are read in turn, its "
                   "dunders (len, [], in, iter, bool, float ...) run converted")
    TRACKED_OBJECT = "a library object with a __dict__: guarded to be that object, its attributes read in turn"
    UNKNOWN = "anything else: Janus does not model its contents, so the trace fails and Python reads it"


_DICTS = (dict, collections.OrderedDict, collections.defaultdict, collections.Counter)
# What a dict subclass may define without changing how its items are read.
_DICT_READS = frozenset({"__getitem__", "__missing__", "get", "keys", "values", "items", "__iter__", "__len__",
                         "__contains__", "__eq__", "copy", "__reversed__"})
# Pure-Python containers of the standard library whose items live in plain containers of theirs.
_WRAPPERS = (collections.UserDict, collections.UserList, collections.UserString, collections.ChainMap)
_IMMUTABLE = (range, slice, type(Ellipsis), type(NotImplemented), decimal.Decimal, fractions.Fraction,
              datetime.date, datetime.time, datetime.timedelta, pathlib.PurePath, re.Pattern, enum.Enum)


def is_modeled_mapping(value: Any) -> bool:
    """A dict, an ``OrderedDict``/``defaultdict``/``Counter``, or a subclass of one that
    does not change how items are read (no ``__getitem__``, ``get``, ... of its own)."""
    cls = type(value)
    if cls in _DICTS:
        return True
    if not isinstance(value, dict):
        return False
    own = [k for k in cls.__mro__ if k not in _DICTS and k is not object]
    return not any(_DICT_READS & vars(k).keys() for k in own)


def is_container(value: Any) -> bool:
    """A list, set, deque or modeled mapping: a container whose methods the trace runs on
    its copy, deferring the ones that change it (``janus.lowering.containers``)."""
    return type(value) in (list, set, collections.deque) or is_modeled_mapping(value)


def is_mutable_container(value: Any) -> bool:
    """A container or an ``array.array``: converted code may depend on two of them being
    distinct objects (a write to one is not seen through the other)."""
    return is_container(value) or type(value) is array.array


def classify(value: Any) -> Kind:
    """The kind of ``value``: how a trace that reads it must guard, feed and copy it."""
    cls = type(value)
    if value is None or cls is bool:
        return Kind.CONSTANT
    if cls in SCALARS:
        return Kind.SCALAR
    if is_eager_tensor(value):
        return Kind.TENSOR
    if is_plain_callable(value):
        return Kind.NAMED
    if value is UNDEF:
        return Kind.UNDEF
    return _container_kind(value, cls) or _object_kind(value, cls)


def _container_kind(value: Any, cls: type) -> Kind | None:
    if cls in (tuple, list) or isinstance(value, tuple) and hasattr(cls, "_fields"):
        return Kind.SEQUENCE
    if is_modeled_mapping(value):
        return Kind.MAPPING
    if cls is collections.deque:
        return Kind.DEQUE
    if cls in (set, frozenset):
        return Kind.SET
    if cls is array.array:
        return Kind.TYPED_ARRAY
    if cls is types.MappingProxyType:
        return Kind.MAPPING_PROXY
    if value is os.environ:
        return Kind.ENVIRON
    if cls in _WRAPPERS:
        return Kind.WRAPPER
    return None


def _object_kind(value: Any, cls: type) -> Kind:
    if is_eager_composite(value):
        return Kind.COMPOSITE
    if isinstance(value, tf.data.Dataset):
        return Kind.DATASET
    if is_dataset_iterator(value):
        return Kind.DATA_ITERATOR
    if hasattr(cls, "__next__"):
        return Kind.PY_ITERATOR
    if isinstance(value, np.ndarray) or cls in FED_SCALAR_TYPES:
        return Kind.NUMPY
    if isinstance(value, (types.BuiltinFunctionType, types.MethodType, types.BuiltinMethodType)) \
            or callable(value) and not hasattr(value, "__dict__"):
        return Kind.NAMED
    if isinstance(value, _IMMUTABLE) and not is_user_class(cls) or cls is object:  # object(): a sentinel
        return Kind.IMMUTABLE
    if isinstance(value, tf.TensorArray):
        return Kind.TENSOR_ARRAY
    if is_framework_object(value):
        return Kind.FRAMEWORK
    if is_user_class(cls):
        return Kind.USER_OBJECT
    if hasattr(value, "__dict__") and not isinstance(value, (collections.abc.Mapping, collections.abc.Sequence)):
        return Kind.TRACKED_OBJECT
    return Kind.UNKNOWN
