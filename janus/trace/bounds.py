"""What keeps one trace bounded: how deep user functions are inlined, and how many ops
the trace built.

Converted code inlines the user's functions (``janus.runtime.calls.inline``), so a
recursion is traced as deep as it goes.  Driven by Python values it ends where eager's
does; driven by a tensor it would not end: the base case is a tensor conditional, each
side traced, the recursive side inlining the function again.  Two bounds:

* user functions inlined inside one another past ``config.MAX_INLINE_DEPTH``;
* a trace whose graphs hold more than ``config.max_trace_ops()`` ops, counted where a user
  function is inlined and at every loop trip traced in Python.

Past either the trace is abandoned (:class:`TraceTooLarge`) and the call runs eagerly;
``janus.explain`` gives the reason.
"""
from __future__ import annotations

import contextlib
import types
import weakref
from typing import TYPE_CHECKING, Iterator

import tensorflow as tf

from janus import _tf_private, config
from janus.errors import TraceTooLarge

if TYPE_CHECKING:
    from janus.trace.heap import HeapModel


class TraceBounds:
    """The user functions being inlined (outermost first) and the ops the trace built so far."""

    def __init__(self, heap: "HeapModel"):
        self.heap = heap
        self.max_depth = config.MAX_INLINE_DEPTH
        self.max_ops = config.max_trace_ops()
        self.calls: list[types.FunctionType] = []
        self.ops = 0
        self._counted: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # graph -> its ops counted

    @contextlib.contextmanager
    def inlining(self, fn: types.FunctionType) -> Iterator[None]:
        """While ``fn``'s converted code is inlined: within the depth and op bounds."""
        self.check_ops()
        if len(self.calls) >= self.max_depth:
            raise TraceTooLarge(f"calls of user functions nested more than {self.max_depth} deep (at "
                                f"{fn.__qualname__}; janus.config.MAX_INLINE_DEPTH): a recursion that deep runs eagerly")
        self.calls.append(fn)
        try:
            yield
        finally:
            self.calls.pop()

    def check_ops(self) -> None:
        """Count the ops built since the last count in the graph being built and the graphs
        it is nested in; :class:`TraceTooLarge` past the bound."""
        outermost = self.heap.outer_graph
        if outermost is None:
            return
        for graph in _tf_private.graph_chain(tf.compat.v1.get_default_graph(), outermost):
            version = graph.version
            self.ops += max(0, version - self._counted.get(graph, 0))
            self._counted[graph] = version
        if self.ops > self.max_ops:
            raise TraceTooLarge(f"the trace built more than {self.max_ops:,} ops (JANUS_MAX_TRACE_OPS): "
                                "abandoned, the call runs eagerly")
