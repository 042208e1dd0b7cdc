"""f-strings whose fields the graph computes: formatted after the run.

``f"loss {loss:.4f}"`` inside converted code cannot be formatted while tracing (the
value does not exist yet); it becomes a ``DeferredStr`` (``janus.trace.values``),
packed like a result and formatted from the run's outputs exactly as eager formats the
computed value.
"""
from __future__ import annotations

from typing import Any

from janus.errors import ConversionError
from janus.reporting.codes import Code
from janus.lowering.dunders import as_text
from janus.trace.values import DeferredStr, Field, PyScalar, is_symbolic


def field(value: Any, conversion: int = -1, spec: Any = "") -> Field:
    if isinstance(spec, DeferredStr):
        raise ConversionError("a format spec computed by the graph", code=Code.STRING_FORMAT)
    return Field(value, conversion, spec)


def fstring(*parts: Any) -> Any:
    """An f-string: a ``str`` at once when every field is a Python value, else a DeferredStr."""
    if any(isinstance(p, Field) and (is_symbolic(p.value) or isinstance(p.value, (PyScalar, DeferredStr)))
           for p in parts):
        if any(isinstance(p, Field) and isinstance(p.value, DeferredStr) for p in parts):
            raise ConversionError("nested f-strings of values the graph computes", code=Code.STRING_FORMAT)
        return DeferredStr(parts)
    return "".join(p if isinstance(p, str) else p.render(as_text(p.value, "an f-string field")) for p in parts)
