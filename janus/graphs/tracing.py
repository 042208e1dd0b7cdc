"""Trace converted code into a TensorFlow concrete function: one cache entry.

The converted function is traced by ``tf.function(autograph=False)`` — a tracer of
code Janus already converted, not a converter.  Tensor arguments become the
function's inputs (with relaxed shapes where the caller asked), and so do numeric NumPy
array arguments while only TensorFlow reads them (``janus.trace.arrays``); everything
else the trace reads is guarded through the trace context.  Once traced, the function's
graph is made all-or-nothing (``janus.trace.atomicity``) and vetted
(``janus.graphs.vetting``); the entry bundles the concrete function with its compiled
guard, input gathering, output recipe and deferred effects.
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
from janus.graphs import vetting
from janus.graphs.entry import CacheEntry, Graph, Report
from janus.graphs.inputs import fed_arrays, input_leaves
from janus.graphs.plan import Arrays, TracePlan
from janus.commit import effects
from janus.commit import undo as undoing
from janus.commit.packing import Packer, Recipe
from janus.convert import support
from janus.convert.pipeline import converted_function
from janus.errors import ArraysReadAsNumPy, ConversionError, Restart, StateArraysKept
from janus.lowering import islands, ops
from janus.lowering.trees.recursion import TreeRecursion
from janus.reporting.codes import Code
from janus.trace import atomicity, guards, known_values, library_state, output, xla as xla_marks
from janus.trace.arrays import ReadAsNumPy
from janus.trace.context import TraceContext
from janus.trace.scalars import fed_spec, is_eager_tensor
from janus.trace.sources import Arg, Default, KwArg, Source

if TYPE_CHECKING:
    from janus.trace.speculation import Speculator


def convert(fn: types.FunctionType) -> types.FunctionType:
    """The converted code of ``fn``, calling the lowering (the generated code's ``_jn``: ``janus.lowering.ops``).
    A function marked ``janus.do_not_convert`` is never converted: a trace that reaches it
    fails for good, and its caller runs eagerly (no graph breaks yet)."""
    if support.marked_do_not_convert(fn):
        raise ConversionError(f"calls {fn.__qualname__}, marked janus.do_not_convert", permanent=True,
                              code=Code.DO_NOT_CONVERT)
    return converted_function(fn, ops)


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


@dataclass
class _Traced:
    """What the traced function hands out of ``tf.function``'s trace besides its tensors: how
    its outputs and effects are rebuilt, and what XLA may compile of it."""

    output: Recipe | None = None
    effects: list = field(default_factory=list)
    xla_rounding: list = field(default_factory=list)
    xla_ops: int = 0


def _trace(python_fn: types.FunctionType, converted: Callable, args: tuple, kwargs: dict, plan: TracePlan,
           speculator: Speculator, on_collective: Callable[[Any], None] | None,
           arrays: frozenset[Source]) -> CacheEntry:
    """One trace of ``converted`` into a cache entry, feeding the NumPy arrays at ``arrays``."""
    specs, ctx = _context(args, kwargs, plan, speculator, on_collective, arrays)
    names = _param_names(python_fn)
    traced_out = _Traced()

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
            traced_out.output = packer.pack(result)
            traced_out.effects = effects.pack_effects(ctx, packer)
        vetting.refuse_unrunnable(ctx)
        before = atomicity.gate_state_on_assertions(ctx.heap.outer_graph, ctx.checks)
        candidates = xla_marks.candidates(before, [op for op, _ in ctx.checks.assertions])
        traced_out.xla_rounding = xla_marks.rounds_differently(candidates)
        if plan.xla:
            traced_out.xla_ops = xla_marks.mark(candidates)
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
    vetting.check_traced(ctx, speculator, arrays, printed.getvalue(), concrete)
    library_state.guard(ctx.guard_set, ctx.heap.framework_objects)
    return _entry(ctx, concrete, specs, traced_out, plan, arrays, args, kwargs)


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
    specs += [(p, fed_spec(kind)) for p, kind in plan.fed.items() if p.is_argument]
    ctx = TraceContext(relaxed=bool(relaxed_shapes), speculator=speculator, fed_scalars=plan.fed,
                       heap_shapes=heap_shapes, composite_specs=composite_specs, convert=convert,
                       on_collective=on_collective,
                       recursion=lambda c: TreeRecursion(c, plan.grouping, (args, kwargs), plan.refused))
    return specs, ctx


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


def _entry(ctx: TraceContext, concrete: Any, specs: list, traced: _Traced, plan: TracePlan, arrays: frozenset[Source],
           args: tuple, kwargs: dict) -> CacheEntry:
    """The cache entry of a finished trace: its graph (guard and inputs compiled) and report."""
    undo = _undo(ctx, concrete, args, kwargs) if ctx.checks.late_failures else None
    check, guard_source = guards.compile_guard(ctx.guard_set.guards, len(args), tuple(kwargs), ctx.guard_set.namespace)
    inputs = guards.compile_inputs([p for p, _ in specs], plan.fed, ctx.guard_set.namespace, arrays)
    graph = Graph(concrete=concrete, check=check, inputs=inputs, output=traced.output, effects=traced.effects,
                  namespace=ctx.guard_set.namespace, seeds=ctx.seeds.reservation if ctx.seeds.used else None,
                  undo=undo, xla_ops=traced.xla_ops, islands=_distinct(i.copy for i in ctx.heap.islands.values()))
    report = Report(
        guards=list(ctx.guard_set.guards), guard_source=guard_source, input_specs=specs,
        input_names=[ctx.heap.label_of(ctx.heap.arg_inputs.get(p)) or p.label for p, _ in specs],
        heap_inputs=[h.source.what for h in ctx.heap.heap_inputs.values()],
        heap_specs={p: h.spec for p, h in ctx.heap.heap_inputs.items()},
        assertions=len(ctx.checks.assertions), assumptions=list(ctx.checks.assumptions), relaxed=ctx.heap.relaxed,
        constant_bytes=_tf_private.captured_constant_bytes(concrete),
        forests=[f.plan for f in ctx.recursion.forests],
        unbatched={fn.__qualname__: why for fn, why in plan.refused.items()},
        xla_rounding=traced.xla_rounding,
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


def _distinct(copies: Any) -> list:
    """The islands' copies, each once (a gymnasium environment's tree registers every object
    it holds under one snapshot: janus.lowering.environments)."""
    return list({id(c): c for c in copies}.values())
