"""Effects recorded inside one side of a ``tf.cond``: committed only if that side ran.

A ``print`` (or a deferred append to a heap container) inside a tensor-dependent
branch cannot be replayed unconditionally.  Its tensors are carried out of the cond as
extra outputs (the other side outputs zeros in their place) and the effect is wrapped
in a ``When`` effect with the predicate: at commit time it is replayed only when the
predicate had that value, in program order with the other effects.

:func:`tensor_dependent` is the bracket around tracing any tensor-dependent body (a
``tf.cond`` side, a ``tf.while_loop``, a graph a library builds around a callback):
effects go to the side's list (a :class:`BranchSink`, which also records the places of Python
state the side wrote, ``janus.lowering.branch_stores``) or are refused.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

import tensorflow as tf

from janus.commit.effects import Effect
from janus.trace.context import EffectLog
from janus.trace.scalars import PyOrTensor
from janus.trace.values import DeferredStr, Field, PyScalar, is_symbolic


class BranchSink(list):
    """The effects one side of a ``tf.cond`` records, in order, and the places of Python state
    it wrote (``stores``; ``final``: the values it left there), see ``janus.lowering.branch_stores``."""

    def __init__(self) -> None:
        super().__init__()
        self.stores: dict = {}
        self.final: dict = {}


@contextmanager
def tensor_dependent(log: EffectLog, sink: BranchSink | None = None) -> Iterator[BranchSink | None]:
    """While a tensor-dependent body is traced: the log's ``dynamic_depth`` is raised (Python
    mutations other than writes of state are refused) and effects go to ``sink``, a ``tf.cond``
    side's list or a loop's (``janus.lowering.branch_stores.LoopSink``); with no sink (a graph a
    library builds) an effect fails the conversion."""
    log.dynamic_depth += 1
    log.sinks.append(sink)
    log.bodies.append(object())
    try:
        yield sink
    finally:
        log.dynamic_depth -= 1
        log.sinks.pop()
        log.bodies.pop()


def map_graph_values(value: Any, fn: Callable[[tf.Tensor], Any]) -> Any:
    """``value`` with every graph tensor inside it (also in PyScalars and f-strings) replaced by ``fn(t)``."""
    if is_symbolic(value):
        return fn(value)
    if isinstance(value, PyScalar):
        return PyScalar(fn(value.tensor), value.kind)
    if isinstance(value, PyOrTensor):
        return PyOrTensor(fn(value.number), value.kind, fn(value.tensor), fn(value.is_number))
    if isinstance(value, DeferredStr):
        return DeferredStr(tuple(p if isinstance(p, str) else Field(map_graph_values(p.value, fn), p.conversion, p.spec)
                                 for p in value.parts))
    if isinstance(value, Effect):
        return value.map_values(lambda v: map_graph_values(v, fn))
    if type(value) in (list, tuple, BranchSink):
        return (tuple if type(value) is tuple else list)(map_graph_values(v, fn) for v in value)
    if type(value) is dict:
        return {k: map_graph_values(v, fn) for k, v in value.items()}
    return value


def graph_values(effects: list) -> list[tf.Tensor]:
    """The graph tensors the effects need, in a fixed order."""
    found: list[tf.Tensor] = []

    def collect(t):
        found.append(t)
        return t

    map_graph_values(effects, collect)
    return found


def zeros_like_specs(specs: list[tf.TensorSpec]) -> list[tf.Tensor]:
    return [tf.zeros([d or 0 for d in s.shape.as_list()], s.dtype) for s in specs]


def rebind(effects: list, outer: list[tf.Tensor]) -> list:
    """The effects with their branch tensors replaced, in order, by the cond's outputs."""
    it = iter(outer)
    return map_graph_values(effects, lambda _t: next(it))
