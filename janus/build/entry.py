"""Trace converted code into a TensorFlow concrete function: one cache entry.

The converted function is traced by ``tf.function(autograph=False)`` — a tracer of
code Janus already converted, not a converter.  Tensor arguments become the
function's inputs (with relaxed shapes where the caller asked), and so do numeric NumPy
array arguments while only TensorFlow reads them (``janus.trace.arrays``); everything
else the trace reads is guarded through the trace context.  The entry bundles the concrete
function with its compiled guard, input gathering, output recipe and deferred
effects.
"""
from __future__ import annotations

import contextlib
import inspect
import types
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import tensorflow as tf

from janus import _tf_private
from janus.commit import effects, island_copies
from janus.trace import atomicity
from janus.commit import undo as undoing
from janus.commit.packing import Packer, Recipe, Run
from janus.convert import support
from janus.convert.pipeline import converted_function
from janus.errors import ArraysReadAsNumPy, ConversionError, Restart, StateArraysKept
from janus.reporting.codes import Code
from janus.lowering import islands, ops
from janus.lowering.trees.recursion import TreeRecursion
from janus.trace import guards, known_values, output, xla as xla_marks
from janus.trace.active import CALL
from janus.trace.arrays import ReadAsNumPy, is_fed_array
from janus.trace.context import TraceContext
from janus.trace.seeds import DATASET_RANDOM_OPS, STATEFUL_RANDOM_OPS, SeedReservation
from janus.trace.guards import Guard, GuardKind
from janus.build.plan import Arrays, TracePlan
from janus.trace.sources import Arg, Default, KwArg, Source
from janus.trace.scalars import DTYPES, is_eager_tensor
from janus.trace.values import is_eager_composite

if TYPE_CHECKING:
    from janus.trace.speculation import Assumption, Speculator


@dataclass
class Graph:
    """The runnable part of a cache entry: the concrete function, its compiled guard and
    input gathering, and what a successful run commits and returns."""

    concrete: Any
    check: Callable[[tuple, dict], bool]
    inputs: Callable[[tuple, dict], list]
    output: Recipe
    effects: list[effects.Effect]
    namespace: dict  # what the guard and input code read (sources' expressions)
    seeds: SeedReservation | None = None  # the random draws' seeds, fed and consumed at each call
    undo: undoing.Undo | None = None  # what is put back if a run fails (an op may fail after a write)
    xla_ops: int = 0  # ops marked for XLA clusters (janus.trace.xla)
    islands: list[island_copies.IslandCopy] = field(default_factory=list)  # what its Python islands change

    def holds(self, guard: Guard, a: tuple, k: dict) -> bool:
        """Evaluate one guard (to explain a miss; the hot path uses the compiled ``check``)."""
        try:
            return bool(eval(guard.expr, dict(self.namespace), {"a": a, "k": k}))  # noqa: S307
        except Exception:  # noqa: BLE001
            return False

    def value_at(self, source: Source, a: tuple, k: dict) -> Any:
        try:
            return eval(source.expr, dict(self.namespace), {"a": a, "k": k})  # noqa: S307
        except Exception:  # noqa: BLE001
            return None

    def execute(self, a: tuple, k: dict) -> list:
        """Run the graph (raises if it aborted; then nothing was changed): the objects of its
        Python islands are copied first, the copies dropped if it aborts."""
        CALL.args = (a, k)
        try:
            def run() -> Any:
                return _tf_private.call_flat(self.concrete, self.inputs(a, k), xla=self.xla_ops > 0)

            island_copies.take_all(self.islands, a, k)
            try:
                outs = run() if self.undo is None else undoing.run_undoing(run, self.undo, a, k)
            except BaseException:
                island_copies.abort_all(self.islands)
                raise
        finally:
            CALL.args = None
        return list(outs) if isinstance(outs, (list, tuple)) else ([] if outs is None else [outs])

    def finish(self, outs: list, a: tuple, k: dict) -> Any:
        """After a successful run: commit the deferred effects, then rebuild the result."""
        run = Run(outs, a, k)
        effects.commit(self.effects, run)
        return self.output.unpack(run)


@dataclass
class Report:
    """What the trace found and assumed: for ``janus.explain``, the log and the policy."""

    guards: list[Guard]
    guard_source: str
    input_specs: list[tuple[Source, tf.TensorSpec]]
    input_names: list[str]
    heap_inputs: list[str]
    heap_specs: dict
    assertions: int
    assumptions: list[Assumption]
    relaxed: bool  # some dimension is symbolic
    constant_bytes: int = 0  # what its constants (captured tensors, Const ops) hold
    forests: list = field(default_factory=list)  # plans of recursions over trees (janus.lowering.trees.forest_plan)
    unbatched: dict = field(default_factory=dict)  # recursions inlined per structure instead, and why
    xla_rounding: list = field(default_factory=list)  # op types XLA would round differently
    late_failure: str | None = None  # why runs are undoable, for janus.explain
    iterators: list[str] = field(default_factory=list)  # the tf.data iterators it is fed, which its runs advance
    seconds: float = 0.0  # what the conversion took, traces and restarts included

    def value_shape(self, source: Source) -> tf.TensorShape | None:
        """The shape this graph assumed for the tensor read from ``source``."""
        spec = self.heap_specs.get(source)
        return spec.shape if spec is not None else None

    def tensor_dtype(self, source: Source) -> tf.DType | None:
        """The dtype this graph assumed for the tensor at ``source`` (argument or heap)."""
        spec = self.heap_specs.get(source) or dict(self.input_specs).get(source)
        return getattr(spec, "dtype", None)


@dataclass
class Counters:
    """How a cache entry fared: runs that committed, runs that aborted."""

    hits: int = 0
    failures: int = 0


@dataclass
class CacheEntry:
    """One specialized graph of a function: what runs, what it assumed, how it fared, and
    the XLA decision about it (``janus.driver.xla_choice``)."""

    graph: Graph
    report: Report
    counters: Counters = field(default_factory=Counters)
    xla: Any = None


def convert(fn: types.FunctionType) -> types.FunctionType:
    """The converted code of ``fn``, calling Janus's runtime (the generated code's ``_jn``).
    A function marked ``janus.do_not_convert`` is never converted: a trace that reaches it
    fails for good, and its caller runs eagerly (no graph breaks yet)."""
    if support.marked_do_not_convert(fn):
        raise ConversionError(f"calls {fn.__qualname__}, marked janus.do_not_convert", permanent=True,
                              code=Code.DO_NOT_CONVERT)
    return converted_function(fn, ops)


def input_leaves(args: tuple, kwargs: dict) -> list[tuple[Source, Any]]:
    """Sources of the eager tensors, composite tensors and numeric NumPy arrays among the arguments."""
    found: list[tuple[Source, Any]] = []
    for i, v in enumerate(args):
        _walk_inputs(v, Arg(i), 0, found)
    for name, v in kwargs.items():
        _walk_inputs(v, KwArg(name), 0, found)
    return found


def _walk_inputs(value: Any, source: Source, depth: int, found: list) -> None:
    """Adds the leaves of ``value`` to ``found``.  A module function, not a closure that calls
    itself: that closure was a cycle holding ``found``, so each call's input tensors waited
    for Python's next full collection."""
    if is_eager_tensor(value) or is_fed_array(value) or is_eager_composite(value):
        found.append((source, value))
    elif depth < 4 and (type(value) in (tuple, list) or isinstance(value, tuple) and hasattr(value, "_fields")) \
            and len(value) <= 256:
        for i, v in enumerate(value):
            _walk_inputs(v, source.item(i), depth + 1, found)
    elif depth < 4 and type(value) is dict and len(value) <= 256:
        for key, v in value.items():
            _walk_inputs(v, source.item(key), depth + 1, found)


# Attribute of an exception a trace raised from the user's code: the compiled check of the
# guards the trace had recorded when it raised (``Conversion.raises``).
RAISED_UNDER = "_janus_raised_under"


def _forbid_variables(next_creator, **kwargs):
    raise ConversionError("creates a tf.Variable (eager creates a new one at every call)", code=Code.CREATES_VARIABLE)


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
                plan: TracePlan, speculator: Speculator,
                on_collective: Callable[[Any], None] | None = None) -> CacheEntry:
    """One trace of ``converted`` on these arguments into a cache entry (raises on failure).

    Raises a :class:`janus.errors.Restart` when the trace must start again under another
    plan (``revise``); the driver's conversion loop retries.  NumPy array arguments are fed
    (:func:`fed_arrays`) unless the plan keeps them as values; a trace that reads fed
    arrays as NumPy raises :class:`~janus.errors.ArraysReadAsNumPy`, and one that reads an
    array of Python state so :class:`~janus.errors.StateArraysKept`: the next trace keeps
    them as values."""
    fed = fed_arrays(args, kwargs, plan)
    try:
        return _trace(python_fn, converted, args, kwargs, plan, speculator, on_collective, fed)
    except ReadAsNumPy as e:
        if fed and plan.arrays is Arrays.FED:
            raise ArraysReadAsNumPy(set(e.sources), fed) from None
        state = {s for s in e.sources if not s.is_argument} - plan.numpy_values
        if not state:
            raise
        raise StateArraysKept(state) from None


def fed_arrays(args: tuple, kwargs: dict, plan: TracePlan) -> frozenset[Source]:
    """The NumPy array arguments a trace under ``plan`` feeds as graph inputs."""
    if plan.arrays is Arrays.VALUES:
        return frozenset()
    return frozenset(s for s, v in input_leaves(args, kwargs) if is_fed_array(v) and s not in plan.numpy_values)


def _trace(python_fn: types.FunctionType, converted: Callable, args: tuple, kwargs: dict, plan: TracePlan,
           speculator: Speculator, on_collective: Callable[[Any], None] | None,
           arrays: frozenset[Source]) -> CacheEntry:
    """One trace of ``converted`` into a cache entry, feeding the NumPy arrays at ``arrays``."""
    specs, ctx = _context(args, kwargs, plan, speculator, on_collective, arrays)
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
            known_values.prefer_values(ctx.heap, speculator, arrays)
            ctx.recursion.finish()
            if ctx.seeds.used:
                draws = ctx.seeds.finish(ctx.checks.assert_that)
                ctx.effect(effects.ConsumeSeeds(draws, ctx.seeds.reservation), "random draws")
            packer = Packer(ctx)
            state["output"] = packer.pack(result)
            state["effects"] = effects.pack_effects(ctx, packer)
        _refuse_unrunnable(ctx)
        before = atomicity.gate_state_on_assertions(ctx.heap.outer_graph, ctx.checks)
        candidates = xla_marks.candidates(before, [op for op, _ in ctx.checks.assertions])
        state["xla_rounding"] = xla_marks.rounds_differently(candidates)
        if plan.xla:
            state["xla_ops"] = xla_marks.mark(candidates)
        completed = atomicity.completion(ctx.heap.outer_graph, ctx.checks.safe_ops, packer.tensors)
        return packer.tensors + ([completed] if completed is not None else [])

    traced = tf.function(graph_fn, autograph=False)
    with output.captured() as printed:
        try:
            concrete = traced.get_concrete_function(*(s for _, s in specs))
        except Exception as e:
            _failed(ctx, speculator, e, arrays, args, kwargs)
            raise
        finally:
            ctx.recursion.close()
    _check_traced(ctx, speculator, arrays, printed.getvalue(), concrete)
    return _entry(ctx, concrete, specs, state, plan, arrays, args, kwargs)


def _context(args: tuple, kwargs: dict, plan: TracePlan, speculator: Speculator,
             on_collective: Callable[[Any], None] | None, arrays: frozenset[Source]) -> tuple[list, TraceContext]:
    """The inputs' specs of a trace under ``plan`` (tensor arguments, fed arrays and fed
    numbers), and its context."""
    leaves = [(p, v) for p, v in input_leaves(args, kwargs)
              if is_eager_tensor(v) and not (p in speculator.tensor_values and known_values.may_specialize(v))
              or p in arrays]
    relaxed_shapes = plan.shapes_for(arrays)
    composite_specs = {p: s for p, s in relaxed_shapes.items() if isinstance(s, tf.TypeSpec)}
    relaxed_shapes = {p: s for p, s in relaxed_shapes.items() if p not in composite_specs}
    specs = [(p, tf.TensorSpec(_traced_shape(relaxed_shapes.get(p), v), tf.as_dtype(v.dtype))) for p, v in leaves]
    heap_shapes = {p: s for p, s in relaxed_shapes.items() if not p.is_argument}
    # Fed scalars among the arguments are inputs of the concrete function; fed scalars read
    # from Python state are captured at call time when (and only if) the trace reads them.
    specs += [(p, tf.TensorSpec([], DTYPES[kind])) for p, kind in plan.fed.items() if p.is_argument]
    ctx = TraceContext(relaxed=bool(relaxed_shapes), speculator=speculator, fed_scalars=plan.fed,
                       heap_shapes=heap_shapes, composite_specs=composite_specs, convert=convert,
                       on_collective=on_collective,
                       recursion=lambda c: TreeRecursion(c, plan.grouping, (args, kwargs), plan.refused))
    return specs, ctx


def _refuse_unrunnable(ctx: TraceContext) -> None:
    """Assertions a graph may not carry: under a multi-worker strategy, or beside a random
    dataset's iteration (an aborted run would have moved on what it cannot take back)."""
    if ctx.collective is not None and ctx.checks.assertions:
        raise ConversionError("a graph of a multi-worker step may not carry assertions: a worker whose run "
                              "aborted would re-run the step eagerly while the others went on",
                              code=Code.DISTRIBUTED)
    if ctx.heap.random_datasets and ctx.checks.assertions:
        raise ConversionError(f"iterates {ctx.heap.random_datasets[0]}, whose order or elements are random, in a "
                              "graph with assertions: a run that fails one would have advanced its random state",
                              code=Code.DISTRIBUTED)


def _failed(ctx: TraceContext, speculator: Speculator, error: Exception, arrays: frozenset[Source],
            args: tuple, kwargs: dict) -> None:
    """A trace failed with ``error``: raise what the next trace needs instead (arrays read as
    NumPy, tensors wanted by value, islands refused), or mark the user's exception with the
    guards it was raised under."""
    if ctx.heap.arrays_read:  # the reason, whatever library code made of it
        raise ReadAsNumPy(ctx.heap.arrays_read) from None
    known_values.specialize_wanted(ctx.heap, speculator, error, arrays)
    islands.refuse_misused(ctx.heap, speculator, error)
    if not isinstance(error, (ConversionError, Restart)):  # the user's exception: under which guards
        with contextlib.suppress(AttributeError, TypeError):
            setattr(error, RAISED_UNDER, guards.compile_guard(ctx.guard_set.guards, len(args), tuple(kwargs),
                                                               ctx.guard_set.namespace)[0])


def _check_traced(ctx: TraceContext, speculator: Speculator, arrays: frozenset[Source], printed: str,
                  concrete: Any) -> None:
    """A trace that succeeded may still not be used: library code caught the error of an
    array used as NumPy, read a fed array, printed, or drew with a stateful kernel."""
    if ctx.heap.islands_misused or ctx.heap.computed_arrays_read:  # library code caught the error of such a use
        error = ConversionError("library code used as NumPy an array the graph computes", code=Code.TENSOR_VALUE)
        islands.refuse_misused(ctx.heap, speculator, error)
        raise error
    if arrays or ctx.heap.state_arrays:
        _check_arrays_unread(ctx, arrays | ctx.heap.state_arrays)
    if printed:
        # The user's prints are deferred effects; this came from library code that prints
        # from Python: in a graph it would print once, at trace time, and never again.
        raise ConversionError(f"library code printed while tracing ({printed.strip()[:60]!r})", permanent=True,
                              code=Code.LIBRARY_EFFECT)
    _refuse_stateful_random(concrete)


def _entry(ctx: TraceContext, concrete: Any, specs: list, state: dict, plan: TracePlan, arrays: frozenset[Source],
           args: tuple, kwargs: dict) -> CacheEntry:
    """The cache entry of a finished trace: its graph (guard and inputs compiled) and report."""
    undo = _undo(ctx, concrete, args, kwargs) if ctx.checks.late_failures else None
    check, guard_source = guards.compile_guard(ctx.guard_set.guards, len(args), tuple(kwargs), ctx.guard_set.namespace)
    inputs = guards.compile_inputs([p for p, _ in specs], plan.fed, ctx.guard_set.namespace, arrays)
    graph = Graph(concrete=concrete, check=check, inputs=inputs, output=state["output"], effects=state["effects"],
                  namespace=ctx.guard_set.namespace, seeds=ctx.seeds.reservation if ctx.seeds.used else None,
                  undo=undo, xla_ops=state.get("xla_ops", 0), islands=_distinct(i.copy for i in ctx.heap.islands.values()))
    report = Report(
        guards=list(ctx.guard_set.guards), guard_source=guard_source, input_specs=specs,
        input_names=[ctx.heap.label_of(ctx.heap.arg_inputs.get(p)) or p.label for p, _ in specs],
        heap_inputs=[h.source.what for h in ctx.heap.heap_inputs.values()],
        heap_specs={p: h.spec for p, h in ctx.heap.heap_inputs.items()},
        assertions=len(ctx.checks.assertions), assumptions=list(ctx.checks.assumptions), relaxed=ctx.heap.relaxed,
        constant_bytes=_tf_private.captured_constant_bytes(concrete),
        forests=[f.plan for f in ctx.recursion.forests],
        unbatched={fn.__qualname__: why for fn, why in plan.refused.items()},
        xla_rounding=state.get("xla_rounding", []),
        late_failure=ctx.checks.late_failures[0] if ctx.checks.late_failures else None,
        iterators=[s.label for s in ctx.heap.fed_iterators])
    return CacheEntry(graph, report)


def _undo(ctx: TraceContext, concrete: Any, args: tuple, kwargs: dict) -> undoing.Undo:
    """What a run in which an op may fail after a write puts back if it fails: the variables
    it may write and the iterators it is fed (:class:`atomicity.FailureAfterWrite` if the
    graph holds other state, or an iterator of this call whose position cannot be saved)."""
    late = ctx.checks.late_failures[0]
    variables = undoing.undoable_variables(concrete)
    if variables is None:
        raise atomicity.FailureAfterWrite(f"{late}, and the graph holds state other than variables and iterators: "
                                          "a run it aborted could not be undone")
    getters = [ctx.getter(s) for s in ctx.heap.fed_iterators]
    try:
        for getter in getters:
            undoing.iterator_position(getter(args, kwargs))
    except undoing.Disturbed as e:
        raise atomicity.FailureAfterWrite(f"{late}; {e.reason}") from None
    return undoing.Undo(variables, (lambda a, k: [g(a, k) for g in getters]) if getters else None)


def _traced_shape(relaxed: tf.TensorShape | None, value: Any) -> Any:
    """The shape to trace an input with: the relaxed one, except a NumPy array's whose rank
    varied (the guard of a fed array fixes its rank)."""
    if relaxed is None or isinstance(value, (np.ndarray, np.generic)) and relaxed.rank != value.ndim:
        return value.shape
    return relaxed


def _check_arrays_unread(ctx: TraceContext, arrays: frozenset[Source]) -> None:
    """Fed arrays must not have been read as NumPy, not even where library code caught the
    error; and ``type()`` or ``id()`` of one would tell the stand-in from eager's array, so a
    trace that reads either builtin keeps every array a value."""
    if ctx.heap.arrays_read:
        raise ReadAsNumPy(ctx.heap.arrays_read)
    for guard in ctx.guard_set.guards:
        if guard.kind is GuardKind.ABSENT and guard.source is None and guard.expected in ("type", "id"):
            raise ReadAsNumPy({s: f"the code calls {guard.expected}()" for s in arrays})


def _refuse_stateful_random(concrete: Any) -> None:
    """A stateful random kernel in the graph (reached through library code Janus called as
    it is, or a shuffling dataset built inside the step) would draw other numbers than
    eager: the function runs eagerly instead."""
    graph_def = concrete.graph.as_graph_def()
    nodes = list(graph_def.node) + [n for f in graph_def.library.function for n in f.node_def]
    found = sorted({n.op for n in nodes if n.op in STATEFUL_RANDOM_OPS or n.op in DATASET_RANDOM_OPS})
    if found:
        raise ConversionError(f"library code draws random numbers with {', '.join(found)}, which a graph "
                              f"would draw differently from eager", permanent=True, code=Code.RANDOM)


def _distinct(copies: Any) -> list:
    """The islands' copies, each once (a gymnasium environment's tree registers every object
    it holds under one snapshot: janus.lowering.environments)."""
    return list({id(c): c for c in copies}.values())
