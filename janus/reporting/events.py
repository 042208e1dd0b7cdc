"""The per-call log behind the report page and the timeline: what each call of a Janus
function did (ran as a graph, converted, ran split at its graph breaks, ran eagerly and
why, re-ran eagerly after an aborted graph run) and how long it took.

Off by default: ``ACTIVE`` is None and a call pays one global read.  On (``JANUS_TRACE``,
``JANUS_REPORT_HTML``, ``janus.report``'s recording), each call is timed and classified from
the function's counters before and after it; the log is bounded (``config.LIMITS``: every
call of the first ``trace_full_calls``, then one in ``trace_sample_every``, at most
``trace_max_events`` kept, oldest dropped) while per-function totals stay exact.
"""
from __future__ import annotations

import logging
import threading
import time
import weakref
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any, Callable

from janus import config
from janus.reporting.codes import Code, code_of

log = logging.getLogger("janus")

# the kinds of a call, as the page and the timeline colour them
GRAPH, SPLIT, EAGER, CONVERT, RERUN, SEGMENT_WRITTEN = "graph", "split", "eager", "convert", "rerun", "segment-eager"


@dataclass(slots=True)
class Event:
    """One call of a Janus function (or of a graph segment: ``segment_of`` names its function)."""

    kind: str
    function: str
    file: str
    line: int
    end_line: int
    start: float  # time.perf_counter() at the call
    seconds: float
    thread: int
    depth: int  # 0: called by the program; 1 and more: a segment inside a split call
    index: int  # the function's own call number (1-based)
    detail: str = ""
    code: Code | None = None
    convert_seconds: float = 0.0  # of a converting call: the conversion's part
    segment_of: str | None = None


@dataclass(slots=True)
class _Before:
    """A function's counters before a call (what changed says what the call did)."""

    graph_calls: int
    conversions: int
    failures: int
    reasons: dict
    split: bool
    why: str | None


class EventLog:
    """A bounded log of calls; exact totals per function (``totals[name][kind]``: calls, seconds)."""

    def __init__(self, full_calls: int | None = None, sample_every: int | None = None,
                 max_events: int | None = None):
        """Bounds not given are ``config.LIMITS``' (``trace_full_calls`` ...), read now."""
        limits = config.LIMITS
        self.full_calls = limits.trace_full_calls if full_calls is None else full_calls
        self.sample_every = limits.trace_sample_every if sample_every is None else sample_every
        self.events: deque[Event] = deque(maxlen=limits.trace_max_events if max_events is None else max_events)
        self.calls = 0  # calls by the program (depth 0)
        self.unrecorded = 0  # of which not recorded (sampled out)
        self.totals: dict[str, Counter] = {}
        self.appended = 0  # events ever recorded (more than are kept when the bound dropped the oldest)
        self.started = time.perf_counter()
        self.wall_started = time.time()
        self.functions: "weakref.WeakSet[Any]" = weakref.WeakSet()  # the Janus functions called by the program
        self._local = threading.local()
        self._lock = threading.Lock()

    @property
    def dropped(self) -> int:
        """Events the bound pushed out (the oldest), beyond the sampled-out calls."""
        return self.appended - len(self.events)

    def call(self, jf: Any, run: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """``run(*args, **kwargs)``, one call of ``jf``, timed and classified."""
        local = self._local
        depth = getattr(local, "depth", 0)
        if depth == 0:
            with self._lock:
                self.calls += 1
                local.keep = self.calls <= self.full_calls or self.calls % self.sample_every == 0
                self.unrecorded += not local.keep
                if jf.segment_of is None:
                    self.functions.add(jf)
        before = _before(jf)
        local.depth = depth + 1
        start = time.perf_counter()
        try:
            return run(*args, **kwargs)
        finally:
            seconds = time.perf_counter() - start
            local.depth = depth
            self._record(jf, before, start, seconds, depth, local.keep)

    def segment_as_written(self, jf: Any, start: float, seconds: float) -> None:
        """A graph segment ran as written (its trial found eager faster, or it gave up)."""
        local = self._local
        if getattr(local, "keep", True):
            self._add(_event(jf, SEGMENT_WRITTEN, start, seconds, getattr(local, "depth", 0),
                             "runs as written (in the driver)", None))
        self._total(jf, SEGMENT_WRITTEN, seconds)

    def _record(self, jf: Any, before: _Before, start: float, seconds: float, depth: int, keep: bool) -> None:
        kind, detail, code = _classify(jf, before)
        self._total(jf, kind, seconds)
        if keep:
            event = _event(jf, kind, start, seconds, depth, detail, code)
            if kind == CONVERT and jf.last_entry is not None:
                event.convert_seconds = min(seconds, jf.last_entry.report.seconds)
            self._add(event)

    def _add(self, event: Event) -> None:
        with self._lock:
            self.appended += 1
            self.events.append(event)

    def _total(self, jf: Any, kind: str, seconds: float) -> None:
        with self._lock:
            totals = self.totals.setdefault(jf.__qualname__, Counter())
            totals[kind] += 1
            totals[kind + "_s"] += seconds


def _before(jf: Any) -> _Before:
    counts = jf.counts
    return _Before(counts["graph_calls"], counts["conversions"], counts["assertion_failures"], dict(jf.reasons),
                   jf.split is not None, jf.conversion.why)


def _classify(jf: Any, before: _Before) -> tuple[str, str, Code | None]:
    """What one call did, from the counters it changed: (kind, words, code)."""
    counts = jf.counts
    new = [r for r, n in jf.reasons.items() if n > before.reasons.get(r, 0)]
    code = code_of(new[-1]) if new else None
    if before.split or jf.split is not None:
        return SPLIT, "Python at its graph breaks, the rest in graph segments", code
    if counts["conversions"] > before.conversions:
        return CONVERT, f"converted after {before.why or 'its profiled calls'}", code
    if counts["assertion_failures"] > before.failures:
        return RERUN, str(new[-1]) if new else "the graph run aborted; re-ran eagerly", code
    if counts["graph_calls"] > before.graph_calls:
        return GRAPH, "", None
    if jf.policy.gave_up:
        return EAGER, f"runs eagerly: {jf.permanent_reason}", code_of(jf.permanent_reason)
    if new:
        return EAGER, str(new[-1]), code
    return EAGER, "profiled eager call (before a conversion)", None


_WHERE: "weakref.WeakKeyDictionary[Any, tuple[str, int, int]]" = weakref.WeakKeyDictionary()


def _where(fn: Any) -> tuple[str, int, int]:
    """(file, first line, last line) of ``fn``'s code, computed once per function."""
    found = _WHERE.get(fn)
    if found is None:
        co = getattr(fn, "__code__", None)
        first = co.co_firstlineno if co is not None else 0
        last = max((ln for _, _, ln in co.co_lines() if ln is not None), default=first) if co is not None else first
        found = (co.co_filename if co is not None else "?", first, last)
        try:
            _WHERE[fn] = found
        except TypeError:  # not weakly referenceable
            pass
    return found


def _event(jf: Any, kind: str, start: float, seconds: float, depth: int, detail: str, code: Code | None) -> Event:
    file, first, last = _where(jf.python_function)
    owner = jf.segment_of.__qualname__ if jf.segment_of is not None else None
    return Event(kind, jf.__qualname__, file, first, last, start, seconds, threading.get_ident(), depth,
                 jf.counts["calls"], detail, code, segment_of=owner)


# The log in use, or None (off: a Janus call reads this global and goes on).
ACTIVE: EventLog | None = None


def start() -> EventLog:
    """Record calls from now on (idempotent): the log in use."""
    global ACTIVE
    if ACTIVE is None:
        ACTIVE = EventLog()
    return ACTIVE


def stop() -> EventLog | None:
    """Stop recording: the log recorded so far."""
    global ACTIVE
    done, ACTIVE = ACTIVE, None
    return done
