"""``@janus.function``: the per-function driver of profiling, conversion and caching.

One call reads top to bottom in :meth:`JanusFunction.__call__`: the cache's guards are
checked (:mod:`janus.driver.cache`); on a hit the graph runs and its deferred effects are
committed (:meth:`JanusFunction._run`), and a run that aborted committed nothing: what
failed (:mod:`janus.trace.aborts`) tells the policy what to stop assuming, and the call
re-runs eagerly.  On a miss the call runs eagerly, under the profiler, and the function's
:class:`~janus.driver.policy.ConversionPolicy` decides when to convert
(:mod:`janus.driver.conversion`), what to relax, and when to give up — after which calls
run plainly eagerly, unprofiled.
"""
from __future__ import annotations

import functools
import logging
import os
import threading
import types
import weakref
from typing import Any

import tensorflow as tf

from janus import config
from janus.commit.uninterrupted import SignalsDeferred
from janus.convert.libraries import is_user_code
from janus.driver import ledger as _ledger, workers
from janus.driver.cache import GraphCache
from janus.driver.conversion import Conversion
from janus.driver.counts import Counts
from janus.graphs.entry import CacheEntry
from janus.graphs.inputs import input_leaves
from janus.driver.logs import configure_logging
from janus.driver.options import Options
from janus.driver.outcome import NOT_DUE, Converted, Failed, NotDue, Outcome, Raised, RaisesAsEager, SplitAt, Why
from janus.driver.policy import ConversionPolicy
from janus.driver.aborted import Learned, learn_from_abort
from janus.driver.segments import SplitFunction, split_at
from janus.driver.weak import weak_method
from janus.driver.xla_choice import XlaTrials
from janus.errors import GraphBreakError
from janus.reporting import events, session
from janus.reporting.codes import Code, reason
from janus.trace import aborts
from janus.trace.active import current
from janus_profiler import Profiler

log = logging.getLogger("janus")

_REGISTRY: "weakref.WeakSet[JanusFunction]" = weakref.WeakSet()
_WRAPPERS: "weakref.WeakValueDictionary[int, JanusFunction]" = weakref.WeakValueDictionary()


def wrapping(fn: types.FunctionType) -> "JanusFunction | None":
    """The Janus function made of ``fn`` (by the decorator or the hook), if any."""
    jf = _WRAPPERS.get(id(fn))
    return jf if jf is not None and jf.python_function is fn else None


def registry() -> list[JanusFunction]:
    return list(_REGISTRY)


class JanusFunction:
    """A Python function that Janus runs as specialized graphs whenever it safely can."""

    def __init__(self, fn: types.FunctionType, options: Options = Options(),
                 segment_of: "JanusFunction | None" = None):
        configure_logging()
        functools.update_wrapper(self, fn)
        _WRAPPERS[id(fn)] = self
        self.options = options
        self.collective: tf.distribute.Strategy | None = None  # the multi-worker strategy its graphs use
        self.last_entry: CacheEntry | None = None  # the graph that served the last graph call
        self.entries = GraphCache()
        self.reasons = Counts()
        self.counts = Counts()
        self.profiler = Profiler(include=is_user_code, values=False)  # what the converter reads
        self.policy = ConversionPolicy(fn.__qualname__, segment=segment_of is not None)
        self.ledger = _ledger.Ledger()  # where its calls' time went: the whole run against eager's
        self.conversion = Conversion(fn, self.policy, self.profiler, weak_method(self.note), self.ledger)
        self.xla_trials = XlaTrials()
        self._converting = threading.Lock()  # held by the thread that profiles or converts
        self.split: SplitFunction | None = None  # set once a graph break splits it into segments
        # the function this one is a segment of (its property): held weakly, as that function
        # holds its split, which holds this one (janus.driver.weak)
        self._segment_of = weakref.ref(segment_of) if segment_of is not None else None
        self.breaks_made = 0  # splits of this function and its segments
        _REGISTRY.add(self)
        session.start_from_environment()

    @property
    def __janus_function__(self) -> "JanusFunction":
        return self

    @property
    def segment_of(self) -> "JanusFunction | None":
        """The function this one is a segment of (None: not a segment).  Held weakly: that
        function holds its split, which holds this one (``janus.driver.weak``)."""
        return self._segment_of() if self._segment_of is not None else None

    @property
    def python_function(self) -> types.FunctionType:
        """The function as written (the take-over may swap in a copy of it)."""
        return self.conversion.fn

    @python_function.setter
    def python_function(self, fn: types.FunctionType) -> None:
        self.conversion.fn = fn

    @property
    def source(self) -> str | None:
        """The generated code of the last conversion (``janus.explain``)."""
        return self.conversion.source

    @property
    def permanent_reason(self) -> str | None:
        """Why this function runs eagerly for good (None while Janus still converts it)."""
        return self.policy.permanent_reason

    def __get__(self, obj: Any, objtype: type | None = None):
        """Methods share one cache, with guards on ``self``."""
        return self if obj is None else BoundJanusFunction(self, obj)

    # -- one call: look up -> run -> commit, or eager -----------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        recording = events.ACTIVE  # the report's per-call log (janus.reporting.events), None when off
        if recording is not None and current() is None:
            return recording.call(self, self._call, args, kwargs)
        return self._call(*args, **kwargs)

    def _call(self, *args: Any, **kwargs: Any) -> Any:
        ctx = current()
        if ctx is not None:  # reached from library code while another function is traced: inline
            return ctx.convert(self.python_function)(*args, **kwargs)
        self.counts.add("calls")
        if workers.in_replica():
            return self._as_written(args, kwargs, workers.IN_REPLICA)
        split = self.split
        if split is not None:
            return split(args, kwargs)
        entry, busy, outcome = self.entries.lookup(args, kwargs), False, NOT_DUE
        if entry is None and not self.policy.gave_up:
            busy = not self._converting.acquire(blocking=False)  # one thread at a time profiles and converts
            if not busy:
                started = _ledger.clock()
                try:
                    outcome = self._miss(args, kwargs)
                finally:
                    self._converting.release()
                    self.ledger.converted(_ledger.clock() - started)
        if entry is None:  # a cache hit (the hot path) has no outcome to read
            entry = self._converted_entry(outcome, busy)
        if self.collective is not None and not workers.every_worker_runs_a_graph(self.collective, entry is not None):
            if entry is not None:
                self.note(reason(Code.OTHER_WORKER, "another worker could not run a graph at this step: every worker runs it "
                                                      "eagerly"))
            entry = None
        if entry is not None:
            return self._run(entry, args, kwargs)
        if self.split is not None:  # split at a break on this call: its segments run it
            return self.split(args, kwargs)
        if busy:
            return self._as_written(args, kwargs, reason(Code.BUSY, "another thread was profiling or converting this "
                                                                    "function: ran as written"))
        return self._eager(args, kwargs, outcome.raised if isinstance(outcome, RaisesAsEager) else None)

    def _converted_entry(self, outcome: Outcome, busy: bool) -> CacheEntry | None:
        """The entry a conversion on this call made; strict mode raises where it made none."""
        match outcome:
            case Converted(entry=entry):
                return entry
            case Failed(why=why) | RaisesAsEager(why=why) if self.options.strict:
                self._break(why)
            case NotDue() if self.options.strict and not busy and self.policy.gave_up:
                self._break(self.policy.permanent)
        return None

    def _miss(self, args: tuple, kwargs: dict) -> Outcome:
        """No cached graph fits: convert if the policy says so, or split at a break."""
        if self.conversion.raises(args, kwargs):
            return NOT_DUE
        try:
            # under a multi-worker strategy every worker must take one path at a miss: eager
            miss = self.policy.learn_from_miss(self.entries[0], args, kwargs, at_once=self.collective is None) \
                if self.entries else None
            outcome = self.conversion.run(args, kwargs, self.entries, self.options, self.collective,
                                          weak_method(self._collective_seen))
        except Exception as e:  # noqa: BLE001 - Janus's own failure: never the user's exception
            bug = reason(Code.JANUS_BUG, f"converting failed inside Janus: {aborts.summary(e)}")
            self.note(bug)
            return Failed(Why(bug))
        match outcome:
            case Converted(entry=entry):
                self.counts.add("conversions")
                self.entries.insert(entry)
                if not entry.graph.check(args, kwargs):
                    self.note(reason(Code.JANUS_BUG, "a new graph's guards did not hold on the call that built it"))
                    return Failed(Why(reason(Code.JANUS_BUG, "a new graph's guards did not hold on the call that "
                                                             "built it (a Janus bug)")))
            case SplitAt(site=site):
                split = split_at(self, site, functools.partial(JanusFunction, segment_of=self))
                if split is not None:
                    self.entries.clear()
                    self.split = split
            case _ if miss is not None:
                self.note(reason(Code.GUARD_MISS, f"no cached graph's guards held ({miss})"))
                self.conversion.next_because(f"a guard miss ({miss})")
        return outcome

    def _run(self, entry: CacheEntry, args: tuple, kwargs: dict) -> Any:
        """Run a graph and commit its effects; if it aborted, nothing was committed: run
        eagerly.  Ctrl-C waits until the commit is done.  A call may take part in the
        graph's XLA trial (``janus.driver.xla_choice``).  Timed for the ledger: a graph's
        first run is part of converting it."""
        started = _ledger.clock()
        first = not entry.counters.hits
        with self.xla_trials.turn(entry, args, kwargs) as trial, SignalsDeferred():
            both = trial is not None and trial.variant is not None  # runs the XLA variant too: a trial call
            try:
                if trial is not None:
                    outputs, target = self.xla_trials.execute(entry, trial, args, kwargs)
                else:
                    outputs, target = entry.graph.execute(args, kwargs), entry
            except Exception as e:  # noqa: BLE001 - an op failed, or Janus's own input gathering
                entry.counters.failures += 1
                self.counts.add("assertion_failures")
                self._learn(learn_from_abort(entry, e), entry)
                outputs = None
            if outputs is not None:
                result = target.graph.finish(outputs, args, kwargs)
                entry.counters.hits += 1
                self.last_entry = target
                for assumption in entry.report.assumptions:
                    assumption.held += 1
                self.counts.add("graph_calls")
                if trial is not None and trial.chosen:
                    self.xla_trials.adopt(self.entries, entry, trial)
        if outputs is None:  # outside the except block: eager's exception must not chain to the graph's
            self.ledger.graph_aborted(_ledger.clock() - started)
            return self._eager(args, kwargs)
        self.ledger.graph_ran(_ledger.clock() - started, first, both)
        return result

    def _learn(self, learned: Learned, entry: CacheEntry) -> None:
        """Apply what an aborted run of ``entry`` taught (``janus.driver.aborted``)."""
        self.note(learned.note)
        banned = learned.banned
        if banned is not None:
            self.policy.ban(banned)
            cached = len(self.entries)
            self.entries.drop(lambda e: any(a.ban == banned.ban for a in e.report.assumptions))
            self.policy.lost_to_ban(cached - len(self.entries))
            self.policy.retry_next_call(self.options.profile_calls)  # re-convert next call, without it
            self.conversion.next_because(f"a failed assumption (#{banned.id} {banned.description})")
        if learned.retired is not None:
            self.entries.drop(lambda e: e is entry)
            self.policy.give_up(learned.retired, "See janus.explain(f).")

    def _eager(self, args: tuple, kwargs: dict, raised: Raised | None = None) -> Any:
        """The call as written: profiled while Janus may still convert, plain once it gave up
        (``raised``: its trace raised the user's exception; ``Conversion.eager_call``)."""
        self.counts.add("eager_calls")
        policy = self.policy
        if self.counts["conversions"] or policy.failed_attempts or policy.gave_up:
            self.counts.add("fallbacks")
        started = _ledger.clock()
        try:
            if policy.gave_up:
                return self.python_function(*args, **kwargs)
            policy.record_eager_call()
            for source, value in input_leaves(args, kwargs):
                policy.observe(source, value)
            if config.profiling() and not policy.budget_exhausted():
                return self.conversion.eager_call(lambda: self.profiler.call(self.python_function, *args, **kwargs),
                                                  raised)
            return self.conversion.eager_call(lambda: self.python_function(*args, **kwargs), raised)
        finally:
            self.ledger.eager_ran(_ledger.clock() - started)

    def _as_written(self, args: tuple, kwargs: dict, why: str) -> Any:
        """Run the call unprofiled, saying why (not a fallback: nothing was tried)."""
        self.counts.add("eager_calls")
        self.note(why)
        return self.python_function(*args, **kwargs)

    def _break(self, why: Why) -> None:
        """Strict mode: this call cannot run as a graph (``why``); raise instead of running it
        eagerly."""
        self.counts.add("graph_breaks")
        raise GraphBreakError(self.__qualname__, why.reason, why.location or _def_location(self.python_function))

    def _collective_seen(self, strategy: tf.distribute.Strategy) -> None:
        """A trace used a multi-worker strategy: from now on every call agrees with the other
        workers, and conversions make no assumption (an aborted run on one worker would
        desynchronize the workers' collectives)."""
        if self.collective is None:
            self.collective = strategy
            self.options = Options(self.options.given_profile_calls, False, self.options.jit_compile,
                                   self.options.given_strict)

    @property
    def gave_up(self) -> bool:
        """It runs eagerly for good (``permanent_reason`` says why)."""
        return self.policy.gave_up

    def give_up(self, reason: str, advice: str) -> None:
        """Run eagerly for good: ``reason``, with ``advice`` for the one warning."""
        self.policy.give_up(reason, advice)

    def note(self, reason: str) -> None:
        """A reason for ``janus.explain`` (counted), logged at debug level."""
        self.reasons.add(reason)
        log.debug("%s: %s", self.__qualname__, reason)

    def reset(self) -> None:
        """Forget every graph, profile and count."""
        self.entries.clear()
        self.reasons.clear()
        self.counts.clear()
        self.last_entry = None
        self.split = None
        self.breaks_made = 0
        self.ledger.reset()
        self.conversion.reset()
        self.profiler.reset()
        self.policy.reset()


class BoundJanusFunction:
    """A Janus method bound to an instance (the cache stays on the function)."""

    __slots__ = ("__janus_function__", "__self__")

    def __init__(self, jf: JanusFunction, obj: Any):
        self.__janus_function__ = jf
        self.__self__ = obj

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__janus_function__(self.__self__, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__janus_function__, name)

    def __repr__(self) -> str:
        return f"<janus bound method {self.__janus_function__.__qualname__} of {self.__self__!r}>"


def _def_location(fn: Any) -> str | None:
    code = getattr(fn, "__code__", None)
    return f"{os.path.basename(code.co_filename)}:{code.co_firstlineno}" if code is not None else None
