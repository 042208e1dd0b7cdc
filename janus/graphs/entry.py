"""A cache entry: one specialized graph of a function, as the driver keeps and runs it.

:class:`Graph` is what runs (the concrete function, its compiled guard and input gathering,
the output recipe, the deferred effects, what a failed run puts back); :class:`Report` is
what the trace found and assumed (for ``janus.explain``, the log and the policy);
:class:`Counters` how it fared.  ``janus.graphs.tracing`` makes entries.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import tensorflow as tf

from janus import _tf_private
from janus.commit import effects, island_copies
from janus.commit import undo as undoing
from janus.commit.packing import Recipe, Run
from janus.trace.active import CALL
from janus.trace.guards import Guard
from janus.trace.seeds import SeedReservation
from janus.trace.sources import Source

if TYPE_CHECKING:
    from janus.trace.speculation import Assumption


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
