"""The code objects Janus generated, recorded when a conversion is compiled.

Converted code carries the user's file name and line numbers (its tracebacks point at
the user's lines), so no file name tells it apart from the user's own code: this
registry does, for the lowering's calls, the profiler's filter, tracebacks and the hook.
It also holds the definitions of graph segments (:mod:`janus.convert.splitting`), code
Janus generated from the user's statements that runs as user code and is converted
from its recorded tree.
"""
from __future__ import annotations

import types
from typing import Any, Iterator

_CONVERTED: set[types.CodeType] = set()
_DEFINITIONS: dict[types.CodeType, Any] = {}  # generated code -> the gast def the converter reads for it
_SEGMENTS: dict[types.CodeType, Any] = {}  # a segment's eager code -> its ``segments.Segment``


def record(code: types.CodeType, nested: bool = True) -> None:
    """Record ``code``, a compiled conversion, and every code object nested in it (or only
    ``code``: a segment driver, whose nested lambdas are the user's)."""
    _CONVERTED.update(code_objects(code) if nested else (code,))


def is_converted_code(code: types.CodeType) -> bool:
    """A code object of Janus-generated code (it carries the user's file name and lines)."""
    return code in _CONVERTED


def is_converted_function(fn: Any) -> bool:
    """A function (or a method, a lambda) whose code Janus generated."""
    code = getattr(fn, "__code__", None)
    return code is not None and is_converted_code(code)


def record_definition(code: types.CodeType, node: Any, segment: Any = None) -> None:
    """Janus generated ``code`` (a graph segment) from ``node``, a gast ``FunctionDef`` at
    the user's positions: the converter reads ``node`` for it, it has no source of its own.
    ``segment``: the ``janus.convert.splitting.Segment`` ``code`` runs (split again, its
    driver keeps what its eager version adds around the user's statements)."""
    _DEFINITIONS[code] = node
    if segment is not None:
        _SEGMENTS[code] = segment


def segment_of(code: types.CodeType) -> Any | None:
    """The ``Segment`` recorded for ``code`` (None: not a segment's code)."""
    return _SEGMENTS.get(code)


def definition_of(code: types.CodeType) -> Any | None:
    """The gast ``FunctionDef`` recorded for ``code`` (None: the code has its own source)."""
    return _DEFINITIONS.get(code)


def code_objects(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from code_objects(const)
