"""The objects Python islands change, copied for each graph run and committed after it.

A Python island (:mod:`janus.lowering.islands`) is a method of an object of Python state
that the graph runs in Python, through ``tf.numpy_function``, while it runs.  It runs on a
copy of its object made before the run, which shares the object's attributes: the island
only rebinds them.  After every assertion of the run passed, :class:`CommitIsland` rebinds
the object's attributes to the copy's; a run that aborts drops the copy, and the object
never saw it.  The NumPy random generators the object holds are shared too (cloning a
``RandomState`` costs 0.18 ms, saving its state 0.02 ms): the island's draws advance them,
and a run that aborts puts back the states saved before it.  No other Python thread runs
meanwhile (:func:`take_all`), so nothing sees the draws of a run that aborts.  The
island's analysis guarantees that the copy is all it changes
(:mod:`janus.convert.analysis.confined`); the object is checked again at every call, since
its attributes may have changed since the trace.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from janus.commit.effects import Effect
from janus.commit.packing import Run
from janus.commit import undo as undoing

if TYPE_CHECKING:
    from janus.commit.packing import Packer
    from janus.trace.context import TraceContext

RANDOM_GENERATORS = (np.random.RandomState, np.random.Generator)
_PLAIN = (int, float, bool, complex, str, bytes, type(None), np.generic, np.ndarray)


def plain(value: Any) -> bool:
    """A value an island may read but cannot change: a number, string, ``None``, NumPy
    scalar, numeric array (stores into it are refused by the analysis), or a tuple of those."""
    if type(value) in (tuple, frozenset):
        return all(plain(v) for v in value)
    if isinstance(value, np.ndarray):
        return value.dtype != object
    return isinstance(value, _PLAIN)


def generator_attributes(attrs: dict) -> dict[str, Any] | None:
    """The attributes of an island's object that hold NumPy random generators; None when
    another attribute holds more than a plain value."""
    generators = {n: v for n, v in attrs.items() if isinstance(v, RANDOM_GENERATORS)}
    return generators if all(plain(v) for n, v in attrs.items() if n not in generators) else None


class IslandChanged(undoing.Disturbed):
    """An island's object no longer holds only plain values and random generators: this
    call runs eagerly."""


@dataclass(eq=False)
class IslandCopy:
    """The copy of one island's object for the graph run in progress: ``find`` gives the
    object at each call; ``copy`` is the run's copy (None between runs), which shares the
    object's random generators, whose states before the run are ``saved``."""

    label: str
    find: Callable[[tuple, dict], Any]
    methods: list[str] = field(default_factory=list)  # the islands' methods, for janus.explain
    copy: Any = None
    saved: dict[int, tuple[Any, Any]] = field(default_factory=dict)
    original: Any = None

    def take(self, a: tuple, k: dict) -> None:
        """Copy the object before a run, and save its generators' states."""
        obj = self.find(a, k)
        attrs = obj.__dict__
        generators = generator_attributes(attrs)
        if generators is None:
            raise IslandChanged(f"{self.label} holds more than plain values and random generators now")
        self.saved = {id(g): (g, generator_state(g)) for g in generators.values()}
        self.copy = object.__new__(type(obj))
        self.copy.__dict__.update(attrs)
        self.original = obj

    def abort(self) -> None:
        """The run failed: drop the copy; the generators go back to their states before it."""
        for g, state in self.saved.values():
            set_generator_state(g, state)
        self._clear()

    def commit(self) -> None:
        """Give the object the copy's attributes (its generators have drawn already)."""
        obj, attrs = self.original, self.original.__dict__
        for name, value in self.copy.__dict__.items():
            if attrs.get(name, _MISSING) is not value:
                setattr(obj, name, value)
        self._clear()

    def _clear(self) -> None:
        self.copy = self.original = None
        self.saved = {}


_MISSING = object()


def generator_state(g: Any) -> Any:
    """A NumPy generator's state (a RandomState's or a Generator's), to put back with :func:`set_generator_state`."""
    return g.get_state(legacy=False) if isinstance(g, np.random.RandomState) else g.bit_generator.state


def set_generator_state(g: Any, state: Any) -> None:
    if isinstance(g, np.random.RandomState):
        g.set_state(state)
    else:
        g.bit_generator.state = state


def take_all(copies: list[IslandCopy], a: tuple, k: dict) -> None:
    """Copy every island's object before a run (none, if one cannot be).  Only while no
    other Python thread runs: one could change an object while its copy is out."""
    if copies and not undoing.no_other_threads():
        raise undoing.Disturbed("another thread runs: the objects of the graph's Python islands could change meanwhile")
    try:
        for c in copies:
            c.take(a, k)
    except BaseException:
        abort_all(copies)
        raise


def abort_all(copies: list[IslandCopy]) -> None:
    for c in copies:
        c.abort()


@dataclass
class CommitIsland(Effect):
    """Commit the run's copy of an island's object into the object."""

    copy: IslandCopy

    def pack(self, ctx: TraceContext, packer: Packer) -> "CommitIsland":
        return self

    def commit(self, run: Run) -> None:
        self.copy.commit()

    def describe(self) -> str:
        if getattr(self.copy, "kind", None) == "gymnasium environment":  # janus.commit.object_trees
            return f"keep what the Python island did to {self.copy.label} (put back if the run aborts)"
        return f"commit {self.copy.label} as the Python island left its copy"

    def map_values(self, fn):
        return dataclasses.replace(self)
