"""One forest: every node of some trees computed in one graph, level by level.

The cases of the trees' nodes are found first (:func:`_plan`: cases learned by earlier
traces of the function, and new ones discovered on the nodes at hand); the graph is fed
each call's trees flattened by a guard (``janus.lowering.trees.forest_plan``), and computes the nodes
of one height and one case at once: the case's code, traced once on a node index, is
batched over their indices op by op (``janus.lowering.trees.rows``, or else by
``tf.vectorized_map``), and the results are appended to the table of the heights below
(a table of rows, ``[nodes, units]``, where a node's result is a ``[1, units]`` row).
"""
from __future__ import annotations

import dataclasses
import inspect
import weakref
from dataclasses import dataclass
from typing import Any

import tensorflow as tf

from janus import _tf_private, config
from janus.trace import atomicity
from janus.convert.analysis.structural_recursion import StructuralRecursion
from janus.errors import ConversionError, InternalSignal
from janus.reporting.codes import Code
from janus.lowering.trees import rows as tree_rows
from janus.lowering.trees.cases import Batch, CaseTrace, differentiable, discover, gate, row_of, rowed, scratch
from janus.trace.active import CALL
from janus.lowering.trees.forest_plan import Case, Flat, ForestPlan, MissKind
from janus.trace.sources import Source

# Cases learned by earlier traces of a function (without their nodes): a later trace, e.g. for
# a new batch size, needs only find a node of each among its trees instead of tracing it again.
_KNOWN_CASES: "weakref.WeakKeyDictionary[Any, tuple[dict, list[Case]]]" = weakref.WeakKeyDictionary()


@dataclass
class Forest:
    """The table of every node's result (a nest of ``[nodes, ...]`` tensors) of one graph."""

    plan: ForestPlan
    function: Any
    tables: Any
    roots: tf.Tensor
    sources: list[Source]
    rowed: Any  # cases.rowed of the result's spec

    def result(self, k: int) -> Any:
        """Root ``k``'s result; its gates tell the plan which components a gradient reaches."""
        out = row_of(self.tables, self.rowed, self.roots[k])
        gates = [gate(t, lambda j=j: self.plan.reached_root(k, j) or True)
                 for j, t in enumerate(tf.nest.flatten(out))]
        return tf.nest.pack_sequence_as(out, gates)


def build(rec: Any, fn: Any, info: StructuralRecursion, bound: inspect.BoundArguments,
          roots: list[tuple[Any, Source]]) -> Forest:
    """The forest of ``roots`` (nodes, with their sources), every node's result computed
    level by level in the graph being traced; ``rec`` is the trace's
    :class:`~janus.lowering.trees.recursion.TreeRecursion`."""
    ctx = rec.ctx
    objs = tuple(o for o, _ in roots)
    plan = _plan(rec, fn, info, bound, objs, *_KNOWN_CASES.get(fn, ({}, [])))
    plan.root_labels = [s.label for _, s in roots]
    specs = {repr(c.spec) for c in plan.cases}
    if len(specs) > 1:
        raise ConversionError(f"recursion over {plan.label}: its cases return different structures or shapes "
                              f"({' vs '.join(sorted(specs))})", code=Code.TREE_RECURSION)
    name = ctx.const(plan, "forest")
    plan.roots_of = eval(f"lambda a, k: ({''.join(s.expr + ', ' for _, s in roots)})",  # noqa: S307
                         ctx.guard_set.namespace)
    ctx.guard_set.forest(plan)
    inputs = plan.unpack(_tf_private.call_time_input(ctx.heap.outer_graph, lambda: plan.inputs(*CALL.args),
                                                     plan.spec(), key=name))
    offsets, root_index = inputs[0], inputs[1]
    n_cases = len(plan.cases)
    spec = plan.cases[0].spec
    rows = rowed(spec)

    traced: dict[int, tree_rows.PerNode | None] = {}  # per case: its code on a loop index (None: not batched)

    def level(height: int, tables: Any) -> Any:
        for case in plan.cases:
            if (height == 0) != (not case.children):
                continue  # leaves are height 0, and a node with children is above them
            block = height * n_cases + case.index
            nodes = tf.range(offsets[block], offsets[block + 1])
            out = _block(rec, plan, fn, info, bound, case, nodes, Batch(None, inputs, tables, rows), traced)
            out = tf.nest.pack_sequence_as(out, [gate(t, lambda c=case.index, j=j: plan.block_passes(c, j))
                                                 for j, t in enumerate(tf.nest.flatten(out))])
            tables = tf.nest.map_structure(lambda t, o: tf.concat([t, o], 0), tables, out)
        return tables

    def heights(first: int, last: int, tables: Any) -> Any:
        for height in range(first, last):
            tables = level(height, tables)
        return tables

    # Heights above those the traced call's structures reached run only at calls that have
    # nodes that high, all in one conditional: the ops of an empty height would run on
    # zero rows at about the cost of a full one.
    empty = tf.nest.map_structure(lambda s, r: tf.zeros([0, *s.shape[1:]] if r else [0, *s.shape], s.dtype),
                                  spec, rows)
    tables = heights(0, plan.reached + 1, empty)
    if plan.reached + 1 < plan.levels:
        above = plan.reached + 1
        tables = _above(offsets[above * n_cases] < offsets[plan.levels * n_cases],
                        lambda t: heights(above, plan.levels, t), tables)
    for case in plan.cases:
        case.exemplar = None
    return Forest(plan, fn, tables, root_index, [s for _, s in roots], rows)


def _above(taken: tf.Tensor, heights: Any, tables: Any) -> Any:
    """``heights(tables)`` if ``taken``, else ``tables``: one conditional, whose gradient is
    a second one that computes those heights again and differentiates them only if
    ``taken``.  ``tf.cond``'s own gradient makes the forward conditional output every
    intermediate its gradient needs (44 on Tree-LSTM, each an optional), built as empty
    optionals by the side not taken: at a call whose trees are not that high, the two
    conditionals' sides ran 58 ops (about 90 us of a 0.75 ms Tree-LSTM step); here the side
    not taken passes the tables through, and its gradient the tables' gradients, with zeros
    for the values from below that the heights captured.  When taken (at calls with trees
    higher than the traced call's), the heights run again in the gradient.  The gradient is
    tf.gradients' on the same ops, summed as ``tf.cond``'s was: the losses and variables
    of 160 Tree-LSTM and TreeRNN steps are bitwise those before."""
    out = tf.cond(taken, lambda: heights(tables), lambda: tables)
    flat_in, flat_out = tf.nest.flatten(tables), tf.nest.flatten(out)
    ops = {(t.op.inputs[0] if t.op.type == "Identity" else t).op for t in flat_out}  # tf.cond's identities
    op = ops.pop()
    if ops or op.type not in ("If", "StatelessIf") or any(t.dtype == tf.resource for t in op.inputs):
        return out  # a variable read inside: tf.cond's own gradient
    xs = [t for t in op.inputs[1:] if differentiable(t)]  # what the heights capture: tables, values read below
    if not xs or not any(differentiable(t) for t in flat_out):
        return out
    passed = {id(t): j for j, t in enumerate(flat_in)}  # the tables the side not taken returns

    @tf.custom_gradient
    def through(*xs: tf.Tensor) -> Any:
        def grad(*dys: tf.Tensor) -> list:
            dys = [tf.zeros_like(y) if dy is None else tf.convert_to_tensor(dy) for y, dy in zip(flat_out, dys)]
            live: list[bool] = []

            def again() -> list:
                graph = tf.compat.v1.get_default_graph()
                outs = tf.nest.flatten(heights(tables))  # the forward heights again, in this side
                pairs = [(o, dy) for o, dy in zip(outs, dys) if differentiable(o)]
                grads = tf.gradients([o for o, _ in pairs], [graph.capture(x) for x in xs],
                                     grad_ys=[dy for _, dy in pairs])
                live.extend(g is not None or id(x) in passed for g, x in zip(grads, xs))
                return [tf.convert_to_tensor(g) if g is not None else tf.zeros_like(x)
                        for g, x, keep in zip(grads, xs, live) if keep]

            def skipped() -> list:
                return [dys[passed[id(x)]] if id(x) in passed else tf.zeros_like(x)
                        for x, keep in zip(xs, live) if keep]

            got = iter(tf.cond(taken, again, skipped))
            return [next(got) if keep else None for keep in live]
        return [tf.stop_gradient(t) if differentiable(t) else t for t in flat_out], grad

    return tf.nest.pack_sequence_as(out, through(*xs))


def _plan(rec: Any, fn: Any, info: StructuralRecursion, bound: inspect.BoundArguments, objs: tuple,
          namespace: dict, known: list[Case]) -> ForestPlan:
    """The cases of the nodes of ``objs``: cases known from earlier traces of ``fn`` that
    occur there (each needs a node of its own to be traced on), and new ones discovered.
    ``namespace`` holds the classes and values the known cases' tests name."""
    plan = ForestPlan(fn.__qualname__, config.subtree_reuse())
    plan.namespace.update(namespace)
    for case in known:
        plan.add(dataclasses.replace(case, index=len(plan.cases), exemplar=None))
    found, exemplars = _flatten_discovering(rec, plan, fn, info, bound, objs)
    if not all(case.exemplar is not None or case.index in exemplars for case in plan.cases):
        present = [case for case in plan.cases if case.exemplar is not None or case.index in exemplars]
        return _plan(rec, fn, info, bound, objs, plan.namespace, present)  # without the cases absent here
    plan.reached, plan.traced = found.height, found
    for case in plan.cases:
        case.exemplar = case.exemplar if case.exemplar is not None else exemplars[case.index]
    _learn_flows(rec, plan, fn, info, bound)
    learned = {c.signature(): c for c in known}
    learned.update((c.signature(), dataclasses.replace(c, exemplar=None, flows=None, reaches=None))
                   for c in plan.cases)
    _KNOWN_CASES[fn] = (dict(plan.namespace), list(learned.values()))
    return plan


def _flatten_discovering(rec: Any, plan: ForestPlan, fn: Any, info: StructuralRecursion,
                         bound: inspect.BoundArguments, objs: tuple) -> tuple[Flat, dict[int, Any]]:
    """The forest of ``objs`` flattened, with a node of each case found (by case index): a
    node of no known case is discovered (its case added to ``plan``), a forest too high
    doubles the levels, up to ``config.LIMITS.max_tree_levels``."""
    while True:
        exemplars: dict[int, Any] = {}
        found = plan.flatten(objs, exemplars)
        if isinstance(found, Flat):
            return found, exemplars
        if found.kind is MissKind.NEW_CASE:
            discover(rec, plan, fn, info, bound, found.node)
            if plan.match(found.node) < 0:  # would loop: what the trace recorded does not recognize it
                raise ConversionError(f"recursion over {plan.label}: the tests of a node's case do not hold "
                                      f"on it", code=Code.TREE_RECURSION)
        elif found.kind is MissKind.TOO_HIGH and plan.levels < config.LIMITS.max_tree_levels:
            plan.levels *= 2
        else:
            raise ConversionError(f"recursion over {plan.label}: {found.reason}", code=Code.TREE_RECURSION)


def _learn_flows(rec: Any, plan: ForestPlan, fn: Any, info: StructuralRecursion, bound: inspect.BoundArguments) -> None:
    """A case learned in another trace has its gradient flows found again on this trace's
    node of it (they may differ in this one)."""
    for case in plan.cases:
        if case.flows is None:
            trace = scratch(rec, plan, fn, info, bound, case.exemplar)
            if trace.case_signature() != case.signature():
                trace.refuse("its code took another path for a node of the same case")
            case.flows, case.reaches = trace.case.flows, trace.case.reaches


def _block(rec: Any, plan: ForestPlan, fn: Any, info: StructuralRecursion, bound: inspect.BoundArguments,
           case: Case, nodes: tf.Tensor, block: Batch, traced: dict) -> Any:
    """The results of ``case``'s code on ``nodes``, in the tables' form: its code traced
    once per case (``traced``) and batched op by op (``rows``), or else by
    TensorFlow's vectorizer."""
    def body(index: tf.Tensor, tables: Any) -> Any:
        trace = CaseTrace(rec, fn, info, bound, plan, case, dataclasses.replace(block, index=index, tables=tables))
        out = trace.run(case.exemplar)
        if trace.case_signature() != case.signature():
            trace.refuse("its code took another path for a node of the same case")
        return out

    graph = tf.compat.v1.get_default_graph()
    start = len(graph.get_operations())
    flat_rowed = tf.nest.flatten(block.rowed)
    try:
        if case.index not in traced:
            traced[case.index] = tree_rows.trace(body, block.tables)
        out = None
        if traced[case.index] is not None:
            try:
                out = tree_rows.batch(traced[case.index], nodes, block.tables, flat_rowed)
            except tree_rows.Unbatchable:
                traced[case.index] = None
        if out is None:
            out = tf.vectorized_map(lambda index: body(index, block.tables), nodes, fallback_to_while_loop=False)
            out = tf.nest.map_structure(lambda t, r: tf.squeeze(t, [1]) if r else t, out, block.rowed)
        rec.ctx.checks.safe_ops.update(atomicity.unused_since(graph, start, out))
        return out
    except InternalSignal:
        raise
    except Exception as e:  # noqa: BLE001 - TensorFlow's vectorizer refuses what it cannot batch exactly
        raise ConversionError(f"recursion over {plan.label}: TensorFlow cannot batch its code over nodes "
                              f"({str(e).splitlines()[0][:120]})", code=Code.TREE_RECURSION) from None
