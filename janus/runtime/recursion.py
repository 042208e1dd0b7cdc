"""Recursion over Python trees as one batched graph, level by level (the Cavs idea).

When converted code calls a function that recurses over a structure
(``janus.convert.analysis.recursion``: ``encode(node)`` calls ``encode(node.left)``) on a
Python object the trace read from its arguments or state, the call is not inlined tree
by tree.  Instead:

1. **Cases.**  The function's code is traced once per *case* of node
   (``janus.trace.forest``): the node is a :class:`~janus.trace.forest.NodeView`, so
   what the code decides about it becomes the case's tests, the Python numbers it
   computes with become per-node columns, and its recursive calls become children whose
   results are inputs.  Cases are discovered on the nodes of the structures at hand, in
   a scratch graph.
2. **Flattening.**  At every call, a guard flattens the call's structures into arrays
   (node cases, children's indices, columns, sorted by height); the graph is fed them,
   so one graph serves every tree whose nodes fit the cases.
3. **Levels.**  The graph computes the nodes of one height and one case at once: the
   case's code runs under ``tf.vectorized_map`` (TensorFlow's own vectorizer, which
   refuses what it cannot batch exactly) over the nodes' indices, gathering columns and
   children's results from the table of the heights below, and appends its results to
   the table; heights above those the traced call's structures reached run under a
   ``tf.cond`` on whether the call has nodes that high.  Gradients flow through the
   gathers.
4. **Across roots.**  A step that encodes several trees (``[self.encode(t) for t in
   trees]``) is traced twice: the first trace finds the roots, the second computes all
   of them in one forest at the first call, if nothing between the calls could see the
   difference (no state change, variable write, gradient-tape change or tensor
   control flow); otherwise each root is its own forest.

What does not fit (effects, random draws or assertions per node, a node used as a
value, a recursive call under a tensor condition, a structure deeper than
``MAX_LEVELS``) fails the conversion or the guard, and eager runs.
"""
from __future__ import annotations

import dataclasses
import inspect
import sys
import weakref
from dataclasses import dataclass
from typing import Any, Callable

import tensorflow as tf

from janus import _tf_private, config
from janus.commit import atomicity
from janus.convert.analysis.recursion import StructuralRecursion, structural_recursion
from janus.errors import ConversionError, InternalSignal, Restart
from janus.runtime import state
from janus.trace.active import CALL
from janus.trace.forest import MAX_CASES, MAX_LEVELS, Case, CaseTest, Flat, ForestPlan, NodeView
from janus.trace.guards import GuardKind
from janus.trace.sources import Source
from janus.trace.values import DTYPES, PyScalar, is_framework_object, is_user_class

NOT_RECURSION = object()
# Cases learned by earlier traces of a function (without their nodes): a later trace, e.g. for
# a new batch size, needs only find a node of each among its trees instead of tracing it again.
_KNOWN_CASES: "weakref.WeakKeyDictionary[Any, tuple[dict, list[Case]]]" = weakref.WeakKeyDictionary()
_WRITER_PREFIXES = ("ResourceApply", "ResourceSparseApply", "ResourceScatter")
_CALL_OPS = {"If", "StatelessIf", "While", "StatelessWhile", "PartitionedCall", "StatefulPartitionedCall", "Case"}


class Regroup(Restart):
    """Trace again, computing these roots (``{function: [sources]}``) in one forest, or
    (``False``) each root in a forest of its own; or inline the recursion of a function
    whose trees cannot be batched (``refused``: function -> why)."""

    def __init__(self, grouping: dict | bool | None, refused: dict | None = None):
        super().__init__("retrace with the roots of recursive calls known")
        self.grouping = grouping
        self.refused = refused or {}


class Column(PyScalar):
    """A Python number of a tree node, one per node of a batch (a graph input)."""

    __slots__ = ()

    def __tf_tensor__(self, dtype: tf.DType | None = None, name: str | None = None) -> tf.Tensor:
        if dtype is None and self.kind is int:
            return tf.cast(self.tensor, tf.int32)  # the flattening checked that it fits int32
        return super().__tf_tensor__(dtype, name)


@dataclass
class Forest:
    """The table of every node's result (a nest of ``[nodes, ...]`` tensors) of one graph."""

    plan: ForestPlan
    function: Any
    tables: Any
    roots: tf.Tensor
    sources: list[Source]

    def result(self, k: int) -> Any:
        """Root ``k``'s result; its gates tell the plan which components a gradient reaches."""
        out = tf.nest.map_structure(lambda t: tf.gather(t, self.roots[k]), self.tables)
        gates = [_gate(t, lambda j=j: self.plan.reached_root(k, j) or True)
                 for j, t in enumerate(tf.nest.flatten(out))]
        return tf.nest.pack_sequence_as(out, gates)


@dataclass
class _Batch:
    index: tf.Tensor  # the node's index (vectorized over the block by tf.vectorized_map)
    inputs: tuple  # the flattened arrays (ForestPlan.spec)
    tables: Any


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
        self.groups: dict[Any, _Group] = {}
        self.forests: list[Forest] = []
        self.active: _CaseTrace | None = None
        self.containers: set[int] = set()  # ids of lists read from nodes (mutating them is refused)
        self.keep: list[Any] = []
        self._discovering: set[int] = set()
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
            if len(seen) > 1:  # this trace is traced again with all roots in one forest
                first = next(f for f in self.forests if f.function is fn)
                return tf.nest.map_structure(lambda s: tf.zeros(s.shape, s.dtype), first.plan.cases[0].spec)
        return self._build(fn, info, bound, [(node, source)]).result(0)

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
        computed early: same graph and control flow, no deferred effect, no variable write,
        no gradient tape entered, left or asked, the same other arguments."""
        if graph is not group.graph or self.ctx.log.dynamic_depth != group.depth or self._tape_events:
            return False
        if len(self.ctx.log.effects) != group.effects:
            return False
        for op in graph.get_operations()[group.ops:]:
            if "Assign" in op.type or op.type.startswith(_WRITER_PREFIXES) or op.type in _CALL_OPS:
                return False
        return all(_same(v, group.bound.arguments.get(n)) for n, v in bound.arguments.items() if n != param)

    def finish(self) -> None:
        """At the end of a trace: trace again if roots were found that one forest can hold;
        else leave the roots' classes to the forests' guards (a root may be any node)."""
        self._unwatch_tapes()
        for forest in self.forests:
            for source in forest.sources:
                self.ctx.guard_set.subsume_type(source)
        if self.grouping is None:
            found = {fn: sources for fn, sources in self.roots_seen.items() if len(sources) > 1}
            if found:
                raise Regroup(found)
        elif isinstance(self.grouping, dict):
            for fn, expected in self.grouping.items():
                group = self.groups.get(fn)
                if fn in self.refused:
                    continue
                if group is None or group.next != len(expected):
                    raise Regroup(False)

    def close(self) -> None:
        self._unwatch_tapes()

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

        self._watching = True
        sys.setprofile(hook)
        return True

    def _unwatch_tapes(self) -> None:
        if self._watching:
            sys.setprofile(None)
            self._watching = False

    # -- one forest ----------------------------------------------------------------
    def _build(self, fn: Any, info: StructuralRecursion, bound: inspect.BoundArguments,
               roots: list[tuple[Any, Source]]) -> Forest:
        ctx = self.ctx
        objs = tuple(o for o, _ in roots)
        plan = self._plan(fn, info, bound, objs, *_KNOWN_CASES.get(fn, ({}, [])))
        plan.root_labels = [s.label for _, s in roots]
        specs = {repr(c.spec) for c in plan.cases}
        if len(specs) > 1:
            raise ConversionError(f"recursion over {plan.label}: its cases return different structures or shapes "
                                  f"({' vs '.join(sorted(specs))})")
        name = ctx.const(plan, "forest")
        plan.roots_of = eval(f"lambda a, k: ({''.join(s.expr + ', ' for _, s in roots)})",  # noqa: S307
                             ctx.guard_set.namespace)
        ctx.guard(f"{name}.fits(a, k)", f"{', '.join(plan.root_labels)} fit the {len(plan.cases)} node cases of "
                  f"{plan.label} traced (below {plan.levels} levels)", GuardKind.FOREST)
        inputs = plan.unpack(_tf_private.call_time_input(ctx.heap.outer_graph, lambda: plan.inputs(*CALL.args),
                                                         plan.spec(), key=name))
        offsets, root_index = inputs[0], inputs[1]
        n_cases = len(plan.cases)

        def level(height: int, tables: Any) -> Any:
            for case in plan.cases:
                if (height == 0) != (not case.children):
                    continue  # leaves are height 0, and a node with children is above them
                block = height * n_cases + case.index
                nodes = tf.range(offsets[block], offsets[block + 1])
                out = self._vectorized(plan, fn, info, bound, case, nodes, inputs, tables)
                out = tf.nest.pack_sequence_as(out, [_gate(t, lambda c=case.index, j=j: plan.block_passes(c, j))
                                                     for j, t in enumerate(tf.nest.flatten(out))])
                tables = tf.nest.map_structure(lambda t, o: tf.concat([t, o], 0), tables, out)
            return tables

        def from_height(height: int, tables: Any) -> Any:
            """Heights ``height`` and up.  Those above the height the traced call's structures
            reached run only at calls that have nodes that high: the ops of an empty height
            would run on zero rows at about the cost of a full one."""
            if height == plan.levels:
                return tables
            if height <= plan.reached:
                return from_height(height + 1, level(height, tables))
            return tf.cond(offsets[height * n_cases] < offsets[plan.levels * n_cases],
                           lambda: from_height(height + 1, level(height, tables)), lambda: tables)

        tables = from_height(0, tf.nest.map_structure(lambda s: tf.zeros([0, *s.shape], s.dtype), plan.cases[0].spec))
        for case in plan.cases:
            case.exemplar = None
        forest = Forest(plan, fn, tables, root_index, [s for _, s in roots])
        self.forests.append(forest)
        return forest

    def _plan(self, fn: Any, info: StructuralRecursion, bound: inspect.BoundArguments, objs: tuple,
              namespace: dict, known: list[Case]) -> ForestPlan:
        """The cases of the nodes of ``objs``: cases known from earlier traces of ``fn`` that
        occur there (each needs a node of its own to be traced on), and new ones discovered.
        ``namespace`` holds the classes and values the known cases' tests name."""
        plan = ForestPlan(fn.__qualname__, config.subtree_reuse())
        plan.namespace.update(namespace)
        for case in known:
            plan.add(dataclasses.replace(case, index=len(plan.cases), exemplar=None))
        while True:
            exemplars: dict[int, Any] = {}
            found = plan.flatten(objs, exemplars)
            if isinstance(found, Flat):
                break
            if found.kind == "case":
                self.discover(plan, fn, info, bound, found.node)
                if plan.match(found.node) < 0:  # would loop: what the trace recorded does not recognize it
                    raise ConversionError(f"recursion over {plan.label}: the tests of a node's case do not hold "
                                          f"on it")
            elif found.kind == "height" and plan.levels < MAX_LEVELS:
                plan.levels *= 2
            else:
                raise ConversionError(f"recursion over {plan.label}: {found.reason}")
        if all(case.exemplar is not None or case.index in exemplars for case in plan.cases):
            plan.reached, plan.traced = found.height, found
            for case in plan.cases:
                case.exemplar = case.exemplar if case.exemplar is not None else exemplars[case.index]
            for case in plan.cases:
                if case.flows is None:  # learned in another trace: its gradients may differ in this one
                    trace = self._scratch(plan, fn, info, bound, case.exemplar)
                    if trace.case_signature() != case.signature():
                        trace.refuse("its code took another path for a node of the same case")
                    case.flows, case.reaches = trace.case.flows, trace.case.reaches
            learned = {c.signature(): c for c in known}
            learned.update((c.signature(), dataclasses.replace(c, exemplar=None, flows=None, reaches=None))
                           for c in plan.cases)
            _KNOWN_CASES[fn] = (dict(plan.namespace), list(learned.values()))
            return plan
        present = [case for case in plan.cases if case.exemplar is not None or case.index in exemplars]
        return self._plan(fn, info, bound, objs, plan.namespace, present)

    def _vectorized(self, plan: ForestPlan, fn: Any, info: StructuralRecursion, bound: inspect.BoundArguments,
                    case: Case, nodes: tf.Tensor, inputs: tuple, tables: Any) -> Any:
        def body(index):
            trace = _CaseTrace(self, fn, info, bound, plan, case, _Batch(index, inputs, tables))
            out = self._traced(trace, case.exemplar)
            if trace.case_signature() != case.signature():
                trace.refuse("its code took another path for a node of the same case")
            return out

        graph = tf.compat.v1.get_default_graph()
        start = len(graph.get_operations())
        try:
            out = tf.vectorized_map(body, nodes, fallback_to_while_loop=False)
            self.ctx.checks.safe_ops.update(atomicity.unused_since(graph, start, out))
            return out
        except InternalSignal:
            raise
        except Exception as e:  # noqa: BLE001 - TensorFlow's vectorizer refuses what it cannot batch exactly
            raise ConversionError(f"recursion over {plan.label}: TensorFlow cannot batch its code over nodes "
                                  f"({str(e).splitlines()[0][:120]})") from None

    def discover(self, plan: ForestPlan, fn: Any, info: StructuralRecursion, bound: inspect.BoundArguments,
                  node: Any) -> Case:
        """Trace the code once on ``node`` (in a scratch graph) to learn its case."""
        if len(plan.cases) >= MAX_CASES:
            raise ConversionError(f"recursion over {plan.label}: more than {MAX_CASES} kinds of node")
        if id(node) in self._discovering:
            raise ConversionError(f"recursion over {plan.label}: a node is its own descendant")
        self._discovering.add(id(node))
        try:
            trace = self._scratch(plan, fn, info, bound, node)
        finally:
            self._discovering.discard(id(node))
        case = trace.case
        case.tests, case.children, case.columns = trace.tests, trace.children, trace.columns
        for known in plan.cases:  # found while its own children were discovered
            if known.signature() == case.signature():
                return known
        case.exemplar, case.label = node, _short(node)
        case.index = len(plan.cases)
        plan.add(case)
        return case

    def _scratch(self, plan: ForestPlan, fn: Any, info: StructuralRecursion, bound: inspect.BoundArguments,
                 node: Any) -> "_CaseTrace":
        """Trace the code on ``node`` in a scratch graph: its case's tests, children and
        columns, its result's spec, and which of its children's result components reach
        which of its own by a gradient (``Case.flows``), and what else each of its own
        reaches (``Case.reaches``)."""
        trace = _CaseTrace(self, fn, info, bound, plan, Case(len(plan.cases)), None)

        def scratch():
            out = self._traced(trace, node)
            trace.case.spec = tf.nest.map_structure(lambda t: tf.TensorSpec(t.shape, t.dtype), out)
            trace.case.flows = _flows(out, trace.child_results)
            trace.case.reaches = _reaches(out)

        tf.function(scratch, autograph=False).get_concrete_function()
        return trace

    def _traced(self, trace: "_CaseTrace", node: Any) -> Any:
        """Run the converted code on ``node`` as a view; nothing it does may outlive it
        but ops (no effect, assertion or random draw: those would happen per node)."""
        ctx = self.ctx
        cp = ctx.checkpoint()
        effects, assertions, seeds = len(ctx.log.effects), len(ctx.checks.assertions), ctx.seeds.position
        view = NodeView(node, "_n", trace)
        trace.typed(view)
        arguments = dict(trace.bound.arguments)
        arguments[trace.info.param] = view
        call = inspect.BoundArguments(trace.bound.signature, arguments)
        previous, self.active = self.active, trace
        try:
            out = ctx.convert(trace.fn)(*call.args, **call.kwargs)
        finally:
            self.active = previous
        if len(ctx.log.effects) != effects:
            trace.refuse("changes Python state or prints at every node")
        if len(ctx.checks.assertions) != assertions:
            trace.refuse("needs a run-time check at every node")
        if ctx.seeds.position is not seeds:
            trace.refuse("draws random numbers at every node")
        ctx.rollback(cp)
        leaves = tf.nest.flatten(out)
        if not leaves or not all(isinstance(t, tf.Tensor) for t in leaves):
            trace.refuse("returns something other than tensors for a node")
        return out


class _CaseTrace:
    """One trace of the recursive function's code on one node (a case): records the
    tests, children and columns, and gives converted code what it reads."""

    def __init__(self, rec: TreeRecursion, fn: Any, info: StructuralRecursion, bound: inspect.BoundArguments,
                 plan: ForestPlan, case: Case, batch: _Batch | None):
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
        raise ConversionError(f"recursion over {self.plan.label}: {what}")

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
            if name != self.info.param and not _same(value, self.bound.arguments.get(name)):
                self.refuse(f"calls itself with another {name} than its caller's")
        if self.rec.ctx.log.dynamic_depth != self.depth:
            self.refuse("calls itself under a tensor-dependent condition or loop")
        slot = len(self.children)
        self.children.append(node.path)
        if self.batch is None:
            known = self.plan.match(node.obj)
            child = self.plan.cases[known] if known >= 0 else self.rec.discover(self.plan, self.fn, self.info,
                                                                                 self.bound, node.obj)
            result = tf.nest.map_structure(lambda s: tf.zeros(s.shape, s.dtype), child.spec)
            self.child_results.append(result)
            return result
        slots = self.batch.inputs[2][self.case.index]
        if slot >= len(slots):
            self.refuse("its code recursed on another node for a node of the same case")
        index = tf.gather(slots[slot], self.batch.index)
        return tf.nest.map_structure(lambda t: tf.gather(t, index), self.batch.tables)


def _differentiable(t: tf.Tensor) -> bool:
    return t.dtype.is_floating or t.dtype.is_complex


def _gate(t: tf.Tensor, passes: Callable[[], bool]) -> tf.Tensor:
    """``t``, whose gradient goes on only if ``passes()`` (asked while the backward pass is
    traced); otherwise it stops there, and what reaches the target only through it gets
    None, as in eager."""
    if not _differentiable(t):
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
        if flat and _differentiable(y):
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
                if inner.dtype == tf.resource or _differentiable(inner)]
    reaches = []
    for y in tf.nest.flatten(out):
        got: frozenset = frozenset()
        if captured and _differentiable(y):
            grads = tf.gradients(y, [inner for _, inner in captured])
            got = frozenset(outer.ref() for (outer, _), g in zip(captured, grads) if g is not None)
        reaches.append(got)
    return tuple(reaches)


def _is_node(obj: Any) -> bool:
    return is_user_class(type(obj)) and state.instance_dict(obj) is not None and not is_framework_object(obj)


def _same(a: Any, b: Any) -> bool:
    return a is b or type(a) is type(b) and type(a) in (int, float, str, bool) and a == b


def _short(obj: Any) -> str:
    try:
        text = repr(obj)
    except Exception:  # noqa: BLE001
        text = f"<{type(obj).__qualname__}>"
    return text if len(text) <= 60 else text[:57] + "..."
