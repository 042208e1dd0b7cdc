"""Locals a block rebound before an exception left it, for the ``except`` or ``finally`` that
catches it in the same function.

Converted code runs the body of an ``if``, ``while`` or ``for`` as a function that returns
the variables it rebinds (``janus.convert.passes.control_flow``).  An exception leaving that
function would lose what it rebound before raising — ``y = y * 0.5`` then ``raise`` — which
eager's handler sees.  Inside a ``try``, each block function records its locals on the
exception as it leaves (:func:`block_left`), a loop whose iteration raises between blocks
records its variables (:func:`loop_left`), and the statement that ran the block rebinds
them from there before the exception goes on (:func:`escaped`).  A tensor-dependent
construct (``tf.cond``, ``tf.while_loop``) clears the record (:func:`in_graph`): its blocks'
locals belong to a graph of their own.
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Sequence

import tensorflow as tf

from janus.trace.scalars import PyOrTensor, PyScalar, is_symbolic
from janus.trace.values import UNDEF

_ATTR = "_janus_escaped_locals"


def _record(exc: BaseException, values: dict | None) -> None:
    try:
        setattr(exc, _ATTR, values)
    except (AttributeError, TypeError):  # an exception type without attributes: nothing recorded
        pass


def block_left(exc: BaseException) -> None:
    """``exc`` leaves the block function calling this: its locals go with it."""
    _record(exc, dict(sys._getframe(1).f_locals))


def loop_left(exc: BaseException, names: Sequence[str], state: Sequence[Any]) -> None:
    """``exc`` leaves a loop between its blocks, its variables ``names`` holding ``state``."""
    _record(exc, dict(zip(names, state)))


def in_graph(build: Callable[..., Any], *args: Any) -> Any:
    """``build(*args)``, a tensor-dependent construct (``tf.cond``, ``tf.while_loop``): an
    exception leaving it rebinds nothing, its blocks' locals being of a graph of their own."""
    try:
        return build(*args)
    except BaseException as e:
        _record(e, None)
        raise


def escaped(exc: BaseException, names: Sequence[str]) -> tuple:
    """The values of ``names`` after ``exc`` left the statement of the frame calling this:
    what its block had bound, else what the frame holds (``UNDEF`` where it holds nothing)."""
    values = getattr(exc, _ATTR, None) or {}
    if any(_foreign(v) for v in values.values()):
        values = {}
    frame = sys._getframe(1).f_locals
    return tuple(values[n] if n in values else frame.get(n, UNDEF) for n in names)


def _foreign(value: Any, depth: int = 0) -> bool:
    """A graph tensor of another graph than the one being built (a block's of a ``tf.cond``)."""
    if isinstance(value, PyScalar):
        value = value.tensor
    if isinstance(value, PyOrTensor):
        return any(_foreign(p, depth) for p in value.parts())
    if is_symbolic(value):
        return value.graph is not tf.compat.v1.get_default_graph()
    if depth < 3 and type(value) in (list, tuple):
        return any(_foreign(v, depth + 1) for v in value)
    if depth < 3 and type(value) is dict:
        return any(_foreign(v, depth + 1) for v in value.values())
    return False
