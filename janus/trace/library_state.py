"""The Python state of the TensorFlow and Keras objects a trace read: guarded unchanged.

Library code Janus calls as it is (a Keras layer's ``call``, an optimizer's update) reads its
objects' attributes in plain Python while tracing, and the graph keeps what it read: a
``LeakyReLU``'s ``negative_slope`` becomes a constant, a kernel the program replaced by a
tensor (``layer._kernel = w - lr * g``, MAML's functional weights) a captured tensor. Their
identity guard alone would let a later call, after the program set another slope or
another kernel, run the graph on the old one: a silent wrong answer.

So after a trace, every TensorFlow or Keras object reachable from those it read
(``HeapModel.framework_objects``: their attributes, the lists, tuples and dicts among them,
and the objects these hold) is remembered with a shallow copy of its attributes, and one
guard checks at each call that every such object's ``__dict__`` (and every such list's and
dict's items) still equals its copy. Equal is cheap where nothing changed (each attribute
is the same object: Python's ``==`` on a dict compares identity first) and a miss where
anything did (a new tensor, a new number, a new sublayer, a key added). A variable's state
is its own (read in the graph at each run), so variables are not walked.
"""
from __future__ import annotations

import collections
import operator
from typing import Any

import tensorflow as tf

from janus import config
from janus.errors import ConversionError
from janus.reporting.codes import Code
from janus.trace.guards import GuardBuilder, GuardKind
from janus.trace.values import is_eager_tensor, is_framework_object


class LibraryState:
    """The framework objects and containers a graph's library code may read, with copies of
    their state when the graph was traced; :meth:`unchanged` is the guard's test."""

    __slots__ = ("objects", "attributes", "containers", "items")

    def __init__(self, objects: list, containers: list):
        self.objects = objects
        self.attributes = [dict(vars(o)) for o in objects]
        self.containers = containers
        self.items = [dict(c) if isinstance(c, dict) else list(c) for c in containers]

    def unchanged(self) -> bool:
        """Every object's attributes and every container's items are as when traced (an
        ``==`` that raises, a tensor compared with a new one, is a change: the guard fails)."""
        try:
            return all(map(operator.eq, map(vars, self.objects), self.attributes)) \
                and all(map(operator.eq, self.containers, self.items))
        except Exception:  # noqa: BLE001 - a value whose == raises (a tensor replaced): changed
            return False

    def __len__(self) -> int:
        return len(self.objects) + len(self.containers)


def guard(guard_set: GuardBuilder, roots: list[tuple[Any, Any]]) -> None:
    """Add the guard that the state of the framework objects reachable from ``roots``
    (``(source, object)`` pairs the trace read) is unchanged at the next call."""
    objects, containers = _reachable([obj for _, obj in roots if _walked(obj)])
    if not objects and not containers:
        return
    state = LibraryState(objects, containers)
    guard_set.add(f"{guard_set.const(state, 'ls')}.unchanged()",
                  f"the Python attributes of {len(objects)} TensorFlow and Keras objects the graph's library code "
                  f"may read are as when traced", GuardKind.LIBRARY_STATE)


def _reachable(roots: list) -> tuple[list, list]:
    """The framework objects and mutable containers reachable from ``roots`` through
    attributes and items (not through variables); too many fails the trace."""
    objects, containers = [], []
    queue = collections.deque(roots)
    seen: set[int] = set()
    while queue:
        obj = queue.popleft()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if len(seen) > config.LIMITS.library_state_objects:
            raise ConversionError(f"the TensorFlow and Keras objects it reads hold more than "
                                  f"{config.LIMITS.library_state_objects:,} objects: their state cannot be guarded",
                                  code=Code.UNMODELED_VALUE)
        if isinstance(obj, (list, dict)):
            containers.append(obj)
        elif not isinstance(obj, tuple):
            objects.append(obj)
        values = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else vars(obj).values()
        queue.extend(v for v in list(values) if _walked(v))
    return objects, containers


def _walked(value: Any) -> bool:
    """A list, tuple or dict (of a framework object), or a TensorFlow or Keras object with
    attributes of its own; not a variable (its state is read in the graph), a tensor (an
    attribute holding one is compared as a value), a class or a module."""
    if isinstance(value, (list, tuple, dict)):
        return True
    if isinstance(value, (tf.Variable, type)) or is_eager_tensor(value) or not is_framework_object(value):
        return False
    try:
        vars(value)
    except TypeError:
        return False
    return True
