"""The trace context: what one trace of converted code depended on and produced.

It is composed of five parts, all made by its constructor (with the bounds that keep a
trace finite, ``janus.trace.bounds``): the
:class:`~janus.trace.guards.GuardBuilder` (guards and the namespace their code uses),
the :class:`~janus.trace.heap.HeapModel` (what was read and how converted code sees it),
the :class:`Checks` (assertions and the assumptions they check), the :class:`EffectLog`
(deferred effects) and the :class:`~janus.trace.seeds.SeedStream` (the seeds of random
draws); ``checkpoint``/``restore`` let each side of a tensor conditional be traced from
the same state.
"""
from __future__ import annotations

import types
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable

import tensorflow as tf

from janus.errors import ConversionError
from janus.reporting.codes import Code
from janus.trace import active
from janus.trace.bounds import TraceBounds
from janus.trace.guards import GuardBuilder
from janus.trace.heap import HeapModel
from janus.trace.seeds import SeedStream
from janus.trace.sources import Source
from janus.trace.speculation import AssumptionKind, Speculator
from janus.trace.tensor_array_state import ArrayModel, TensorArrayMade


@dataclass
class Checks:
    """The assertions a graph run must pass, the assumptions they check, and the TF
    constructs (conds, loops) whose bodies change state or cannot fail (for all-or-nothing
    ordering, ``janus.trace.atomicity``)."""

    speculator: Any = None
    assertions: list[tuple[Any, Any]] = field(default_factory=list)
    assumptions: list[Any] = field(default_factory=list)
    writer_constructs: set = field(default_factory=set)
    # ops that cannot fail as eager's would: conds/loops whose bodies cannot fail, and ops a
    # library builds that eager never runs (tf.vectorized_map's template of the loop body)
    safe_ops: set = field(default_factory=set)
    late_failures: list = field(default_factory=list)  # ops that may fail after a state update, described

    def assume(self, site: Any, kind: AssumptionKind, value: Any) -> Any:
        """Register that this trace assumes ``value`` at ``site`` (see ``janus.trace.speculation``)."""
        assumption = self.speculator.assumption(site, kind, value)
        if assumption not in self.assumptions:
            self.assumptions.append(assumption)
        return assumption

    def assert_that(self, pred: tf.Tensor, message: str, assumption: Any = None) -> Any:
        """An assertion op the graph run must pass (returned); its failure makes Janus re-run eagerly.

        ``assumption`` is the speculation it checks (None for the user's own ``assert``).
        """
        op = tf.debugging.Assert(pred, [tf.constant(message)])
        if op is not None:
            self.assertions.append((op, [assumption]))
        return op

    def nested_assertions(self, start: int, outer_op: Callable[[], Any]) -> None:
        """Assertions created inside a cond/loop body since ``start`` are checked by ``outer_op()``."""
        if len(self.assertions) > start:
            inner = self.assertions[start:]
            del self.assertions[start:]
            self.assertions.append((outer_op(), [a for _, group in inner for a in group]))

    def check(self, kind: AssumptionKind, site: Any, value: Any, where: str = "", detail: str = "") -> Any:
        """Register the assumption of a run-time check (see ``janus.trace.speculation``) that
        an assertion of this trace makes; ConversionError when it failed before."""
        speculator = self.speculator if self.speculator is not None else _no_profile()
        assumption = speculator.check(kind, site, value, where, detail)
        if assumption is None:
            raise ConversionError(f"{kind.failed_before} (this failed in a graph before)", code=Code.FAILED_BEFORE)
        if assumption not in self.assumptions:
            self.assumptions.append(assumption)
        return assumption



@dataclass
class EffectLog:
    """Python side effects recorded for the commit, in program order; while a tensor
    construct is traced (``dynamic_depth``), its effects go to its sink."""

    effects: list[Any] = field(default_factory=list)
    sinks: list = field(default_factory=list)
    dynamic_depth: int = 0
    # one token per tensor-dependent body being traced, innermost last; and the lists a
    # body made for itself (janus.lowering.graph_lists.own_lists), by id: (list, its body's token)
    bodies: list = field(default_factory=list)
    own_lists: dict[int, tuple[Any, Any]] = field(default_factory=dict)

    def own(self, obj: Any) -> None:
        """``obj`` is the innermost body's own (a copy it made, a list a conditional in it
        joined): it may change it."""
        self.own_lists[id(obj)] = (obj, self.bodies[-1] if self.bodies else None)

    def may_change(self, obj: Any) -> bool:
        """Whether the code being traced may change ``obj`` in place: outside tensor-dependent
        bodies, or when the innermost body made it (a body traced twice changes its own copy)."""
        if not self.dynamic_depth:
            return True
        entry = self.own_lists.get(id(obj))
        return entry is not None and entry[0] is obj and entry[1] is self.bodies[-1]

    def record(self, effect: Any, where: str) -> None:
        """Record a Python side effect (a ``janus.commit.effects.Effect``) to commit after
        the graph ran successfully.

        Inside a ``tf.cond`` side it goes to that side's list (``janus.lowering.branch_effects``);
        a tensor loop's sink takes only writes of state, committed once after the loop
        (``janus.lowering.branch_stores``); inside a graph a library builds around the user's
        function (no sink) it cannot be replayed.
        """
        if self.dynamic_depth:
            if not self.sinks or self.sinks[-1] is None:
                raise ConversionError(f"{where} inside a graph a library builds around the user's function",
                                      code=Code.LIBRARY_EFFECT)
            self.sinks[-1].append(effect)
            return
        self.effects.append(effect)


class TraceContext:
    """Everything one trace depends on and produces besides its outputs, in five parts:
    the guard set, the heap model (reads), the checks (assertions, assumptions), the
    effect log and the seed stream (random draws).  Converted code reaches it through
    :func:`janus.trace.active.current`.

    ``relaxed``, ``fed_scalars``, ``heap_shapes`` and ``composite_specs`` say what the
    trace specializes on (``janus.driver.policy``); ``convert`` gives a user function's
    converted code (the lowering's inliner); ``on_collective`` is told when a multi-worker
    strategy is used; ``recursion`` makes the trace's recursion state from the context
    (``janus.lowering.trees.recursion.TreeRecursion``; the trace stage cannot name it).
    """

    def __init__(self, *, relaxed: bool = False, speculator: Speculator | None = None,
                 fed_scalars: dict[Source, type] | None = None,
                 heap_shapes: dict[Source, tf.TensorShape] | None = None,
                 composite_specs: dict[Source, tf.TypeSpec] | None = None,
                 convert: Callable[[types.FunctionType], Callable] | None = None,
                 on_collective: Callable[[tf.distribute.Strategy], None] | None = None,
                 recursion: Callable[[TraceContext], Any] | None = None):
        self.guard_set = GuardBuilder()
        self.heap = HeapModel(self.guard_set, relaxed=relaxed, fed_scalars=dict(fed_scalars or {}),
                              heap_shapes=dict(heap_shapes or {}), composite_specs=dict(composite_specs or {}),
                              numpy_values=speculator.numpy_values if speculator is not None else None,
                              tensor_values=set(speculator.tensor_values) if speculator is not None else set())
        self.checks = Checks(speculator)
        self.log = EffectLog()
        self.seeds = SeedStream()
        self.bounds = TraceBounds(self.heap)  # inlining depth, recursions on fed numbers, ops
        self.convert = convert
        self.on_collective = on_collective
        self.collective: tf.distribute.Strategy | None = None  # the multi-worker strategy the trace calls
        self.recursion: Any = recursion(self) if recursion is not None else None
        self.tapes: weakref.WeakSet = weakref.WeakSet()  # the tf.GradientTapes the trace entered
        self.tensor_arrays: list[TensorArrayMade] = []  # the settings of those it constructed
        self.arrays = ArrayModel()  # the eager TensorArray each of the trace's stands for

    def uses_collective(self, strategy: tf.distribute.Strategy) -> None:
        """The trace calls a multi-worker ``tf.distribute`` strategy: its graphs run only when
        every worker runs its own (``janus.driver.function``), and may carry no assertion."""
        self.collective = strategy
        if self.on_collective is not None:
            self.on_collective(strategy)

    # -- activation -------------------------------------------------------------
    def __enter__(self) -> TraceContext:
        self._prev = active.swap(self)
        return self

    def __exit__(self, *exc) -> None:
        active.swap(self._prev)

    # -- the operations converted code needs most, by part ----------------------
    def read(self, value: Any, source: Source) -> Any:
        return self.heap.read(value, source)

    def source_of(self, obj: Any) -> Source | None:
        return self.heap.source_of(obj)

    def const(self, obj: Any, hint: str = "o") -> str:
        return self.guard_set.const(obj, hint)

    def getter(self, source: Source) -> Callable[[tuple, dict], Any]:
        return self.guard_set.getter(source)

    def effect(self, effect: Any, where: str) -> None:
        self.log.record(effect, where)

    def assert_that(self, pred: tf.Tensor, message: str, assumption: Any = None) -> Any:
        return self.checks.assert_that(pred, message, assumption)

    # -- branches: checkpoint / restore -----------------------------------------
    def checkpoint(self) -> Checkpoint:
        """What tracing one side of a tensor conditional may change in this context.

        Guards, heap inputs and namespace constants a side records are kept whatever
        happens (they hold for both sides); everything else is captured here, so the
        other side can be traced from the same state (:meth:`restore`).  A side's writes
        of Python state are undone when its trace ends (``janus.lowering.branch_stores``);
        the overlay is captured anyway, so a side never sees another's writes.
        """
        return Checkpoint(self.heap.snapshot(), len(self.checks.assertions), len(self.checks.assumptions),
                          len(self.log.sinks), self.seeds.position)

    def restore(self, cp: Checkpoint) -> None:
        """Return to the state of ``cp`` (which stays usable) that a side's code can observe:
        what was read (and how it was named), the overlay, deferred mutations.  Assertions
        and assumptions made since stay (they belong to the side's graph); so do guards and
        heap inputs."""
        self.heap.restore(cp.heap)
        del self.log.sinks[cp.effect_sinks:]
        del self.log.bodies[cp.effect_sinks:]
        self.seeds.position = cp.seed_position

    def rollback(self, cp: Checkpoint) -> None:
        """:meth:`restore`, and also forget the assertions and assumptions made since ``cp``:
        a side that is thrown away (it raised while tracing) checks and assumes nothing."""
        self.restore(cp)
        del self.checks.assertions[cp.assertions:]
        del self.checks.assumptions[cp.assumptions:]

    def merge(self, other: Checkpoint) -> None:
        """After both sides of a conditional: also know what the other side (state ``other``)
        read, and that containers it changed by a deferred mutation must not be read."""
        self.heap.merge(other.heap)


@dataclass(frozen=True)
class Checkpoint:
    """A snapshot of a :class:`TraceContext` (see :meth:`TraceContext.checkpoint`)."""

    heap: tuple
    assertions: int
    assumptions: int
    effect_sinks: int
    seed_position: int | tf.Tensor


def _no_profile() -> Speculator:
    return Speculator(None)
