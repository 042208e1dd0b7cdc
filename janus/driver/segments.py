"""A Janus function split at its graph breaks: the driver runs as Python, each segment is a
Janus function of its own.

:mod:`janus.convert.segments` plans the split and generates the code; this module
compiles it with the user's globals and closure cells, makes each segment a
:class:`~janus.driver.function.JanusFunction` (profiled, converted, guarded, committed
and falling back on its own, so an assumption failing in segment *k* re-runs segment *k*
eagerly while the segments before it stand, as in eager), and times where a call's time
goes: in segments, or in the Python between them.
"""
from __future__ import annotations

import ast
import os
import statistics
import threading
import time
import types
from typing import TYPE_CHECKING, Any, Callable

import gast

from janus.convert import parse, registry
from janus.convert.segments import RUNTIME, SEGMENTS, BreakSite, Segment, split
from janus.convert.pipeline import with_user_lines
from janus.convert.unparse import unparse
from janus.runtime import ops

if TYPE_CHECKING:
    from janus.driver.function import JanusFunction
    from janus.driver.options import Options

MAX_BREAKS = 8  # splits of a function and its segments, after which it runs eagerly as a whole
TRIAL = 5  # graph runs of a segment, then as many runs as written, to see which is faster


class SegmentCall:
    """The driver's handle on one segment: calls its Janus function, adding up the time.

    Never slower than eager: once the segment's graph has run ``TRIAL`` times, the next
    ``TRIAL`` calls run the segment as written (what eager runs, unprofiled), and if those
    were faster (a few small ops, a graph call under a recording tape), the segment runs
    as written from then on.  Both kinds of call are timed where the program calls them,
    under the same tape."""

    __slots__ = ("function", "segment", "seconds", "graph_times", "eager_times", "as_written", "_settled")

    def __init__(self, function: "JanusFunction", segment: Segment, settled: Callable[[int], None]):
        self.function = function
        self.segment = segment
        self._settled = settled  # told once the segment runs as written for good
        self.seconds = 0.0
        self.graph_times: list[float] = []
        self.eager_times: list[float] = []
        self.as_written = False  # the trial found eager faster

    def __call__(self, *args: Any) -> Any:
        jf = self.function
        start = time.perf_counter()
        if jf.split is not None and jf.split.settled:  # split in turn, every segment of it as written
            self._settled(self.segment.index)
        if self.as_written or jf.policy.gave_up or len(self.graph_times) >= TRIAL and len(self.eager_times) < TRIAL:
            if jf.policy.gave_up:
                self._settled(self.segment.index)
            jf.counts["calls"] += 1
            jf.counts["eager_calls"] += 1
            try:
                return jf.python_function(*args)
            finally:
                elapsed = time.perf_counter() - start
                self.seconds += elapsed
                if not (self.as_written or jf.policy.gave_up):
                    self._eager_ran(elapsed)
        graphs = jf.counts["graph_calls"]
        try:
            return jf(*args)
        finally:
            elapsed = time.perf_counter() - start
            self.seconds += elapsed
            if jf.counts["graph_calls"] > graphs and len(self.graph_times) < TRIAL:
                self.graph_times.append(elapsed)

    def _eager_ran(self, elapsed: float) -> None:
        self.eager_times.append(elapsed)
        if len(self.eager_times) == TRIAL:
            self.as_written = statistics.median(self.eager_times) < statistics.median(self.graph_times)
            self.function._note(self.describe())  # noqa: SLF001 - the segment's own reasons, for explain
            if self.as_written:
                self._settled(self.segment.index)

    def describe(self) -> str | None:
        """The trial's outcome, for ``janus.explain`` (None while it has not run)."""
        if len(self.eager_times) < TRIAL:
            return None
        verdict = "runs as written (in the driver)" if self.as_written else "stays a graph"
        return (f"{verdict}: eagerly {statistics.median(self.eager_times) * 1e3:.3f} ms a call, as a graph "
                f"{statistics.median(self.graph_times) * 1e3:.3f} ms")


class SplitFunction:
    """``fn`` run as Python around ``breaks``, its other statements as graph segments.

    A segment settled as written (its trial found eager faster, or it gave up) is put back
    in the driver as the user wrote it: the driver is generated again with its statements
    where it called the segment, so the decision costs nothing per call from then on."""

    def __init__(self, fn: types.FunctionType, breaks: dict[int, BreakSite], options: "Options",
                 make: Callable[[types.FunctionType, "Options"], "JanusFunction"]):
        self.breaks = dict(breaks)
        self._fn = fn
        self._node, self._filename, _, _ = parse.function_ast(fn)
        self.calls: list[SegmentCall] = []
        cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        cells[SEGMENTS] = types.CellType(self.calls)
        cells[RUNTIME] = types.CellType(ops)
        self._cells = cells
        self.inlined: frozenset[int] = frozenset()
        self._lock = threading.Lock()
        plan, codes = self._generate()
        for seg in plan.segments:
            code = codes[seg.eager_name]
            registry.record_definition(code, seg.convert_def, seg)
            lines = f"line {seg.lines[0]}" if seg.lines[0] == seg.lines[1] else f"lines {seg.lines[0]}-{seg.lines[1]}"
            self.calls.append(SegmentCall(make(self._function(code, f"{fn.__qualname__} [{lines}]"), options), seg,
                                          self.inline))
        self.runs = 0
        self.seconds = 0.0

    def _generate(self) -> tuple[Any, dict[str, types.CodeType]]:
        """The plan, with the segments in ``self.inlined`` as written; the driver built from it."""
        fn = self._fn
        with parse.AST_LOCK:  # templates parse
            plan = split(self._node, self.breaks, fn.__code__.co_freevars, fn.__qualname__,
                         registry.segment_of(fn.__code__), self.inlined)
        tree = ast.fix_missing_locations(gast.gast_to_ast(plan.module))
        module = parse.compile_tree(tree, self._filename)
        driver = tree.body[0].body[0]  # the factory's first statement: the driver, for janus.explain
        self.source = with_user_lines(unparse(driver).strip() + "\n", driver, os.path.basename(self._filename))
        factory = next(c for c in module.co_consts if isinstance(c, types.CodeType))
        codes = {c.co_name: c for c in factory.co_consts if isinstance(c, types.CodeType)}
        self.driver = self._function(codes[plan.driver_name], fn.__qualname__, fn.__defaults__)
        self.driver.__kwdefaults__ = fn.__kwdefaults__
        registry.record(self.driver.__code__, nested=False)  # Janus's glue: never profiled nor taken over
        self.python_lines = plan.python_lines  # the statements the driver runs as written
        return plan, codes

    def _function(self, code: types.CodeType, qualname: str, defaults: tuple | None = None) -> types.FunctionType:
        made = types.FunctionType(code, self._fn.__globals__, code.co_name, defaults,
                                  tuple(self._cells[v] for v in code.co_freevars))
        made.__qualname__ = qualname
        made.__module__ = self._fn.__module__
        return made

    def inline(self, index: int) -> None:
        """Run segment ``index`` as written in the driver from the next call on (a call
        under way goes on with the driver it started with, still calling the segment)."""
        if index in self.inlined:
            return
        with self._lock:
            if index not in self.inlined:
                self.inlined |= {index}
                self._generate()

    @property
    def settled(self) -> bool:
        """Every segment runs as written: the driver is the function as the user wrote it."""
        return len(self.inlined) == len(self.calls)

    def __call__(self, args: tuple, kwargs: dict) -> Any:
        self.runs += 1
        start = time.perf_counter()
        try:
            return self.driver(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - start

    @property
    def segments(self) -> list["JanusFunction"]:
        return [c.function for c in self.calls]

    def seconds_in_segments(self) -> float:
        return sum(c.seconds for c in self.calls)
