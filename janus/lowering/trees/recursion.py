"""Recursion over Python trees as one batched graph, level by level (the Cavs idea).

When converted code calls a function that recurses over a structure
(``janus.convert.analysis.structural_recursion``: ``encode(node)`` calls ``encode(node.left)``) on a
Python object the trace read from its arguments or state, the call is not inlined tree
by tree.  Instead:

1. **Cases.**  The function's code is traced once per *case* of node
   (``janus.lowering.trees.forest_plan``): the node is a :class:`~janus.lowering.trees.forest_plan.NodeView`, so
   what the code decides about it becomes the case's tests, the Python numbers it
   computes with become per-node columns, and its recursive calls become children whose
   results are inputs.  Cases are discovered on the nodes of the structures at hand, in
   a scratch graph, children's cases before their parent's.
2. **Flattening.**  At every call, a guard flattens the call's structures into arrays
   (node cases, children's indices, columns, sorted by height); the graph is fed them,
   so one graph serves every tree whose nodes fit the cases.
3. **Levels.**  The graph computes the nodes of one height and one case at once: the
   case's code, traced once on a node index, is batched op by op over the nodes'
   indices (``janus.lowering.trees.rows``; ``tf.vectorized_map`` where it has no
   exact rule), gathering columns and children's results from the table of the heights
   below, and its results are appended to the table; heights above those the traced
   call's structures reached run under one ``tf.cond`` on whether the call has nodes
   that high.  Gradients flow through the gathers.
4. **Across roots.**  A step that encodes several trees (``[self.encode(t) for t in
   trees]``) computes all of them in one forest at the first call, if nothing between
   the calls could see the difference (no state change, variable write, gradient-tape
   change or tensor control flow); otherwise each root is its own forest.  When the
   first root is item 0 of a list or tuple of nodes, its items are predicted to be the
   roots, in order, and one trace checks it; otherwise (or when other roots come) a
   first trace finds the roots and a second computes them.

What does not fit (effects, random draws or assertions per node, a node used as a
value, a recursive call under a tensor condition, a structure deeper than
``config.LIMITS.max_tree_levels``) fails the conversion or the guard, and eager runs.

This module holds the recursion state of a trace and the roots (4); one forest is
built by ``janus.lowering.trees.forest`` (3), on the cases ``janus.lowering.trees.cases``
traces (1).
"""
from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass
from typing import Any

import tensorflow as tf

from janus.trace import atomicity
from janus.convert.analysis.structural_recursion import StructuralRecursion, structural_recursion
from janus.errors import ConversionError, Regroup
from janus.lowering import state
from janus.lowering.trees import forest as tree_forest
from janus.lowering.trees.cases import CaseTrace, same
from janus.lowering.trees.forest import Forest
from janus.lowering.trees.forest_plan import NodeView
from janus.trace.sources import Item, Source
from janus.trace.values import is_framework_object, is_user_class

NOT_RECURSION = object()
# Ops TensorFlow runs as functions of their own: tensor control flow between grouped roots.
_CALL_OPS = {"If", "StatelessIf", "While", "StatelessWhile", "PartitionedCall", "StatefulPartitionedCall", "Case"}


@dataclass
class _Group:
    """Roots computed in one forest at the first call: what must not change until the last."""

    forest: Forest
    bound: inspect.BoundArguments
    graph: Any
    depth: int
    effects: int
    ops: int
    next: int = 1


class TreeRecursion:
    """The recursion state of one trace (``TraceContext.recursion``)."""

    def __init__(self, ctx: Any, grouping: dict | bool | None, call_args: tuple, refused: dict | None = None):
        self.ctx = ctx
        self.grouping = grouping  # None: first trace, find roots; dict: batch them; False: each alone
        self.call_args = call_args
        self.refused = dict(refused or {})  # functions whose recursion is inlined per structure, and why
        self.roots_seen: dict[Any, list[Source]] = {}
        self.predicted: dict[Any, list[Source]] = {}  # first trace: roots guessed at the first (_siblings)
        self.groups: dict[Any, _Group] = {}
        self.forests: list[Forest] = []
        self.active: CaseTrace | None = None  # the case trace in progress (cases.CaseTrace.run)
        self.containers: set[int] = set()  # ids of lists read from nodes (mutating them is refused)
        self.keep: list[Any] = []
        self.discovering: set[int] = set()  # ids of the nodes whose cases are being discovered
        self._tape_events = 0
        self._watching = False

    # -- calls from converted code -----------------------------------------------
    def intercept(self, fn: Any, args: tuple, kwargs: dict) -> Any:
        """The result of a call of user function ``fn``, or NOT_RECURSION to inline it."""
        active = self.active
        if active is not None:
            if fn is active.fn:
                return active.recursive_call(args, kwargs)
            if structural_recursion(fn) is not None and any(isinstance(v, NodeView) for v in (*args, *kwargs.values())):
                active.refuse(f"calls another recursive function ({fn.__qualname__}) on a node")
            return NOT_RECURSION
        info = structural_recursion(fn)
        if info is None or fn in self.refused:
            return NOT_RECURSION
        try:
            bound = inspect.signature(fn).bind(*args, **kwargs)
        except TypeError:
            return NOT_RECURSION
        bound.apply_defaults()
        node = bound.arguments.get(info.param)
        source = self.ctx.source_of(node)
        if source is None or not _is_node(node):
            return NOT_RECURSION  # a number (fib(n)) or an object the step built: inlined, specialized
        try:
            return self._root_call(fn, info, bound, node, source)
        except ConversionError as e:  # trace again with this recursion inlined, specialized per structure
            raise Regroup(self.grouping, {fn: str(e)}) from None

    def _root_call(self, fn: Any, info: StructuralRecursion, bound: inspect.BoundArguments, node: Any,
                   source: Source) -> Any:
        if isinstance(self.grouping, dict) and fn in self.grouping:
            return self._grouped_root(fn, info, bound, node, source, self.grouping[fn])
        if self.grouping is None:
            seen = self.roots_seen.setdefault(fn, [])
            seen.append(source)
            if len(seen) == 1:
                predicted = self._siblings(source)
                if predicted is not None:
                    self.predicted[fn] = predicted
                    return self._grouped_root(fn, info, bound, node, source, predicted)
            elif fn in self.predicted:
                expected = self.predicted[fn]
                if len(seen) <= len(expected) and source == expected[len(seen) - 1]:
                    return self._grouped_root(fn, info, bound, node, source, expected)
                del self.predicted[fn]  # other roots than predicted: this trace only finds them
                self._unwatch_tapes()
            if len(seen) > 1:  # this trace is traced again with all roots in one forest
                first = next(f for f in self.forests if f.function is fn)
                return tf.nest.map_structure(lambda s: tf.zeros(s.shape, s.dtype), first.plan.cases[0].spec)
        return self._build(fn, info, bound, [(node, source)]).result(0)

    def _siblings(self, source: Source) -> list[Source] | None:
        """The roots predicted when the first root is item 0 of a list or tuple of nodes (``[encode(t)
        for t in trees]``): all its items, in order.  The trace then computes them in one forest at
        once, as the second trace would after a first one found them; if other roots come, it
        only finds them (``finish``)."""
        if not isinstance(source, Item) or source.key != 0:
            return None
        try:
            items = self.ctx.getter(source.parent)(*self.call_args)
        except Exception:  # noqa: BLE001 - no prediction: the roots are found by tracing
            return None
        if type(items) not in (list, tuple) or len(items) < 2 or not all(_is_node(x) for x in items):
            return None
        return [Item(source.parent, i) for i in range(len(items))]

    def _grouped_root(self, fn: Any, info: StructuralRecursion, bound: inspect.BoundArguments, node: Any,
                      source: Source, expected: list[Source]) -> Any:
        group = self.groups.get(fn)
        graph = tf.compat.v1.get_default_graph()
        if group is None:
            objs = [self.ctx.getter(s)(*self.call_args) for s in expected]
            if source != expected[0] or objs[0] is not node:
                raise Regroup(False)
            forest = self._build(fn, info, bound, list(zip(objs, expected)))
            self.groups[fn] = _Group(forest, bound, graph, self.ctx.log.dynamic_depth, len(self.ctx.log.effects),
                                     len(graph.get_operations()))
            if len(expected) > 1 and not self._watch_tapes():
                raise Regroup(False)
            return forest.result(0)
        k = group.next
        if k >= len(expected) or source != expected[k] or not self._unchanged(group, bound, graph, info.param):
            raise Regroup(False)
        group.next += 1
        if group.next == len(expected):
            self._unwatch_tapes()
        return group.forest.result(k)

    def _unchanged(self, group: _Group, bound: inspect.BoundArguments, graph: Any, param: str) -> bool:
        """Nothing between the first root's call and this one could tell that this root was
        computed early: same graph and control flow, no deferred effect, no variable write
        (``atomicity.writes_state``), no gradient tape entered, left or asked, the same
        other arguments."""
        if graph is not group.graph or self.ctx.log.dynamic_depth != group.depth or self._tape_events:
            return False
        if len(self.ctx.log.effects) != group.effects:
            return False
        writers = self.ctx.checks.writer_constructs
        for op in graph.get_operations()[group.ops:]:
            if atomicity.writes_state(op, writers) or op.type in _CALL_OPS:
                return False
        return all(same(v, group.bound.arguments.get(n)) for n, v in bound.arguments.items() if n != param)

    def finish(self) -> None:
        """At the end of a trace: trace again if roots were found that one forest can hold;
        else leave the roots' classes to the forests' guards (a root may be any node)."""
        self._unwatch_tapes()
        for forest in self.forests:
            for source in forest.sources:
                self.ctx.guard_set.subsume_type(source)
        if self.grouping is None:
            found = {fn: sources for fn, sources in self.roots_seen.items() if len(sources) > 1}
            confirmed = {fn for fn, expected in self.predicted.items() if self.groups[fn].next == len(expected)}
            if found.keys() - confirmed or set(self.predicted) - confirmed:
                raise Regroup(found or False)
        elif isinstance(self.grouping, dict):
            for fn, expected in self.grouping.items():
                group = self.groups.get(fn)
                if fn in self.refused:
                    continue
                if group is None or group.next != len(expected):
                    raise Regroup(False)

    def close(self) -> None:
        """The trace is over: stop counting tapes, and let go of its context (which holds
        this state: the cycle would keep the trace's records until a full collection)."""
        self._unwatch_tapes()
        self.ctx = None

    # -- gradient tapes between grouped roots ------------------------------------
    def _watch_tapes(self) -> bool:
        """Count calls into ``tf.GradientTape`` (entering, leaving, watching, asking for
        gradients) until the last grouped root: a forest computed at the first root is
        recorded by the tapes active then only.  The count comes from a profile hook on this
        thread while the trace goes from the first root to the last; if a profiler is
        already installed (cProfile, a debugger), it is left alone and roots are not grouped."""
        if sys.getprofile() is not None:
            return False
        tape_file = tf.GradientTape.__init__.__code__.co_filename

        def hook(frame, event, arg):
            if event == "call" and frame.f_code.co_filename == tape_file \
                    and frame.f_code.co_qualname.startswith("GradientTape."):
                self._tape_events += 1

        self._watching, self._tape_events = True, 0
        sys.setprofile(hook)
        return True

    def _unwatch_tapes(self) -> None:
        if self._watching:
            sys.setprofile(None)
            self._watching = False

    # -- one forest ----------------------------------------------------------------
    def _build(self, fn: Any, info: StructuralRecursion, bound: inspect.BoundArguments,
               roots: list[tuple[Any, Source]]) -> Forest:
        forest = tree_forest.build(self, fn, info, bound, roots)
        self.forests.append(forest)
        return forest


def _is_node(obj: Any) -> bool:
    return is_user_class(type(obj)) and state.instance_dict(obj) is not None and not is_framework_object(obj)
