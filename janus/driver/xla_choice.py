"""XLA chosen by measured cost: one cache entry's trial of its XLA variant.

With ``jit_compile=None`` (the default) a new graph runs plain first.  Once warm,
``config.LIMITS.xla_plain_runs`` runs are timed; if they take long enough for XLA to matter,
Janus traces the same call again with XLA clusters (``janus.trace.xla``).  Then, on each of the next calls, both
graphs run on the same inputs and the same state: the plain graph first, then — the
variables it wrote put back as they were — the XLA graph.  Each run is timed, and
outputs and variables after the two runs are compared bit for bit.  The XLA graph takes
the plain one's place only if, over ``config.LIMITS.xla_trial_runs`` such calls (after one
whose XLA run compiled; a :class:`~janus.driver.trials.Trial`), it gave the same bits every
time and its median beat the plain median by ``config.LIMITS.xla_min_gain``.  Such calls are
made only while no other Python thread runs (one could write a variable between the undoing
and the XLA run).  A call that disagreed keeps the plain run's results.

So by default XLA is kept only where it is faster *and* computes eager's numbers: eager
is the oracle, and XLA's fused kernels usually round differently (``tanh``, ``exp``,
reductions).  ``jit_compile=True`` accepts the round-off for speed.
"""
from __future__ import annotations

import contextlib
import enum
import statistics
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterator

import numpy as np
import tensorflow as tf

from janus import config
from janus.driver import trials
from janus.driver.trials import Side, Verdict
from janus.commit import undo as undoing
from janus.trace.aborts import summary

if TYPE_CHECKING:
    from janus.driver.cache import GraphCache
    from janus.graphs.entry import CacheEntry


class XlaMode(enum.Enum):
    """How XLA is chosen for a graph: by ``jit_compile``, or measured."""

    ON = "on"  # jit_compile=True
    OFF = "off"  # jit_compile=False
    AUTO = "auto"  # jit_compile=None: a trial decides


@dataclass
class XlaDecision:
    """What Janus decided about XLA for one graph, and the timings behind it."""

    mode: XlaMode
    chosen: bool | None = None  # None while the trial runs
    why: str = ""
    plain_ms: list[float] = field(default_factory=list)  # runs of the plain graph alone (is XLA worth trying?)
    # (ms) XLA's runs (the candidate) against the plain graph's on the same calls
    trial: trials.Trial = field(default_factory=lambda: trials.Trial(config.LIMITS.xla_trial_runs,
                                                                     config.LIMITS.xla_min_gain))
    variant: CacheEntry | None = None  # the XLA entry under trial
    warm: bool = False  # the variant's first (compiling) run is done
    rebuild: Callable[[tuple, dict], CacheEntry] | None = None  # traces a call again with XLA clusters

    @property
    def done(self) -> bool:
        return self.chosen is not None

    def describe(self, xla_ops: int) -> str:
        if self.mode is XlaMode.OFF:
            return "off (jit_compile=False)"
        if self.mode is XlaMode.ON:
            return (f"on (jit_compile=True): {xla_ops} ops in XLA clusters" if xla_ops
                    else "on (jit_compile=True), but " + self.why)
        timing, paired = "", len(self.trial.candidate)
        if paired:
            xla, plain = self.trial.medians()
            timing = f": {xla:.3f} ms with XLA, {plain:.3f} ms without (medians over {paired} calls running both)"
        if self.chosen is None:
            return f"measuring ({len(self.plain_ms)} plain runs, {paired} calls running both timed)"
        if self.chosen:
            return f"chosen by measurement{timing}, same results bit for bit; {xla_ops} ops in XLA clusters"
        return f"not chosen: {self.why}{timing}"


def decide(mode: bool | None, entry: CacheEntry, collective: tf.distribute.Strategy | None,
           rebuild: Callable[[tuple, dict], CacheEntry]) -> XlaDecision:
    """The XLA decision of a new graph built in ``mode`` (``jit_compile``): made at once,
    or a trial to come (``rebuild`` traces a call again with XLA clusters)."""
    if mode is True:
        decision = XlaDecision(XlaMode.ON, chosen=True)
        if not entry.graph.xla_ops:
            decision.why = "no op of its graph qualifies (janus.trace.xla)"
        return decision
    if mode is False:
        return XlaDecision(XlaMode.OFF, chosen=False)
    decision = XlaDecision(XlaMode.AUTO, rebuild=rebuild)
    if collective is not None:
        give_up(decision, "a multi-worker step: every worker must run the same graphs")
    elif entry.report.iterators:
        give_up(decision, f"not tried: its runs advance {entry.report.iterators[0]}, a tf.data iterator it is fed "
                          "(a trial runs both graphs on the same call)")
    elif entry.graph.islands:
        give_up(decision, f"not tried: its Python islands change {entry.graph.islands[0].label} (a trial runs both "
                          "graphs on the same call)")
    elif entry.report.xla_rounding:
        give_up(decision, f"not tried: XLA rounds {', '.join(entry.report.xla_rounding[:4])} differently "
                          f"from TensorFlow's kernels (eager's numbers come first)")
    return decision


class XlaTrials:
    """The XLA trials of one function's graphs.  One call at a time runs a trial (other
    threads' calls meanwhile run the graph plainly); a trial call runs the plain graph
    timed, or, once the variant exists, both graphs (:func:`run_both`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def turn(self, entry: CacheEntry, args: tuple, kwargs: dict) -> Iterator[XlaDecision | None]:
        """This call's part in ``entry``'s trial: its decision, or None (no trial now)."""
        decision = entry.xla
        if decision is None or decision.done or not self._lock.acquire(blocking=False):
            yield None
            return
        try:
            if wants_variant(decision):
                _build_variant(entry, decision, args, kwargs)
            yield decision
        finally:
            self._lock.release()

    @staticmethod
    def execute(entry: CacheEntry, decision: XlaDecision, args: tuple, kwargs: dict) -> tuple[list, CacheEntry]:
        """Run a trial call: the outputs to commit and the entry they came from.  Raises if
        the plain run aborts (then nothing changed)."""
        if decision.variant is not None and undoing.no_other_threads():
            return run_both(entry, decision, args, kwargs, time.perf_counter)
        if not entry.counters.hits:  # the first run instantiates the graph: not timed
            return entry.graph.execute(args, kwargs), entry
        outputs, seconds = _timed(entry, args, kwargs, time.perf_counter)
        decision.plain_ms.append(seconds * 1e3)
        return outputs, entry

    @staticmethod
    def adopt(entries: GraphCache, entry: CacheEntry, decision: XlaDecision) -> None:
        """The XLA variant won: it takes the plain graph's place in the cache ``entries``."""
        variant, decision.variant = decision.variant, None
        variant.xla = decision
        variant.counters.hits, variant.counters.failures = entry.counters.hits, \
            entry.counters.failures + variant.counters.failures
        entries.replace(entry, variant)


def _build_variant(entry: CacheEntry, decision: XlaDecision, args: tuple, kwargs: dict) -> None:
    """Trace the call once more with XLA clusters: the variant under trial."""
    try:
        variant = decision.rebuild(args, kwargs)
    except Exception as e:  # noqa: BLE001 - the plain graph stays
        give_up(decision, f"tracing it with XLA failed ({summary(e)})")
        return
    if variant.report.guard_source != entry.report.guard_source:
        give_up(decision, "tracing it again specialized on other values")
    elif not variant.graph.xla_ops:
        give_up(decision, "no op of its graph qualifies for XLA (janus.trace.xla)")
    else:
        decision.variant = variant


def give_up(decision: XlaDecision, why: str) -> None:
    """End the trial keeping the plain graph (the XLA variant is dropped)."""
    decision.chosen = False
    decision.why = why
    decision.variant = None


def wants_variant(decision: XlaDecision) -> bool:
    """Are the plain runs timed, and long enough to try XLA?  (Ends the trial if too short.)"""
    if decision.done or decision.variant is not None or len(decision.plain_ms) < config.LIMITS.xla_plain_runs:
        return False
    median = statistics.median(decision.plain_ms)
    if median < config.LIMITS.xla_min_run_ms:
        give_up(decision, f"a run takes {median:.3f} ms, under {config.LIMITS.xla_min_run_ms} ms: "
                          "too little for XLA to gain")
        return False
    return True


def run_both(plain: CacheEntry, decision: XlaDecision, args: tuple, kwargs: dict,
             clock: Callable[[], float]) -> tuple[list, CacheEntry]:
    """Run the plain graph, undo its variable writes, run the XLA graph on the same inputs
    and state; time both and compare their bits.  Returns the outputs to commit and the
    entry they came from (the plain one unless XLA agreed).  Raises if the plain run
    aborts (then nothing changed)."""
    variant = decision.variant
    variables = undoing.undoable_variables(plain.graph.concrete)
    if variables is None:
        give_up(decision, "its graph holds state other than variables: a run cannot be undone to compare")
        return _timed(plain, args, kwargs, clock)[0], plain
    before = [v.numpy().copy() for v in variables]
    plain_out, plain_s = _timed(plain, args, kwargs, clock)
    after = [v.numpy().copy() for v in variables]
    _assign(variables, before)
    try:
        xla_out, xla_s = _timed(variant, args, kwargs, clock)
    except (tf.errors.OpError, ValueError, TypeError) as e:
        _assign(variables, after)
        give_up(decision, f"its XLA graph's run failed ({type(e).__name__})")
        return plain_out, plain
    same = _same_bits(plain_out, xla_out) and _same_bits(after, [v.numpy() for v in variables])
    if not same:
        _assign(variables, after)
        give_up(decision, "its results differed from the plain graph's in the last bits (eager's numbers come first)")
        return plain_out, plain
    if not decision.warm:
        decision.warm = True  # this XLA run compiled its clusters: not timed
    else:
        decision.trial.record(Side.BASELINE, plain_s * 1e3)
        decision.trial.record(Side.CANDIDATE, xla_s * 1e3)
    verdict = decision.trial.verdict()
    if verdict is Verdict.KEEP:
        decision.chosen = True
    elif verdict is Verdict.DROP:
        give_up(decision, f"XLA was not at least {decision.trial.min_gain:.0%} faster")
    return xla_out, variant


def _timed(entry: CacheEntry, args: tuple, kwargs: dict, clock: Callable[[], float]) -> tuple[list, float]:
    start = clock()
    outputs = entry.graph.execute(args, kwargs)
    return outputs, clock() - start


def _assign(variables: list, values: list) -> None:
    for v, value in zip(variables, values):
        v.assign(value)


def _same_bits(a: list, b: list) -> bool:
    """Equal dtypes, shapes and bytes (NaNs and signed zeros included)."""
    if len(a) != len(b):
        return False
    try:
        for x, y in zip(a, b):
            x = np.asarray(x.numpy() if hasattr(x, "numpy") else x)
            y = np.asarray(y.numpy() if hasattr(y, "numpy") else y)
            if x.dtype != y.dtype or x.shape != y.shape:
                return False
            if x.dtype.kind in "biufc" and x.tobytes() != y.tobytes() or \
                    x.dtype.kind not in "biufc" and not np.array_equal(x, y):
                return False
    except Exception:  # noqa: BLE001 - an output that cannot be read back (a variant): no verdict
        return False
    return True
