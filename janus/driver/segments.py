"""A Janus function split at its graph breaks: the driver runs as Python, each segment is a
Janus function of its own.

:mod:`janus.convert.splitting` plans the split and generates the code; this module
compiles it with the user's globals and closure cells, makes each segment a
:class:`~janus.driver.function.JanusFunction` (profiled, converted, guarded, committed
and falling back on its own, so an assumption failing in segment *k* re-runs segment *k*
eagerly while the segments before it stand, as in eager), and times where a call's time
goes: in segments, or in the Python between them.
"""
from __future__ import annotations

import ast
import os
import threading
import time
import types
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Protocol

import gast

from janus import _tf_private, config
from janus.convert import parse, registry
from janus.convert.splitting import RUNTIME, SEGMENTS, BreakSite, Segment, split
from janus.convert.pipeline import with_user_lines
from janus.convert.unparse import unparse
from janus.driver import trials
from janus.driver.trials import Side
from janus.driver.weak import weak_method
from janus.lowering import ops
from janus.reporting import events
from janus.reporting.codes import Code, derived, reason
from janus.trace import aborts

if TYPE_CHECKING:
    from janus.driver.counts import Counts
    from janus.driver.ledger import Ledger
    from janus.driver.options import Options



class Splittable(Protocol):
    """All a split and its segments use of a Janus function (``JanusFunction`` is one)."""

    options: "Options"
    split: "SplitFunction | None"
    breaks_made: int  # of the root of a split: its splits and its segments'
    counts: "Counts"
    ledger: "Ledger"

    @property
    def python_function(self) -> types.FunctionType: ...

    @property
    def segment_of(self) -> "Splittable | None": ...

    @property
    def gave_up(self) -> bool: ...

    def give_up(self, reason: str, advice: str) -> None: ...

    def note(self, reason: str) -> None: ...

    def __call__(self, *args: Any) -> Any: ...


def _trial() -> trials.Trial:
    """A trial of graphs (the candidate) against the code as written (the baseline)."""
    return trials.Trial(config.LIMITS.segment_trial_runs, config.LIMITS.segment_min_gain)


def graphs_faster(trial: trials.Trial) -> bool:
    """The verdict of a segment's decided trial: were the runs with its graph faster than
    those as written, by more than ``config.LIMITS.segment_min_gain`` of their time?  (Tests
    replace it to force a verdict without timing.)"""
    return trial.verdict() is trials.Verdict.KEEP


def whole_calls_faster_with_graphs(trial: trials.Trial) -> bool:
    """The verdict of the confirmation on whole calls (:class:`SplitFunction`); tests
    replace it as :func:`graphs_faster`."""
    return graphs_faster(trial)


class SegmentCall:
    """The driver's handle on one segment: calls its Janus function, adding up the time.

    Never slower than eager: once the segment's graph has run ``segment_trial_runs`` times
    (``config.LIMITS``), as many next calls run the segment as written (what eager runs,
    unprofiled), and if those were faster (a few small ops, a graph call under a recording
    tape), the segment runs as written from then on.  Both kinds of call are timed where the
    program calls them, under the same tape; :attr:`trial` holds the times."""

    __slots__ = ("function", "segment", "seconds", "trial", "as_written", "forced", "taped", "_settled")

    def __init__(self, function: Splittable, segment: Segment, settled: Callable[[int], None]):
        self.function = function
        self.segment = segment
        self._settled = settled  # told once the segment runs as written for good
        self.seconds = 0.0
        self.trial = _trial()  # graph runs (the candidate) against runs as written
        self.as_written = False  # the trial found eager faster
        self.forced = False  # run as written while whole calls are timed (SplitFunction's confirmation)
        self.taped = False  # its graph ran under a recording tape (its backward function runs later)

    @property
    def in_trial(self) -> bool:
        """Its graph has run, and the trial has not decided yet."""
        return self.trial.started and not self.trial.decided and not self.function.gave_up

    @property
    def keeps_graph(self) -> bool:
        return self.trial.decided and not self.as_written and not self.function.gave_up

    def settle_as_written(self) -> None:
        """Run as written from now on (whole calls were faster so)."""
        self.as_written, self.forced = True, False
        self.function.note(self.describe())
        self._settled(self.segment.index)

    def __call__(self, *args: Any) -> Any:
        jf = self.function
        start = time.perf_counter()
        if jf.split is not None and jf.split.settled:  # split in turn, every segment of it as written
            self._settled(self.segment.index)
        written = self.forced or self.as_written or jf.gave_up
        trial = not written and not self.trial.due(Side.CANDIDATE) and self.trial.due(Side.BASELINE)
        if written or trial:
            if jf.gave_up:
                self._settled(self.segment.index)
            jf.counts.add("calls")
            jf.counts.add("eager_calls")
            try:
                return jf.python_function(*args)
            finally:
                elapsed = time.perf_counter() - start
                self.seconds += elapsed
                jf.ledger.eager_ran(elapsed)  # a run as written: eager's own time, for the segment's ledger
                if events.ACTIVE is not None:
                    events.ACTIVE.segment_as_written(jf, start, elapsed)
                if trial:
                    self._eager_ran(elapsed)
        graphs = jf.counts["graph_calls"]
        if self.trial.due(Side.CANDIDATE) and not self.taped:
            self.taped = _tf_private.tape_recording()
        try:
            return jf(*args)
        finally:
            elapsed = time.perf_counter() - start
            self.seconds += elapsed
            if jf.counts["graph_calls"] > graphs:
                self.trial.record(Side.CANDIDATE, elapsed)

    def _eager_ran(self, elapsed: float) -> None:
        self.trial.record(Side.BASELINE, elapsed)
        if self.trial.decided:
            self.as_written = not graphs_faster(self.trial)
            self.function.note(self.describe())
            if self.as_written:
                self._settled(self.segment.index)

    def describe(self) -> "str | None":
        """The trial's outcome, for ``janus.explain`` (None while it has not run)."""
        if not self.trial.decided:
            return None
        if self.as_written and graphs_faster(self.trial):
            verdict = "runs as written (in the driver: whole calls were faster so)"
        else:
            verdict = "runs as written (in the driver)" if self.as_written else "stays a graph"
        graph, written = self.trial.medians()
        return reason(Code.SEGMENT_TRIAL, f"{verdict}: eagerly {written * 1e3:.3f} ms a call, as a graph "
                      f"{graph * 1e3:.3f} ms")


class SplitFunction:
    """``fn`` run as Python around ``breaks``, its other statements as graph segments.

    A segment settled as written (its trial found eager faster, or it gave up) is put back
    in the driver as the user wrote it: the driver is generated again with its statements
    where it called the segment, so the decision costs nothing per call from then on.

    A segment's trial times its own calls; what a graph call under a recording tape costs
    later (its backward function, run by ``tape.gradient``) falls outside them.  So once
    the trials have settled with segments kept as graphs that ran under a recording tape,
    the function the user called (the root of the split) confirms those on whole calls:
    ``segment_trial_runs`` calls with them as graphs, as many with them as written; if those were
    faster, they run as written.  A graph no tape recorded stays on its trial's verdict."""

    def __init__(self, fn: types.FunctionType, breaks: dict[int, BreakSite], options: "Options",
                 make: Callable[[types.FunctionType, "Options"], Splittable]):
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
        # the confirmation on whole calls (a root split only): the segments it is about, and
        # the calls timed with them as graphs, then as written
        self._confirming = registry.segment_of(fn.__code__) is None
        self._keepers: list[SegmentCall] = []
        self._whole = _trial()  # whole calls with the keepers as graphs, then as written
        self.confirmation: str | None = None
        plan, codes = self._generate()
        for seg in plan.segments:
            code = codes[seg.eager_name]
            registry.record_definition(code, seg.convert_def, seg)
            lines = f"line {seg.lines[0]}" if seg.lines[0] == seg.lines[1] else f"lines {seg.lines[0]}-{seg.lines[1]}"
            self.calls.append(SegmentCall(make(self._function(code, f"{fn.__qualname__} [{lines}]"), options), seg,
                                          weak_method(self.inline)))  # the call must not hold its split
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
        if self.settled and not self._confirming:
            # the driver is the user's statements as written: the user's own function runs
            # them (the regenerated driver measured about 1% slower than it)
            return self._fn(*args, **kwargs)
        self.runs += 1
        start = time.perf_counter()
        try:
            return self.driver(*args, **kwargs)
        finally:
            elapsed = time.perf_counter() - start
            self.seconds += elapsed
            if self._confirming:
                self._confirm(elapsed)

    def _all_calls(self) -> list[SegmentCall]:
        """Its segments' handles, those of segments split in turn included."""
        out = []
        for c in self.calls:
            out.append(c)
            if c.function.split is not None:
                out += c.function.split._all_calls()  # noqa: SLF001 - the same class
        return out

    def _confirm(self, elapsed: float) -> None:
        """One whole call of the confirmation (see the class): start it once no trial is under
        way and some segment keeps its graph; decide after ``2 * segment_trial_runs`` calls."""
        if self.settled:  # every segment runs as written: nothing left to confirm
            self._confirming = False
            return
        whole = self._whole
        if not self._keepers:
            calls = self._all_calls()
            if any(c.in_trial for c in calls):
                return
            # a graph never run under a tape costs what its trial timed: no need to confirm it
            self._keepers = [c for c in calls if c.keeps_graph and c.taped]
            return  # time from the next call on (this one may have run part of a trial)
        if whole.due(Side.CANDIDATE):
            whole.record(Side.CANDIDATE, elapsed)
            if not whole.due(Side.CANDIDATE):
                for c in self._keepers:
                    c.forced = True
            return
        whole.record(Side.BASELINE, elapsed)
        if not whole.decided:
            return
        self._confirming = False
        graphs_s, written_s = whole.medians()
        graphs_ms, written_ms = graphs_s * 1e3, written_s * 1e3
        keep = whole_calls_faster_with_graphs(whole)
        for c in self._keepers:
            if keep:
                c.forced = False
            else:
                c.settle_as_written()
        self.confirmation = (f"whole calls with segment{'s' if len(self._keepers) > 1 else ''} "
                             f"{', '.join(str(c.segment.index) for c in self._keepers)} as graphs {graphs_ms:.3f} ms, "
                             f"as written {written_ms:.3f} ms: {'kept as graphs' if keep else 'run as written'}")

    @property
    def segments(self) -> list[Splittable]:
        return [c.function for c in self.calls]

    def seconds_in_segments(self) -> float:
        return sum(c.seconds for c in self.calls)


def split_at(jf: Splittable, site: BreakSite,
             make: Callable[[types.FunctionType, "Options"], Splittable]) -> SplitFunction | None:
    """``jf`` split at ``site``, a statement that cannot run in a graph: from this call on it
    runs in Python and the rest of the function in graph segments (made by ``make``; a
    segment splits again at a break of its own, and ``config.LIMITS.max_breaks`` bounds the breaks of a
    function and its segments).  None: ``jf`` gave up instead, and runs eagerly."""
    where = f"{os.path.basename(jf.python_function.__code__.co_filename)}:{site.line}"
    root = jf
    while root.segment_of is not None:
        root = root.segment_of
    root.breaks_made += 1
    if root.breaks_made > config.LIMITS.max_breaks:
        jf.give_up(reason(Code.TOO_MANY_BREAKS, f"more than {config.LIMITS.max_breaks} graph breaks "
                          f"(the last at {where}: {site.reason})"),
                          "See janus.explain(f).")
        return None
    try:
        # the function was profiled already: its segments convert at their second call
        options = replace(jf.options, given_profile_calls=min(1, jf.options.profile_calls))
        split = SplitFunction(jf.python_function, {site.line: site}, options, make)
    except Exception as e:  # noqa: BLE001 - cannot split: the function runs eagerly, as before breaks
        jf.note(reason(Code.UNSPLITTABLE, f"graph break at {where} ({site.reason}) but {aborts.summary(e)}"))
        jf.give_up(reason(Code.UNSPLITTABLE, f"{site.reason} (at {where}); {aborts.summary(e)}"),
                          "See janus.explain(f).")
        return None
    jf.note(derived(site.reason, f"graph break at {where}: {site.reason}"))
    return split
