"""What a trace must not hand the driver, although it succeeded: assertions where an aborted
run could not be taken back, arrays read as NumPy, library code that printed or drew with a
stateful kernel."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from janus.errors import ConversionError
from janus.lowering import islands
from janus.reporting.codes import Code
from janus.trace.arrays import ReadAsNumPy
from janus.trace.context import TraceContext
from janus.trace.guards import GuardKind
from janus.trace.seeds import DATASET_RANDOM_OPS, STATEFUL_RANDOM_OPS
from janus.trace.sources import Source

if TYPE_CHECKING:
    from janus.trace.speculation import Speculator


def refuse_unrunnable(ctx: TraceContext) -> None:
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


def check_traced(ctx: TraceContext, speculator: Speculator, arrays: frozenset[Source], printed: str,
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
