"""The trace's own copies of mappings read from Python state, and its view of ``os.environ``.

A dict, ``OrderedDict``, ``defaultdict``, ``Counter`` or plain dict subclass read by a
trace is copied (:func:`mapping_copy`, of the same type, in the same order): converted code
reads and changes the copy while the caller's mapping changes only when the run commits.
A ``defaultdict``'s copy cannot call its factory behind the trace's back: a read of a missing
key inserts into the caller's mapping too, so it is a write, which ``janus.lowering``'s
subscript deferrs (:func:`factory_of`); any other path to the factory fails the trace.

``os.environ`` is not copied: :class:`EnvironView` guards each variable the trace reads
(its value, or that it is not set), so a graph never keeps a variable the program changed.
"""
from __future__ import annotations

import collections
import collections.abc
from typing import Any, Callable, Iterable

from janus.errors import ConversionError
from janus.reporting.codes import Code
from janus.trace.sources import Source

_BASES = (collections.OrderedDict, collections.defaultdict, collections.Counter, dict)


class _CopysFactory:
    """The ``default_factory`` of a trace's copy of a ``defaultdict``: calling it would insert
    into the copy only, so it fails the trace; the subscript that defers the insertion asks
    it for the caller's factory."""

    __slots__ = ("factory", "what")

    def __init__(self, factory: Callable[[], Any], what: str):
        self.factory, self.what = factory, what

    def __call__(self) -> Any:
        raise ConversionError(f"reads a missing key of {self.what}, a defaultdict, other than by [] "
                              "(eager inserts the default)", code=Code.MAPPING)


def mapping_copy(value: dict, items: Iterable[tuple[Any, Any]], what: str = "it") -> dict:
    """A copy of ``value`` of its own type holding ``items``, in order; instance attributes
    of a dict subclass are copied too (their reads are guarded through the copy's source)."""
    cls = type(value)
    base = next(k for k in cls.__mro__ if k in _BASES)
    out = base.__new__(cls)
    if isinstance(value, collections.defaultdict):
        out.default_factory = None if value.default_factory is None else _CopysFactory(value.default_factory, what)
    for key, item in items:
        base.__setitem__(out, key, item)
    if cls not in _BASES and hasattr(value, "__dict__"):
        vars(out).update(vars(value))
    return out


def factory_of(copy: Any) -> Callable[[], Any] | None:
    """The caller's ``default_factory`` of a trace's copy of a ``defaultdict`` (None for any
    other mapping, or a defaultdict without a factory)."""
    factory = getattr(copy, "default_factory", None) if isinstance(copy, collections.defaultdict) else None
    return factory.factory if isinstance(factory, _CopysFactory) else None


class EnvironView(collections.abc.Mapping):
    """``os.environ`` as a trace reads it: each variable read is guarded on its value (or
    its absence); iterating or sizing it guards every variable.  A write fails the trace."""

    def __init__(self, environ: Any, source: Source, guards: Any):
        self._environ, self._source, self._guards = environ, source, guards

    def _value(self, key: Any) -> str | None:
        if type(key) is not str:
            raise ConversionError(f"reads {self._source.label} with a key of type {type(key).__name__}",
                                  code=Code.MAPPING)
        value = self._environ.get(key)
        self._guards.environment_variable(self._source, key, value)
        return value

    def __getitem__(self, key: str) -> str:
        value = self._value(key)
        if value is None:
            raise KeyError(key)
        return value

    def get(self, key: str, default: Any = None) -> Any:
        value = self._value(key)
        return default if value is None else value

    def __contains__(self, key: Any) -> bool:
        return self._value(key) is not None

    def _all(self) -> dict:
        items = dict(self._environ)
        self._guards.equals_mapping(self._source, items)
        return items

    def __iter__(self):
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def copy(self) -> dict:
        return self._all()

    def _write(self, *args: Any, **kwargs: Any) -> None:
        raise ConversionError(f"changes {self._source.label} (the process's environment) inside the step",
                              code=Code.MAPPING)

    __setitem__ = __delitem__ = setdefault = pop = popitem = update = clear = _write
