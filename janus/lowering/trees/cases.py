"""The cases of a recursion over trees: the recursive function's code traced on one node.

A :class:`CaseTrace` runs the converted code on a node seen as a
:class:`~janus.lowering.trees.forest_plan.NodeView`: what the code decides about the node becomes the
case's tests, the Python numbers it computes with its columns, and its recursive calls
children whose results are inputs.  A case is first *discovered* on a node in a scratch
graph (:func:`discover`, once its children's cases are known), which also learns which
of its children's result components a gradient of its own reaches; in the forest's graph
the same code is traced once on a node index and batched over each block of nodes
(``janus.lowering.trees.forest``), behind gradient gates (:func:`gate`) that stop
what eager would not differentiate.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable

import tensorflow as tf

from janus import config
from janus.convert.analysis.structural_recursion import StructuralRecursion
from janus.errors import ConversionError, InternalSignal
from janus.reporting.codes import Code
from janus.lowering import state
from janus.lowering.trees.forest_plan import Case, CaseTest, ForestPlan, NodeView
from janus.trace.scalars import DTYPES, PyScalar
from janus.trace.values import is_framework_object, is_user_class


class Column(PyScalar):
    """A Python number of a tree node, one per node of a batch (a graph input)."""

    __slots__ = ()

    def __tf_tensor__(self, dtype: tf.DType | None = None, name: str | None = None) -> tf.Tensor:
        if dtype is None and self.kind is int:
            return tf.cast(self.tensor, tf.int32)  # the flattening checked that it fits int32
        return super().__tf_tensor__(dtype, name)


class _ChildFirst(InternalSignal):
    """A case trace reached a child of no known case: that case is traced first."""

    def __init__(self, node: Any):
        super().__init__("a child's case first")
        self.node = node


@dataclass
class Batch:
    """The nodes of one block, in the forest's graph."""

    index: tf.Tensor  # the node's index (standing for every node of the block)
    inputs: tuple  # the flattened arrays (ForestPlan.spec)
    tables: Any
    rowed: Any  # per table, whether it holds one row per node (rowed)


def discover(rec: Any, plan: ForestPlan, fn: Any, info: StructuralRecursion, bound: inspect.BoundArguments,
             node: Any) -> Case:
    """Trace the code once on ``node`` (in a scratch graph) to learn its case; ``rec`` is
    the trace's :class:`~janus.lowering.trees.recursion.TreeRecursion`."""
    if len(plan.cases) >= config.LIMITS.max_tree_cases:
        raise ConversionError(f"recursion over {plan.label}: more than {config.LIMITS.max_tree_cases} kinds of node",
                              code=Code.TREE_RECURSION)
    if id(node) in rec.discovering:
        raise ConversionError(f"recursion over {plan.label}: a node is its own descendant", code=Code.TREE_RECURSION)
    rec.discovering.add(id(node))
    try:
        while True:  # a node's case is traced once its children's cases are known
            try:
                trace = scratch(rec, plan, fn, info, bound, node)
                break
            except _ChildFirst as first:
                child = first.node
            discover(rec, plan, fn, info, bound, child)
            if plan.match(child) < 0:
                raise ConversionError(f"recursion over {plan.label}: the tests of a node's case do not hold on it",
                                      code=Code.TREE_RECURSION)
            known = plan.match(node)
            if known >= 0:  # its case was found below it
                return plan.cases[known]
    finally:
        rec.discovering.discard(id(node))
    case = trace.case
    case.tests, case.children, case.columns = trace.tests, trace.children, trace.columns
    for known in plan.cases:  # found while its own children were discovered
        if known.signature() == case.signature():
            return known
    case.exemplar, case.label = node, _short(node)
    case.index = len(plan.cases)
    plan.add(case)
    return case


def scratch(rec: Any, plan: ForestPlan, fn: Any, info: StructuralRecursion, bound: inspect.BoundArguments,
            node: Any) -> CaseTrace:
    """Trace the code on ``node`` in a scratch graph: its case's tests, children and
    columns, its result's spec, and which of its children's result components reach
    which of its own by a gradient (``Case.flows``), and what else each of its own
    reaches (``Case.reaches``)."""
    trace = CaseTrace(rec, fn, info, bound, plan, Case(len(plan.cases)), None)

    def traced():
        out = trace.run(node)
        trace.case.spec = tf.nest.map_structure(lambda t: tf.TensorSpec(t.shape, t.dtype), out)
        trace.case.flows = _flows(out, trace.child_results)
        trace.case.reaches = _reaches(out)

    tf.function(traced, autograph=False).get_concrete_function()
    return trace


class CaseTrace:
    """One trace of the recursive function's code on one node (a case): records the
    tests, children and columns, and gives converted code what it reads."""

    def __init__(self, rec: Any, fn: Any, info: StructuralRecursion, bound: inspect.BoundArguments,
                 plan: ForestPlan, case: Case, batch: Batch | None):
        self.rec, self.fn, self.info, self.bound, self.plan, self.case, self.batch = rec, fn, info, bound, plan, case, batch
        self.tests: list[CaseTest] = []
        self.children: list[str] = []
        self.columns: list[tuple[str, type]] = []
        self._reads: dict[str, Any] = {}
        self.child_results: list[Any] = []  # in a scratch trace: what each recursive call returned
        self.depth = rec.ctx.log.dynamic_depth

    def case_signature(self) -> tuple:
        return tuple(self.tests), tuple(self.children), tuple(self.columns)

    def refuse(self, what: str) -> None:
        raise ConversionError(f"recursion over {self.plan.label}: {what}", code=Code.TREE_RECURSION)

    def test(self, expr: str, description: str) -> None:
        t = CaseTest(expr, description)
        if t not in self.tests:
            self.tests.append(t)

    def typed(self, view: NodeView) -> type:
        """The class of the node at ``view``, now that the code depends on it (a node only
        passed on to the recursion is tested by its own case)."""
        cls = type(view.obj)
        self.test(f"type({view.path}) is {self.plan.const(cls, 't')}", f"{view.path} is a {cls.__qualname__}")
        return cls

    def run(self, node: Any) -> Any:
        """Run the converted code on ``node`` as a view; nothing it does may outlive it
        but ops (no effect, assertion or random draw: those would happen per node)."""
        rec, ctx = self.rec, self.rec.ctx
        cp = ctx.checkpoint()
        effects, assertions, seeds = len(ctx.log.effects), len(ctx.checks.assertions), ctx.seeds.position
        view = NodeView(node, "_n", self)
        self.typed(view)
        arguments = dict(self.bound.arguments)
        arguments[self.info.param] = view
        call = inspect.BoundArguments(self.bound.signature, arguments)
        previous, rec.active = rec.active, self
        try:
            out = ctx.convert(self.fn)(*call.args, **call.kwargs)
        except _ChildFirst:
            ctx.rollback(cp)
            raise
        finally:
            rec.active = previous
        if len(ctx.log.effects) != effects:
            self.refuse("changes Python state or prints at every node")
        if len(ctx.checks.assertions) != assertions:
            self.refuse("needs a run-time check at every node")
        if ctx.seeds.position is not seeds:
            self.refuse("draws random numbers at every node")
        ctx.rollback(cp)
        leaves = tf.nest.flatten(out)
        if not leaves or not all(isinstance(t, tf.Tensor) for t in leaves):
            self.refuse("returns something other than tensors for a node")
        return out

    # -- reads of a node ----------------------------------------------------------
    def read(self, view: NodeView, name: str) -> Any:
        path = f"{view.path}.{name}"
        if path in self._reads:
            return self._reads[path]
        obj, cls = view.obj, self.typed(view)
        d = state.instance_dict(obj)
        if d is not None and name in d and not state.is_data_descriptor(cls, name):
            value = self._value(d[name], path)
        else:
            if d is not None:
                self.test(f"{name!r} not in {view.path}.__dict__", f"{view.path}.{name} is not set on the node")
            value = self._class_attribute(view, cls, name)
        self._reads[path] = value
        return value

    def _class_attribute(self, view: NodeView, cls: type, name: str) -> Any:
        if not any(name in vars(k) and is_user_class(k) for k in cls.__mro__):
            self.refuse(f"reads {view.path}.{name}, which the node's class does not define")
        if state.is_data_descriptor(cls, name):
            prop = inspect.getattr_static(view.obj, name)
            if isinstance(prop, property) and prop.fget is not None:
                return self.rec.ctx.convert(prop.fget)(view)
            self.refuse(f"reads {view.path}.{name}, a descriptor")
        return state.class_attribute(self.rec.ctx, cls, view, name)

    def _value(self, value: Any, path: str) -> Any:
        kind = type(value)
        if value is None or kind is bool:
            self.test(f"{path} is {value!r}", f"{path} is {value!r}")
            return value
        if kind in (str, bytes):
            self.test(f"type({path}) is {kind.__name__} and {path} == {value!r}", f"{path} == {value!r}")
            return value
        if kind in (int, float):
            self.test(f"type({path}) is {kind.__name__}", f"{path} is {'an' if kind is int else 'a'} {kind.__name__}")
            return self._column(path, kind)
        if kind in (list, tuple):
            self.test(f"type({path}) is {kind.__name__} and len({path}) == {len(value)}",
                      f"{path} is a {kind.__name__} of {len(value)}")
            items = kind(self._value(v, f"{path}[{i}]") for i, v in enumerate(value))
            if kind is list:
                self.rec.containers.add(id(items))
                self.rec.keep.append(items)
            return items
        if is_user_class(kind) and state.instance_dict(value) is not None and not is_framework_object(value):
            self.test(f"{path} is not None", f"{path} is a node")
            return NodeView(value, path, self)
        self.refuse(f"a node's {path} is a {kind.__name__}, which Janus does not feed per node")

    def _column(self, path: str, kind: type) -> Column:
        entry = (path, kind)
        if entry not in self.columns:
            self.columns.append(entry)
        j = self.columns.index(entry)
        if self.batch is None:
            return Column(tf.compat.v1.placeholder(DTYPES[kind], []), kind)
        values = self.batch.inputs[3][self.case.index]
        if j >= len(values):
            self.refuse("its code read another number for a node of the same case")
        return Column(tf.gather(values[j], self.batch.index), kind)

    # -- the recursive call ---------------------------------------------------------
    def recursive_call(self, args: tuple, kwargs: dict) -> Any:
        try:
            bound = inspect.signature(self.fn).bind(*args, **kwargs)
        except TypeError as e:
            self.refuse(f"calls itself with arguments that do not bind ({e})")
        bound.apply_defaults()
        node = bound.arguments.get(self.info.param)
        if not isinstance(node, NodeView) or node.trace is not self:
            self.refuse("calls itself on something other than a part of the node")
        for name, value in bound.arguments.items():
            if name != self.info.param and not same(value, self.bound.arguments.get(name)):
                self.refuse(f"calls itself with another {name} than its caller's")
        if self.rec.ctx.log.dynamic_depth != self.depth:
            self.refuse("calls itself under a tensor-dependent condition or loop")
        slot = len(self.children)
        self.children.append(node.path)
        if self.batch is None:
            known = self.plan.match(node.obj)
            if known < 0:
                raise _ChildFirst(node.obj)
            child = self.plan.cases[known]
            result = tf.nest.map_structure(lambda s: tf.zeros(s.shape, s.dtype), child.spec)
            self.child_results.append(result)
            return result
        slots = self.batch.inputs[2][self.case.index]
        if slot >= len(slots):
            self.refuse("its code recursed on another node for a node of the same case")
        return row_of(self.batch.tables, self.batch.rowed, tf.gather(slots[slot], self.batch.index))


# -- the forest's tables --------------------------------------------------------
def rowed(spec: Any) -> Any:
    """Per result component: whether its table holds it as a row per node (its per-node
    shape is ``[1, ...]``: the table is ``[nodes, ...]``, not ``[nodes, 1, ...]``)."""
    return tf.nest.map_structure(lambda s: s.shape.rank >= 1 and s.shape[0] == 1, spec)


def row_of(tables: Any, rowed: Any, index: tf.Tensor) -> Any:
    """Node ``index``'s result, read from the tables."""
    return tf.nest.map_structure(lambda t, r: tf.expand_dims(tf.gather(t, index), 0) if r else tf.gather(t, index),
                                 tables, rowed)


# -- gradients through the forest ----------------------------------------------
def differentiable(t: tf.Tensor) -> bool:
    """Does a gradient flow through values of ``t``'s dtype?"""
    return t.dtype.is_floating or t.dtype.is_complex


def gate(t: tf.Tensor, passes: Callable[[], bool]) -> tf.Tensor:
    """``t``, whose gradient goes on only if ``passes()`` (asked while the backward pass is
    traced); otherwise it stops there, and what reaches the target only through it gets
    None, as in eager."""
    if not differentiable(t):
        return t

    @tf.custom_gradient
    def gate(x: tf.Tensor) -> Any:
        def grad(dy: Any) -> Any:
            return dy if passes() else None
        return tf.identity(x), grad

    return gate(t)


def _flows(out: Any, children: list[Any]) -> tuple[tuple[int, ...], ...]:
    """Per recursive call, per component of the child's result: the mask of ``out``'s
    components whose gradient reaches it (TensorFlow's gradients: None where no path)."""
    xs = [tf.nest.flatten(c) for c in children]
    flat = [x for c in xs for x in c]
    masks = [0] * len(flat)
    for j, y in enumerate(tf.nest.flatten(out)):
        if flat and differentiable(y):
            for at, g in enumerate(tf.gradients(y, flat)):
                if g is not None:
                    masks[at] |= 1 << j
    flows, at = [], 0
    for c in xs:
        flows.append(tuple(masks[at:at + len(c)]))
        at += len(c)
    return tuple(flows)


def _reaches(out: Any) -> tuple[frozenset, ...]:
    """Per component of ``out``: the refs of the outer tensors (variables' handles among them)
    that this scratch graph captured and whose gradient it reaches."""
    graph = tf.compat.v1.get_default_graph()
    captured = [(outer, inner) for outer, inner in graph.captures
                if inner.dtype == tf.resource or differentiable(inner)]
    reaches = []
    for y in tf.nest.flatten(out):
        got: frozenset = frozenset()
        if captured and differentiable(y):
            grads = tf.gradients(y, [inner for _, inner in captured])
            got = frozenset(outer.ref() for (outer, _), g in zip(captured, grads) if g is not None)
        reaches.append(got)
    return tuple(reaches)


def same(a: Any, b: Any) -> bool:
    """The same object, or an equal Python number or string of the same type."""
    return a is b or type(a) is type(b) and type(a) in (int, float, str, bool) and a == b


def _short(obj: Any) -> str:
    try:
        text = repr(obj)
    except Exception:  # noqa: BLE001
        text = f"<{type(obj).__qualname__}>"
    return text if len(text) <= 60 else text[:57] + "..."
