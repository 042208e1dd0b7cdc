"""Trace converted code into a TensorFlow concrete function: one cache entry.

The converted function is traced by ``tf.function(autograph=False)`` — a tracer of
code Janus already converted, not a converter.  Tensor arguments become the
function's inputs (with relaxed shapes where the caller asked); everything else the
trace reads is guarded through the trace context.  The entry bundles the concrete
function with its compiled guard, input gathering, output recipe and deferred
effects.
"""
from __future__ import annotations

import inspect
import types
from dataclasses import dataclass, field
from typing import Any, Callable

import tensorflow as tf

from janus import _tf_private
from janus.commit import atomicity, effects
from janus.commit.packing import Packer, Recipe, Run, unpack
from janus.convert import support
from janus.convert.pipeline import converted_function
from janus.errors import ConversionError
from janus.runtime import ops
from janus.runtime.recursion import Regroup, TreeRecursion
from janus.trace import guards, output, xla as xla_marks
from janus.trace.active import CALL
from janus.trace.context import TraceContext
from janus.trace.seeds import DATASET_RANDOM_OPS, STATEFUL_RANDOM_OPS, SeedReservation
from janus.trace.guards import Guard, guard_namespace_base
from janus.trace.sources import Arg, Default, KwArg, Source
from janus.trace.values import DTYPES, is_eager_composite, is_eager_tensor


@dataclass
class CacheEntry:
    """One specialized graph of a function and the conditions under which it is valid."""

    concrete: Any
    check: Callable[[tuple, dict], bool]
    inputs: Callable[[tuple, dict], list]
    output: Recipe
    effects: list[effects.Effect]
    guards: list[Guard]
    guard_source: str
    input_specs: list[tuple[Source, tf.TensorSpec]]
    input_names: list[str]
    heap_inputs: list[str]
    heap_specs: dict
    assertions: int
    assumptions: list
    relaxed: bool
    namespace: dict = field(default_factory=dict)
    seeds: SeedReservation | None = None  # the random draws' seeds, fed and consumed at each call
    constant_bytes: int = 0  # what its constants (captured tensors, Const ops) hold
    forests: list = field(default_factory=list)  # plans of recursions over trees (janus.trace.forest)
    unbatched: dict = field(default_factory=dict)  # recursions inlined per structure instead, and why
    xla_ops: int = 0  # ops marked for XLA clusters (janus.trace.xla)
    xla_rounding: list = field(default_factory=list)  # op types XLA would round differently
    xla: Any = None  # the XLA decision of this graph (janus.driver.xla_choice)
    undo: list | None = None  # variables put back if a run fails (an op may fail after a write)
    late_failure: str | None = None  # why runs are undoable, for janus.explain
    hits: int = 0
    failures: int = 0

    def holds(self, guard: Guard, a: tuple, k: dict) -> bool:
        """Evaluate one guard (to explain a miss; the hot path uses the compiled ``check``)."""
        try:
            return bool(eval(guard.expr, dict(self.namespace), {"a": a, "k": k}))  # noqa: S307
        except Exception:  # noqa: BLE001
            return False

    def value_shape(self, source: Source) -> tf.TensorShape | None:
        """The shape this graph assumed for the tensor read from ``source``."""
        spec = self.heap_specs.get(source)
        return spec.shape if spec is not None else None

    def value_at(self, source: Source, a: tuple, k: dict) -> Any:
        try:
            return eval(source.expr, dict(self.namespace), {"a": a, "k": k})  # noqa: S307
        except Exception:  # noqa: BLE001
            return None

    def execute(self, a: tuple, k: dict) -> list:
        """Run the graph (raises if it aborted; then nothing was changed)."""
        CALL.args = (a, k)
        try:
            def run() -> Any:
                return _tf_private.call_flat(self.concrete, self.inputs(a, k), xla=self.xla_ops > 0)

            outs = run() if self.undo is None else atomicity.run_undoing(run, self.undo)
        finally:
            CALL.args = None
        return list(outs) if isinstance(outs, (list, tuple)) else ([] if outs is None else [outs])

    def finish(self, outs: list, a: tuple, k: dict) -> Any:
        """After a successful run: commit the deferred effects, then rebuild the result."""
        run = Run(outs, a, k)
        effects.commit(self.effects, run)
        return unpack(self.output, run)


def convert(fn: types.FunctionType) -> types.FunctionType:
    """The converted code of ``fn``, calling Janus's runtime (the generated code's ``_jn``).
    A function marked ``janus.do_not_convert`` is never converted: a trace that reaches it
    fails for good, and its caller runs eagerly (no graph breaks yet)."""
    if support.marked_do_not_convert(fn):
        raise ConversionError(f"calls {fn.__qualname__}, marked janus.do_not_convert", permanent=True)
    return converted_function(fn, ops)


def tensor_leaves(args: tuple, kwargs: dict) -> list[tuple[Source, Any]]:
    """Sources of the eager tensors among the arguments (inside tuples, lists, dicts)."""
    return [(s, v) for s, v in input_leaves(args, kwargs) if is_eager_tensor(v)]


def input_leaves(args: tuple, kwargs: dict) -> list[tuple[Source, Any]]:
    """Sources of the eager tensors and composite tensors among the arguments."""
    found: list[tuple[Source, Any]] = []

    def walk(value: Any, source: Source, depth: int) -> None:
        if is_eager_tensor(value) or is_eager_composite(value):
            found.append((source, value))
        elif depth < 4 and (type(value) in (tuple, list) or isinstance(value, tuple) and hasattr(value, "_fields")) \
                and len(value) <= 256:
            for i, v in enumerate(value):
                walk(v, source.item(i), depth + 1)
        elif depth < 4 and type(value) is dict and len(value) <= 256:
            for key, v in value.items():
                walk(v, source.item(key), depth + 1)

    for i, v in enumerate(args):
        walk(v, Arg(i), 0)
    for name, v in kwargs.items():
        walk(v, KwArg(name), 0)
    return found


def _forbid_variables(next_creator, **kwargs):
    raise ConversionError("creates a tf.Variable (eager creates a new one at every call)")


def _param_names(fn: Callable) -> list[str]:
    try:
        return list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return []


def _defaults(ctx: TraceContext, fn: types.FunctionType, args: tuple, kwargs: dict) -> dict:
    """Default values the call relies on, read as Python state (a mutable default persists)."""
    code = fn.__code__
    positional = code.co_varnames[:code.co_argcount]
    out = {}
    fname = ctx.const(fn, "fn")
    defaults = fn.__defaults__ or ()
    first_default = len(positional) - len(defaults)
    for i, name in enumerate(positional):
        if i >= len(args) and name not in kwargs and i >= first_default:
            j = i - first_default
            out[name] = ctx.read(defaults[j], Default(fname, name, j))
    for name, value in (fn.__kwdefaults__ or {}).items():
        if name not in kwargs:
            out[name] = ctx.read(value, Default(fname, name))
    return out


def build_entry(python_fn: types.FunctionType, converted: Callable, args: tuple, kwargs: dict,
                relaxed_shapes: dict[Source, tf.TensorShape | tf.TypeSpec] | None = None, speculator: Any = None,
                fed_scalars: dict[Source, type] | None = None,
                on_collective: Callable[[Any], None] | None = None, xla: bool = False) -> CacheEntry:
    """Trace ``converted`` on these arguments into a cache entry (raises on failure).

    ``xla``: mark the pure ops that run before any state change for XLA clusters.

    Raises :class:`janus.commit.atomicity.StateBeforeAssertion` when an assumption is checked
    after a state update; the caller retraces without those assumptions.  A trace that
    found several calls of a recursive function on trees is traced once more, to compute
    them in one batch (``janus.runtime.recursion``).
    """
    grouping: dict | bool | None = None
    refused: dict = {}
    for _ in range(8):
        try:
            return _build_entry(python_fn, converted, args, kwargs, relaxed_shapes, speculator, fed_scalars,
                                on_collective, grouping, refused, xla)
        except Regroup as again:
            if again.refused:
                refused.update(again.refused)
            elif grouping is None or grouping and again.grouping is False:  # find roots, group, or each alone
                grouping = again.grouping
            else:
                break
    raise ConversionError("recursive calls on trees changed between traces")


def _build_entry(python_fn: types.FunctionType, converted: Callable, args: tuple, kwargs: dict,
                 relaxed_shapes: dict | None, speculator: Any, fed_scalars: dict | None,
                 on_collective: Callable[[Any], None] | None, grouping: dict | bool | None,
                 refused: dict, xla: bool) -> CacheEntry:
    leaves = tensor_leaves(args, kwargs)
    relaxed_shapes = relaxed_shapes or {}
    composite_specs = {p: s for p, s in relaxed_shapes.items() if isinstance(s, tf.TypeSpec)}
    relaxed_shapes = {p: s for p, s in relaxed_shapes.items() if p not in composite_specs}
    fed_scalars = fed_scalars or {}
    specs = [(p, tf.TensorSpec(relaxed_shapes.get(p, v.shape), v.dtype)) for p, v in leaves]
    heap_shapes = {p: s for p, s in relaxed_shapes.items() if not p.is_argument}
    # Fed scalars among the arguments are inputs of the concrete function; fed scalars read
    # from Python state are captured at call time when (and only if) the trace reads them.
    specs += [(p, tf.TensorSpec([], DTYPES[kind])) for p, kind in fed_scalars.items() if p.is_argument]
    ctx = TraceContext(relaxed=bool(relaxed_shapes), speculator=speculator, fed_scalars=dict(fed_scalars),
                       heap_shapes=heap_shapes, convert=convert)
    ctx.guard_set.namespace.update(guard_namespace_base())
    ctx.heap.composite_specs = composite_specs
    ctx.on_collective = on_collective
    ctx.recursion = TreeRecursion(ctx, grouping, (args, kwargs), refused)
    names = _param_names(python_fn)
    state: dict[str, Any] = {}

    def graph_fn(*placeholders):
        ctx.heap.outer_graph = tf.compat.v1.get_default_graph()
        ctx.seeds.bind(ctx.heap.outer_graph)
        ctx.heap.arg_inputs = {p: ph for (p, _), ph in zip(specs, placeholders)}
        ctx.heap.arg_specs = dict(specs)
        with ctx, tf.variable_creator_scope(_forbid_variables):
            a = tuple(ctx.read(v, Arg(i, names[i] if i < len(names) else None)) for i, v in enumerate(args))
            k = {n: ctx.read(v, KwArg(n)) for n, v in kwargs.items()}
            k.update(_defaults(ctx, python_fn, args, kwargs))
            result = converted(*a, **k)
            ctx.recursion.finish()
            if ctx.seeds.used:
                draws = ctx.seeds.finish(ctx.checks.assert_that)
                ctx.effect(effects.ConsumeSeeds(draws, ctx.seeds.reservation), "random draws")
            packer = Packer(ctx)
            state["output"] = packer.pack(result)
            state["effects"] = effects.pack_effects(ctx, packer)
        if ctx.collective is not None and ctx.checks.assertions:
            raise ConversionError("a graph of a multi-worker step may not carry assertions: a worker whose run "
                                  "aborted would re-run the step eagerly while the others went on")
        if ctx.heap.random_datasets and ctx.checks.assertions:
            raise ConversionError(f"iterates {ctx.heap.random_datasets[0]}, whose order or elements are random, in a "
                                  "graph with assertions: a run that fails one would have advanced its random state")
        before = atomicity.gate_state_on_assertions(ctx.heap.outer_graph, ctx.checks)
        candidates = xla_marks.candidates(before, [op for op, _ in ctx.checks.assertions])
        state["xla_rounding"] = xla_marks.rounds_differently(candidates)
        if xla:
            state["xla_ops"] = xla_marks.mark(candidates)
        completed = atomicity.completion(ctx.heap.outer_graph, ctx.checks.safe_ops, packer.tensors)
        return packer.tensors + ([completed] if completed is not None else [])

    traced = tf.function(graph_fn, autograph=False)
    with output.captured() as printed:
        try:
            concrete = traced.get_concrete_function(*(s for _, s in specs))
        finally:
            ctx.recursion.close()
    if printed.getvalue():
        # The user's prints are deferred effects; this came from library code that prints
        # from Python: in a graph it would print once, at trace time, and never again.
        raise ConversionError(f"library code printed while tracing ({printed.getvalue().strip()[:60]!r})", permanent=True)
    _refuse_stateful_random(concrete)
    undo = None
    if ctx.checks.late_failures:
        undo = atomicity.undoable_variables(concrete)
        if undo is None:
            raise atomicity.FailureAfterWrite(f"{ctx.checks.late_failures[0]}, and the graph holds state other "
                                              f"than variables: a run it aborted could not be undone")
    check, guard_source = guards.compile_guard(ctx.guard_set.guards, len(args), tuple(kwargs), ctx.guard_set.namespace)
    inputs = guards.compile_inputs([p for p, _ in specs], fed_scalars, ctx.guard_set.namespace)
    return CacheEntry(
        concrete=concrete, check=check, inputs=inputs, output=state["output"], effects=state["effects"],
        guards=list(ctx.guard_set.guards), guard_source=guard_source, input_specs=specs,
        input_names=[ctx.heap.label_of(ctx.heap.arg_inputs.get(p)) or p.label for p, _ in specs],
        heap_inputs=[h.source.what for h in ctx.heap.heap_inputs.values()],
        heap_specs={p: h.spec for p, h in ctx.heap.heap_inputs.items()},
        assertions=len(ctx.checks.assertions), assumptions=list(ctx.checks.assumptions),
        relaxed=ctx.heap.relaxed, namespace=ctx.guard_set.namespace,
        seeds=ctx.seeds.reservation if ctx.seeds.used else None,
        constant_bytes=_tf_private.captured_constant_bytes(concrete),
        forests=[f.plan for f in ctx.recursion.forests],
        unbatched={fn.__qualname__: why for fn, why in refused.items()},
        xla_ops=state.get("xla_ops", 0), xla_rounding=state.get("xla_rounding", []), undo=undo,
        late_failure=ctx.checks.late_failures[0] if ctx.checks.late_failures else None,
    )


def _refuse_stateful_random(concrete: Any) -> None:
    """A stateful random kernel in the graph (reached through library code Janus called as
    it is, or a shuffling dataset built inside the step) would draw other numbers than
    eager: the function runs eagerly instead."""
    graph_def = concrete.graph.as_graph_def()
    nodes = list(graph_def.node) + [n for f in graph_def.library.function for n in f.node_def]
    found = sorted({n.op for n in nodes if n.op in STATEFUL_RANDOM_OPS or n.op in DATASET_RANDOM_OPS})
    if found:
        raise ConversionError(f"library code draws random numbers with {', '.join(found)}, which a graph "
                              f"would draw differently from eager", permanent=True)
