"""A tree of library objects a Python island changes in place: saved before each graph
run, put back in place if the run aborts.

A user object's island runs on a copy of its object (:mod:`janus.commit.island_copies`):
the analysis proved it only rebinds the object's attributes.  A library environment is a
small tree of objects (a gymnasium environment inside its wrappers, each holding the next
in ``env``, with spaces and NumPy generators of their own) whose code rebinds attributes,
adds to counters in place and re-seeds generators; a copy of the tree would change the
identity of objects the program holds (``env.unwrapped``), so the island runs on the
objects themselves.  All-or-nothing then means undo: before the run, :class:`TreeSnapshot`
walks the tree from its root and saves what can change — every object's ``__dict__``
(its bindings), the contents of its lists, dicts and NumPy arrays, every generator's
state — and a run that aborts puts all of it back in place: the same objects, holding the
same values, the generators where they were.  A run that succeeds keeps what the island
did (it *is* eager's effect), and the snapshot is dropped.

The walk refuses what it cannot put back (an object of a class not known to keep its state
in its ``__dict__``, a set, a generator over something else): that call runs eagerly
(:class:`TreeChanged`).  No other Python thread runs meanwhile
(:func:`janus.commit.island_copies.take_all`), so none sees the effects of a run that
aborts.  What the island's code may change beyond the tree is the vouching module's
business (:mod:`janus.lowering.environments`).
"""
from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from janus.commit import undo as undoing
from janus.commit.island_copies import RANDOM_GENERATORS, generator_state, set_generator_state

# values whose every part is immutable: the binding saved with their holder's __dict__ is all
_LEAVES = (int, float, bool, complex, str, bytes, type(None), np.generic, np.dtype, type, types.FunctionType,
           types.BuiltinFunctionType, types.ModuleType)


class TreeChanged(undoing.Disturbed):
    """The tree holds what its snapshot could not put back: this call runs eagerly."""


@dataclass(eq=False)
class TreeSnapshot:
    """What a graph run's island may change in the tree of objects found by ``find``,
    saved by :meth:`take` before the run and put back by :meth:`abort` if it fails.
    ``member(obj)``: the objects whose ``__dict__`` the snapshot may save (the others
    refuse the run); ``check(root)``: why the tree may no longer be the island's.  The
    protocol of :class:`janus.commit.island_copies.IslandCopy`."""

    label: str
    find: Callable[[tuple, dict], Any]
    member: Callable[[Any], bool]
    methods: list[str] = field(default_factory=list)  # the islands' methods, for janus.explain
    saved: list[tuple[Any, Any]] | None = None
    kind: str = "tree"
    # why the tree, as it is now, may not be the island's (None: it may): checked at every run
    check: Callable[[Any], str | None] = lambda root: None

    def take(self, a: tuple, k: dict) -> None:
        """Save the tree before a run (raises :class:`TreeChanged` if it cannot be, or if
        ``check`` refuses the tree as it is now)."""
        root = self.find(a, k)
        why = self.check(root)
        if why is not None:
            raise TreeChanged(f"{self.label} changed since the trace: {why}")
        self.saved = save(root, self.member, self.label)

    def abort(self) -> None:
        """The run failed: put every object, container, array and generator back in place."""
        if self.saved is not None:
            restore(self.saved)
        self.saved = None

    def commit(self) -> None:
        """The run succeeded: what the island did stands (eager's effects)."""
        self.saved = None


def save(root: Any, member: Callable[[Any], bool], label: str) -> list[tuple[Any, Any]]:
    """``(object, saved)`` for everything reachable from ``root`` that can change in place;
    raises :class:`TreeChanged` for a value it could not put back."""
    saved: list[tuple[Any, Any]] = []
    seen: set[int] = set()
    pending = [root]
    while pending:
        value = pending.pop()
        if isinstance(value, _LEAVES) or id(value) in seen:
            continue
        seen.add(id(value))
        kind = type(value)
        if kind in (tuple, frozenset):
            pending.extend(value)
        elif kind is list:
            saved.append((value, list(value)))
            pending.extend(value)
        elif kind is dict:
            saved.append((value, dict(value)))
            pending.extend(value.keys())
            pending.extend(value.values())
        elif kind is np.ndarray and value.dtype != object:
            if value.flags.writeable:  # one that is not cannot change
                saved.append((value, value.copy()))
        elif isinstance(value, RANDOM_GENERATORS):
            saved.append((value, _GeneratorState(generator_state(value))))
        elif member(value) and type(getattr(value, "__dict__", None)) is dict:
            saved.append((value, _Attributes(dict(value.__dict__))))
            pending.extend(value.__dict__.values())
        else:
            raise TreeChanged(f"{label} holds a {kind.__module__}.{kind.__qualname__}, which Janus cannot put "
                              "back if a run aborts")
    return saved


@dataclass(frozen=True)
class _GeneratorState:
    state: Any


@dataclass(frozen=True)
class _Attributes:
    attrs: dict


def restore(saved: list[tuple[Any, Any]]) -> None:
    """Put back in place what :func:`save` saved (the same objects, as they were)."""
    for value, before in saved:
        if isinstance(before, _Attributes):
            value.__dict__.clear()
            value.__dict__.update(before.attrs)
        elif isinstance(before, _GeneratorState):
            set_generator_state(value, before.state)
        elif type(value) is list:
            value[:] = before
        elif type(value) is dict:
            value.clear()
            value.update(before)
        else:
            value[...] = before
