"""The code objects Janus generated, recorded when a conversion is compiled.

Converted code carries the user's file name and line numbers (its tracebacks point at
the user's lines), so no file name tells it apart from the user's own code: this
registry does, for the runtime's calls, the profiler's filter, tracebacks and the hook.
"""
from __future__ import annotations

import types
from typing import Any, Iterator

_CONVERTED: set[types.CodeType] = set()


def record(code: types.CodeType) -> None:
    """Record ``code``, a compiled conversion, and every code object nested in it."""
    _CONVERTED.update(_code_objects(code))


def is_converted_code(code: types.CodeType) -> bool:
    """A code object of Janus-generated code (it carries the user's file name and lines)."""
    return code in _CONVERTED


def is_converted_function(fn: Any) -> bool:
    """A function (or a method, a lambda) whose code Janus generated."""
    code = getattr(fn, "__code__", None)
    return code is not None and is_converted_code(code)


def _code_objects(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)
