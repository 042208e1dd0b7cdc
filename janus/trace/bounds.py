"""What keeps one trace bounded: how deep user functions are inlined, which numbers may
not drive a recursion as tensors, and how many ops the trace built.

Converted code inlines the user's functions (``janus.lowering.calls.inline``), so a
recursion is traced as deep as it goes.  Driven by Python values it ends where eager's
does; driven by a tensor it would not end: the base case is a tensor conditional, each
side traced, the recursive side inlining the function again.  Three bounds:

* a recursive call traced under tensor conditions made only of Python numbers the graph
  is fed (``k == 0`` of a depth ``k`` the policy feeds because it changes) asks for those
  numbers to be specialized by value (``heap.values_wanted``, then the restart of
  ``janus.trace.known_values``): one graph per depth, each recursion traced in Python;
* user functions inlined inside one another past ``config.LIMITS.max_inline_depth``;
* a trace whose graphs hold more than ``config.max_trace_ops()`` ops, counted where a user
  function is inlined and at every loop trip traced in Python.

Past either of the last two the trace is abandoned (:class:`TraceTooLarge`) and the call
runs eagerly; ``janus.explain`` gives the reason.
"""
from __future__ import annotations

import contextlib
import types
import weakref
from typing import TYPE_CHECKING, Any, Iterator

import tensorflow as tf

from janus import _tf_private, config
from janus.errors import ConversionError, TraceTooLarge
from janus.reporting.codes import Code
from janus.trace import known_values
from janus.trace.scalars import PyScalar

if TYPE_CHECKING:
    from janus.trace.heap import HeapModel


class TraceBounds:
    """The user functions being inlined (outermost first), the tensors deciding the tensor
    constructs being traced, and the ops the trace built so far."""

    def __init__(self, heap: "HeapModel"):
        self.heap = heap
        self.max_depth = config.LIMITS.max_inline_depth
        self.max_ops = config.max_trace_ops()
        self.calls: list[tuple[types.FunctionType, int]] = []  # (function, len(conditions) at its entry)
        self.conditions: list[tuple[tf.Tensor, ...]] = []
        self.branches: dict[Any, tuple] = {}  # the If ops built, to their true and false branch graphs
        self.ops = 0
        self._counted: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # graph -> its ops counted

    @contextlib.contextmanager
    def inlining(self, fn: types.FunctionType) -> Iterator[None]:
        """While ``fn``'s converted code is inlined: within the depth and op bounds, and not
        a recursion whose base case numbers fed to the graph decide."""
        self.check_ops()
        if len(self.calls) >= self.max_depth:
            raise TraceTooLarge(f"calls of user functions nested more than {self.max_depth} deep (at "
                                f"{fn.__qualname__}; janus.config.LIMITS.max_inline_depth): "
                                "a recursion that deep runs eagerly")
        self._fed_base_case(fn)
        self.calls.append((fn, len(self.conditions)))
        try:
            yield
        finally:
            self.calls.pop()

    @contextlib.contextmanager
    def deciding(self, *values: Any) -> Iterator[None]:
        """While the sides or body of a tensor construct decided by ``values`` (a condition,
        a loop's bounds) are traced."""
        tensors = tuple(v.tensor if isinstance(v, PyScalar) else v for v in values)
        self.conditions.append(tuple(t for t in tensors if isinstance(t, tf.Tensor)))
        try:
            yield
        finally:
            self.conditions.pop()

    def built_cond(self, op: Any, true_graph: Any, false_graph: Any) -> None:
        """The ``If`` op ``op`` was built of these branch graphs (what its outputs are made of)."""
        self.branches[op] = (true_graph, false_graph)

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

    def _fed_base_case(self, fn: types.FunctionType) -> None:
        """``fn`` calls itself under tensor conditions made only of numbers fed to the graph:
        those are wanted by value (the next trace specializes them) and this trace fails."""
        entry = next((at for f, at in self.calls if f is fn), None)
        if entry is None or entry == len(self.conditions):
            return
        numbers = known_values.fed_numbers([t for ts in self.conditions[entry:] for t in ts], self.heap,
                                           self.branches)
        if not numbers:
            return
        named = [next((g.source for g in self.heap.guard_set.guards if g.source == s), s) for s in numbers]
        for source in named:
            self.heap.values_wanted.setdefault(source, f"decides where {fn.__qualname__}'s recursion ends")
        raise ConversionError(f"{fn.__qualname__} calls itself under a tensor condition on "
                              f"{', '.join(sorted(s.label for s in named))}, fed to the graph: the recursion "
                              "would be inlined without end", code=Code.TREE_RECURSION)
