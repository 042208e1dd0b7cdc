"""Where one Janus function's time went, call by call: the whole run against eager's.

"Never slower than eager" counts the whole run (the design brief; issue #40): the
profiled calls, the conversions and their failed traces, the XLA trials, the graph runs
(those that aborted too) and the eager runs after a fallback.  A :class:`Ledger` adds them
up for one Janus function (each graph segment of a split function has its own), and keeps
the eager calls' times: eager's total for the same calls is estimated as the eager runs'
own seconds plus, for every call that ran otherwise, their median.  The policy reads the ledger
when a conversion is due (:meth:`janus.driver.policy.ConversionPolicy.whole_run`);
``janus.stats`` and ``janus.explain`` show it.

The eager calls Janus times are mostly profiled ones, slower than plain eager by the
profiler's overhead: the estimate errs toward eager being slower, so toward converting on.

Every time comes from :data:`clock` (``time.perf_counter``), read twice per call on the
paths that run a graph or the function eagerly; tests replace it with a fake clock to force
a decision regardless of the machine's speed.  Updates are plain float additions: under
concurrent calls of one function an update may be lost (the counts of ``janus.stats``
are exact; these are estimates).
"""
from __future__ import annotations

import statistics
import time
from collections import deque
from typing import Callable

from janus import config

# The one clock of the ledger; tests monkeypatch it (``janus.driver.ledger.clock``).
clock: Callable[[], float] = time.perf_counter


class Ledger:
    """The seconds one Janus function spent, by kind, and its calls (see the module)."""

    __slots__ = ("calls", "eager_seconds", "eager_calls", "graph_seconds", "graph_calls", "conversion_seconds",
                 "trial_seconds", "aborted_seconds", "_samples")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.calls = 0  # calls that ended in an eager run or a graph run (each counted once)
        self.eager_seconds = 0.0  # eager runs, profiled or not (those after an aborted graph run too)
        self.eager_calls = 0
        self.graph_seconds = 0.0  # warm graph runs that succeeded: what a graph call costs
        self.graph_calls = 0
        self.conversion_seconds = 0.0  # misses: guard diagnosis, traces (failed ones too); new graphs' first runs
        self.trial_seconds = 0.0  # calls that took part in an XLA trial (both graphs run, the variant traced)
        self.aborted_seconds = 0.0  # graph runs that aborted (the call then ran eagerly)
        self._samples: deque[float] = deque(maxlen=config.LIMITS.eager_samples)

    # -- recording ------------------------------------------------------------------
    def eager_ran(self, seconds: float) -> None:
        """A call ended in an eager run of the function that took ``seconds``."""
        self.eager_seconds += seconds
        self.eager_calls += 1
        self._samples.append(seconds)
        self.calls += 1

    def graph_ran(self, seconds: float, first: bool, trial: bool) -> None:
        """A graph run succeeded in ``seconds``: the graph's ``first`` run (it builds the
        function TensorFlow runs: part of converting), a run in an XLA ``trial``, or a warm
        run (what a graph call costs)."""
        self.calls += 1
        if first:
            self.conversion_seconds += seconds
        elif trial:
            self.trial_seconds += seconds
        else:
            self.graph_seconds += seconds
            self.graph_calls += 1

    def graph_aborted(self, seconds: float) -> None:
        """A graph run aborted after ``seconds`` (the call runs eagerly next)."""
        self.aborted_seconds += seconds

    def converted(self, seconds: float) -> None:
        """A miss took ``seconds`` deciding and converting (the failed traces included)."""
        self.conversion_seconds += seconds

    # -- reading --------------------------------------------------------------------
    @property
    def total(self) -> float:
        """Janus's seconds for this function's calls, everything included."""
        return self.eager_seconds + self.graph_seconds + self.conversion_seconds + self.trial_seconds + \
            self.aborted_seconds

    def eager_estimate(self) -> float | None:
        """Eager's estimated seconds for the calls so far: the eager runs as they took (eager
        pays a first call's warm-up too), the median eager run for each other call (None:
        no eager run yet)."""
        per_call = self.eager_per_call()
        return None if per_call is None else self.eager_seconds + per_call * (self.calls - self.eager_calls)

    def eager_per_call(self) -> float | None:
        """Eager's estimated seconds per call: the median of the latest eager runs (None: none yet)."""
        samples = self._samples
        return statistics.median(samples) if samples else None

    def graph_per_call(self) -> float | None:
        """A warm graph call's mean seconds (None: no warm graph call yet)."""
        return self.graph_seconds / self.graph_calls if self.graph_calls else None
