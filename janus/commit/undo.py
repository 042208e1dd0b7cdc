"""Undoing a graph run that failed after a state write: what such a graph may change
(its variables, the ``tf.data`` iterators it is fed) is saved before the run and put back
if it fails, so that the eager re-run starts from eager's state (:mod:`janus.trace.atomicity`
decides which graphs need it).  Only while no other Python thread runs: one could write a
variable or take an element meanwhile, and the undoing would lose it.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable

import tensorflow as tf

from janus.errors import InternalSignal

# Saving an iterator's position fails, rather than leaving out state it cannot save.
_FAIL_ON_EXTERNAL_STATE = tf.data.experimental.ExternalStatePolicy.FAIL.value


def undoable_variables(concrete: Any) -> list | None:
    """The variables a graph may write, if they and the iterators it is fed are all the
    state it holds (else None: a run could not be undone)."""
    graph = concrete.graph
    variables = {id(v.handle): v for v in graph.variables}
    resources = [external for external, _ in graph.captures if getattr(external, "dtype", None) == tf.resource]
    if any(id(r) not in variables for r in resources):
        return None
    return list(variables.values())


@dataclass(frozen=True)
class Undo:
    """What a run that may fail after a write puts back if it fails: the variables it may
    write, and the ``tf.data`` iterators it is fed (``iterators(a, k)``: this call's)."""

    variables: list
    iterators: Callable[[tuple, dict], list] | None = None


def run_undoing(run: Callable[[], Any], undo: Undo, a: tuple, k: dict) -> Any:
    """``run()`` a graph in which an op may fail after a write; if it fails, put the
    variables back as they were and the iterators at the elements they were at, then raise.
    Only while no other Python thread runs (one could write a variable or take an element
    during the run, and the undoing would lose it): else :class:`Disturbed`, and the call
    runs eagerly."""
    if not no_other_threads():
        raise Disturbed("another thread runs: a run that may fail after a write could not be undone safely")
    saved = [v.read_value() for v in undo.variables]  # copy-on-write: no copy unless the run writes
    positions = [(it, iterator_position(it)) for it in undo.iterators(a, k)] if undo.iterators else []
    try:
        return run()
    except BaseException:
        for v, value in zip(undo.variables, saved):
            v.assign(value)
        for it, position in positions:
            tf.raw_ops.DeserializeIterator(resource_handle=_handle(it), serialized=position)
        raise


def iterator_position(iterator: Any) -> tf.Tensor:
    """The state of a ``tf.data`` iterator (its position, buffers included), to put back with
    ``DeserializeIterator``: :class:`Disturbed` if its dataset holds state it cannot save
    (a stateful random op in a ``map``, a ``py_function``)."""
    try:
        return tf.raw_ops.SerializeIterator(resource_handle=_handle(iterator),
                                            external_state_policy=_FAIL_ON_EXTERNAL_STATE)
    except tf.errors.OpError as e:
        why = e.message.split("}}")[-1].split("[Op:")[0].strip()[:100]  # "ReadVariableOp is stateful."
        raise Disturbed(f"the position of a tf.data iterator cannot be saved ({why}): a run that may fail after "
                        "taking an element could not be undone") from None


def _handle(iterator: Any) -> tf.Tensor:
    return tf.nest.flatten(iterator, expand_composites=True)[0]


class Disturbed(InternalSignal):
    """A graph run that would have to be undone on failure cannot be: another thread runs,
    or an iterator's position cannot be saved."""


def no_other_threads() -> bool:
    """No Python thread but this one (and Janus's own) runs."""
    me = threading.current_thread()
    return all(t is me or t.name.startswith("janus") for t in threading.enumerate())
