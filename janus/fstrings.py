"""f-strings whose fields the graph computes: formatted after the run.

``f"loss {loss:.4f}"`` inside converted code cannot be formatted while tracing (the
value does not exist yet); it becomes a :class:`DeferredStr`, packed like a result and
formatted from the run's outputs exactly as eager formats the computed value.
"""
from __future__ import annotations

from typing import Any

from janus.errors import ConversionError
from janus.pyscalar import PyScalar
from janus.tracing import is_symbolic


class Field:
    """One ``{value!conversion:spec}`` of an f-string."""

    __slots__ = ("value", "conversion", "spec")

    def __init__(self, value: Any, conversion: int, spec: Any):
        self.value, self.conversion, self.spec = value, conversion, spec

    def render(self, value: Any) -> str:
        if self.conversion == ord("r"):
            value = repr(value)
        elif self.conversion == ord("s"):
            value = str(value)
        elif self.conversion == ord("a"):
            value = ascii(value)
        return format(value, str(self.spec))


class DeferredStr:
    """An f-string with fields the graph computes; formatted after the run (for print)."""

    __slots__ = ("parts",)

    def __init__(self, parts: tuple):
        self.parts = parts

    def render(self, values: list) -> str:
        it = iter(values)
        return "".join(p if isinstance(p, str) else p.render(next(it)) for p in self.parts)

    def _concrete(self, *args: Any, **kwargs: Any):
        raise ConversionError("uses a string formatted from values the graph has not computed yet")

    __str__ = __repr__ = __add__ = __radd__ = __len__ = __eq__ = __hash__ = __iter__ = __format__ = _concrete
    __getitem__ = __contains__ = __mod__ = __mul__ = _concrete


def field(value: Any, conversion: int = -1, spec: Any = "") -> Field:
    if isinstance(spec, DeferredStr):
        raise ConversionError("a format spec computed by the graph")
    return Field(value, conversion, spec)


def fstring(*parts: Any) -> Any:
    """An f-string: a ``str`` at once when every field is a Python value, else a DeferredStr."""
    if any(isinstance(p, Field) and (is_symbolic(p.value) or isinstance(p.value, (PyScalar, DeferredStr)))
           for p in parts):
        if any(isinstance(p, Field) and isinstance(p.value, DeferredStr) for p in parts):
            raise ConversionError("nested f-strings of values the graph computes")
        return DeferredStr(parts)
    return "".join(p if isinstance(p, str) else p.render(p.value) for p in parts)
