"""The Python state of the Keras objects a trace read: guarded unchanged.

Library code Janus calls as it is (a Keras layer's ``call``, an optimizer's update) reads its
objects' attributes in plain Python while tracing, and the graph keeps what it read: a
``LeakyReLU``'s ``negative_slope`` becomes a constant, a kernel the program replaced by a
tensor (``layer._kernel = w - lr * g``, MAML's functional weights) a captured tensor. Their
identity guard alone would let a later call, after the program set another slope or
another kernel, run the graph on the old one: a silent wrong answer.

So after a trace, every Keras object reachable from the framework objects it read
(``HeapModel.framework_objects``: their attributes, the lists, tuples and dicts among them,
and the objects these hold) is remembered with a shallow copy of its attributes, and one
guard checks at each call that every such object's ``__dict__`` (and every such list's and
dict's items) still equals its copy. Equal is cheap where nothing changed (each attribute
is the same object: Python's ``==`` on a dict compares identity first) and a miss where
anything did (a new tensor, a new number, a new sublayer, a key added). A variable's state
is its own (read in the graph at each run), so variables are not walked; nor are
TensorFlow's own objects (a strategy, a module), whose Python attributes are bookkeeping a
trace itself changes (a strategy's collective keys).
"""
from __future__ import annotations

import collections
import dis
import functools
import operator
import types
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tensorflow as tf

from janus import config
from janus.convert import libraries
from janus.convert.registry import code_objects
from janus.errors import ConversionError
from janus.reporting.codes import Code
from janus.trace.guards import GuardBuilder, GuardKind
from janus.trace.values import is_user_class


class LibraryState:
    """The framework objects and containers a graph's library code may read, with copies of
    their state when the graph was traced, and the globals and closure cells of the user's
    functions they hold (a ``Lambda``'s function, called by Keras, reads them unseen);
    :meth:`unchanged` is the guard's test."""

    __slots__ = ("objects", "attributes", "containers", "items", "arrays", "copies", "reads", "cells", "contents")

    def __init__(self, reach: "_Reach"):
        self.objects = reach.objects
        self.attributes = [dict(vars(o)) for o in reach.objects]
        self.containers = reach.containers
        self.items = [dict(c) if isinstance(c, dict) else list(c) for c in reach.containers]
        self.arrays = reach.arrays
        self.copies = [a.copy() for a in reach.arrays]
        # tuples: their == compares identity first, where a bare == of an array would not
        self.reads = [(g, names, tuple(map(g.__getitem__, names))) for g, names in reach.globals]
        self.cells = reach.cells
        self.contents = tuple(c.cell_contents for c in reach.cells)

    def unchanged(self) -> bool:
        """Every object's attributes and every container's items are as when traced, and so
        are the values the user's functions among them read (an ``==`` that raises, a tensor
        compared with a new one, is a change: the guard fails)."""
        try:
            return all(map(operator.eq, map(vars, self.objects), self.attributes)) \
                and all(map(operator.eq, self.containers, self.items)) \
                and all(tuple(map(g.__getitem__, names)) == seen for g, names, seen in self.reads) \
                and tuple(c.cell_contents for c in self.cells) == self.contents \
                and all(map(np.array_equal, self.arrays, self.copies))
        except Exception:  # noqa: BLE001 - a value whose == raises (a tensor replaced): changed
            return False

    def __len__(self) -> int:
        return len(self.objects) + len(self.containers) + len(self.reads) + len(self.cells) + len(self.arrays)


@dataclass
class _Reach:
    """What the walk from the objects a trace read found."""

    objects: list = field(default_factory=list)
    containers: list = field(default_factory=list)
    arrays: list = field(default_factory=list)
    globals: list = field(default_factory=list)  # (a user function's globals, the names it reads there)
    cells: list = field(default_factory=list)  # the closure cells of user functions


def guard(guard_set: GuardBuilder, roots: list[tuple[Any, Any]]) -> None:
    """Add the guard that the state of the framework objects reachable from ``roots``
    (``(source, object)`` pairs the trace read) is unchanged at the next call."""
    reach = _reachable([obj for _, obj in roots if _walked(obj)])
    if not reach.objects and not reach.containers:
        return
    state = LibraryState(reach)
    guard_set.add(f"{guard_set.const(state, 'ls')}.unchanged()",
                  f"the Python attributes of {len(reach.objects)} Keras objects the graph's library code may read "
                  f"(and what the user's functions they hold read) are as when traced", GuardKind.LIBRARY_STATE)


def _reachable(roots: list) -> _Reach:
    """The framework objects and mutable containers reachable from ``roots`` through
    attributes and items (not through variables), and through the globals and closure cells
    of the user's functions among them; too many fails the trace."""
    reach = _Reach()
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
        queue.extend(v for v in _held(obj, reach) if _walked(v) or _user_function(v))
    return reach


def _held(obj: Any, reach: _Reach) -> list:
    """Record ``obj`` in ``reach``; the values it holds (or, a user function, reads: a NumPy
    array among those is compared by value, since the function reads its items; one a Keras
    object holds is an attribute compared as the same object)."""
    if _user_function(obj):
        names = sorted(n for n in _global_names(obj.__code__) if n in obj.__globals__)
        if names:
            reach.globals.append((obj.__globals__, names))
        cells = [c for c in obj.__closure__ or () if _bound(c)]
        reach.cells += cells
        values = [obj.__globals__[n] for n in names] + [c.cell_contents for c in cells]
        reach.arrays += [v for v in values if isinstance(v, np.ndarray)]
        return values
    if isinstance(obj, (list, dict)):
        reach.containers.append(obj)
    elif not isinstance(obj, tuple):
        reach.objects.append(obj)
    values = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else vars(obj).values()
    return list(values)


def _user_function(value: Any) -> bool:
    return isinstance(value, types.FunctionType) and libraries.is_user_function(value)


def _bound(cell: types.CellType) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # not bound yet
        return False
    return True


def _global_names(code: types.CodeType) -> set[str]:
    """The names ``code`` (and the functions nested in it) may read as globals."""
    return {name for c in code_objects(code) for name in c.co_names}


@functools.lru_cache(maxsize=512)
def library_reads(cls: type) -> frozenset[str]:
    """The attributes of ``self`` the library classes of ``cls``'s MRO (not the user's
    subclasses) read in their code (methods, properties, nested functions): a deferred write
    of one of them would not be seen by that code while tracing, which reads the object in
    Python."""
    names: set[str] = set()
    for klass in cls.__mro__:
        if klass is object or is_user_class(klass):
            continue
        for member in vars(klass).values():
            for fn in (member, getattr(member, "fget", None), getattr(member, "__func__", None)):
                code = getattr(fn, "__code__", None)
                if isinstance(code, types.CodeType):
                    names |= _names(code)
    return frozenset(names)


_SELF_LOADS = frozenset({"LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_DEREF", "LOAD_CLOSURE"})
_ATTRIBUTE_LOADS = frozenset({"LOAD_ATTR", "LOAD_METHOD"})


def _names(code: types.CodeType) -> set[str]:
    """``name`` of every ``self.name`` read in ``code`` and the functions nested in it."""
    out: set[str] = set()
    for nested in code_objects(code):
        previous = None
        for ins in dis.get_instructions(nested):
            if ins.opname in _ATTRIBUTE_LOADS and previous is not None and previous.opname in _SELF_LOADS \
                    and previous.argval == "self":
                out.add(ins.argval)
            previous = ins
    return out


# Keras's bookkeeping, which a layer's call does not read: the trackers of its attributes
# (their containers are the layer's own, walked from it), the symbolic history of a
# functional model (built once), initializers (a trace creates no variable), the configs
# kept for saving, and the callbacks of ``fit`` (``model.history`` grows every epoch).
_KERAS = ("keras", "tf_keras")
_BOOKKEEPING = ("keras.src.utils.tracking", "keras.src.backend.common.keras_tensor", "keras.src.ops.node",
                "keras.src.ops.symbolic_arguments", "keras.src.initializers", "keras.src.saving",
                "keras.src.callbacks")


def _keras_object(value: Any) -> bool:
    """An object of a Keras class or a subclass of one (a user's model): its library code
    reads its attributes while tracing.  TensorFlow's own objects (strategies, modules) keep
    their state in variables and resources; their Python attributes are bookkeeping a trace
    may change (a strategy's collective keys)."""
    return any((k.__module__ or "").split(".")[0] in _KERAS for k in type(value).__mro__)


def _walked(value: Any) -> bool:
    """A list, tuple or dict (of a framework object), or a Keras object with attributes of
    its own; not a variable or a tensor (a Keras variable, whose state is read
    in the graph; an attribute holding one is compared as a value), Keras's bookkeeping, a
    class or a module."""
    if isinstance(value, (list, tuple, dict)):
        return True
    if isinstance(value, (tf.Variable, type)) or tf.is_tensor(value) or not _keras_object(value) \
            or type(value).__module__.startswith(_BOOKKEEPING):
        return False
    try:
        vars(value)
    except TypeError:
        return False
    return True
