"""Operators in converted code: ``_jn.op.add(a, b)`` is ``a + b``, with a user class's dunder run converted.

Python calls ``a.__add__(b)`` (then ``b.__radd__(a)``), ``a.__lt__(b)``, ``-a`` ... behind
the program's back.  On tensors, numbers and the trace's containers each operator here is
the ``operator`` module's own; when an operand is an object of a user class whose class
defines the dunder, Python's protocol is followed with the user's methods converted (their
reads guarded, their effects deferred, called as often as eager calls them).  An operand of
Python state whose dunder is library code Janus does not model fails the trace, and so does a
pair whose methods both decline (eager raises its TypeError, or compares identities).
"""
from __future__ import annotations

import operator
import types
from typing import Any, Callable

from janus.errors import ConversionError
from janus.reporting.codes import Code
from janus.lowering.dunders import refuse_unmodeled, user_method
from janus.trace.values import is_user_class

# name in the operator module: (its function, the dunder, the reflected dunder)
_BINARY = {name: (getattr(operator, name), f"__{name.rstrip('_')}__", f"__r{name.rstrip('_')}__") for name in (
    "add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "pow", "lshift", "rshift", "and_", "or_", "xor")}
_COMPARE = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}  # and each one's reflection
_UNARY = ("neg", "pos", "invert")


def _is_user(x: Any) -> bool:
    return not isinstance(x, type) and is_user_class(type(x))


def _dunder(x: Any, name: str, *args: Any) -> Any:
    """``x.<name>(*args)``: the user's converted, a library's as it is (refused on Python
    state Janus does not model), NotImplemented when the class has none."""
    method = user_method(x, name)
    if method is not None:
        return method(*args)
    found = getattr(type(x), name, None)
    if found is None:
        return NotImplemented
    refuse_unmodeled(x, (name,), f"the operator {name}")
    return found(x, *args)


def _binary(fn: Callable, name: str, reflected: str, swap_eq: bool = False) -> Callable:
    def apply(a: Any, b: Any) -> Any:
        if not (_is_user(a) or _is_user(b)):
            return fn(a, b)
        first, second = (b, a) if type(b) is not type(a) and isinstance(b, type(a)) and \
            user_method(b, reflected) is not None else (a, b)
        out = _dunder(first, name if first is a else reflected, second)
        if out is NotImplemented:
            out = _dunder(second, reflected if first is a else name, first)
        if out is NotImplemented:
            if swap_eq:
                return (a is b) if name == "__eq__" else (a is not b)
            raise ConversionError(f"{name} of a {type(a).__qualname__} and a {type(b).__qualname__}: both decline "
                                  "(eager raises TypeError)", code=Code.PROTOCOL)
        return out
    apply.__name__ = fn.__name__
    return apply


def _unary(fn: Callable, name: str) -> Callable:
    def apply(a: Any) -> Any:
        if not _is_user(a):
            return fn(a)
        out = _dunder(a, name)
        if out is NotImplemented:
            raise ConversionError(f"{name} of a {type(a).__qualname__} it does not define (eager raises TypeError)",
                                  code=Code.PROTOCOL)
        return out
    apply.__name__ = fn.__name__
    return apply


def _in_place(name: str) -> Callable:
    """``a op= b``: the user's ``__iop__`` converted, else the binary operator."""
    _, dunder, _ = _BINARY[name]
    binary = getattr(op, name)

    in_place = getattr(operator, "i" + name.rstrip("_"))
    own = f"__i{dunder[2:]}"

    def apply(a: Any, b: Any) -> Any:
        if not _is_user(a):
            if _is_user(b) and hasattr(type(a), own):  # list += obj would iterate obj unseen
                raise ConversionError(f"{own} of a {type(a).__name__} with a {type(b).__qualname__} of the user's",
                                      code=Code.PROTOCOL)
            return in_place(a, b) if not _is_user(b) else binary(a, b)
        method = user_method(a, own)
        if method is not None:
            out = method(b)
            if out is not NotImplemented:
                return out
        elif hasattr(type(a), own):
            refuse_unmodeled(a, (own,), "an in-place operator")
            return in_place(a, b)
        return binary(a, b)
    return apply


op = types.SimpleNamespace(
    **{name: _binary(fn, dunder, reflected) for name, (fn, dunder, reflected) in _BINARY.items()},
    **{name: _binary(getattr(operator, name), f"__{name}__", f"__{other}__", swap_eq=name in ("eq", "ne"))
       for name, other in _COMPARE.items()},
    **{name: _unary(getattr(operator, name), f"__{name}__") for name in _UNARY},
)
for _name in _BINARY:
    setattr(op, "i" + _name.rstrip("_"), _in_place(_name))
