"""``@janus.function``: the per-function driver of profiling, conversion and caching.

Per call: the guards of the cached graphs are checked, shape-specialized graphs before
those with symbolic dimensions, each group most recently built first; on
a hit the graph runs and its deferred effects are committed (an aborted run commits
nothing and the call re-runs eagerly).  Otherwise the call runs eagerly, under the
profiler, and the function's :class:`~janus.driver.policy.ConversionPolicy` decides
when to convert (tracing on the current call's arguments), what to relax, and when to
give up — after which calls run plainly eagerly, unprofiled.
"""
from __future__ import annotations

import functools
import logging
import os
import re
import threading
import time
import types
import weakref
from collections import Counter
from typing import Any, Callable

import tensorflow as tf

from janus import config
from janus.commit import atomicity
from janus.commit.atomicity import StateBeforeAssertion
from janus.commit.uninterrupted import SignalsDeferred
from janus.convert import support
from janus.convert.pipeline import convert_source
from janus.driver.entry import CacheEntry, build_entry, convert, input_leaves
from janus.driver import xla_choice
from janus.driver.policy import ConversionPolicy
from janus.errors import ConversionError, GraphBreakError
from janus.convert.pipeline import is_converted_code
from janus.runtime.calls import is_user_code, is_user_code_file
from janus.runtime.control_flow import USER_ASSERT_MESSAGE
from janus.trace import seeds
from janus.trace.active import current
from janus.trace.speculation import Speculator
from janus_profiler import Profiler

_ASSUMPTION_ID = re.compile(r"janus assumption #(\d+)")

log = logging.getLogger("janus")


class _Prefix(logging.Filter):
    """Janus's messages name Janus: warnings start with ``janus:`` so that Python's last-resort
    output (no handler configured anywhere) says who speaks.  Where a handler is configured
    its format names the logger already (``INFO:janus:...``, or ``JANUS_LOG``'s ``janus: ...``),
    so the prefix is dropped there instead of doubled."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and record.msg.startswith("janus: ") and log.hasHandlers():
            record.msg = record.msg[len("janus: "):]
        return True


log.addFilter(_Prefix())


class _Stderr(logging.StreamHandler):
    """A handler writing to whatever ``sys.stderr`` is when a record is emitted."""

    def __init__(self) -> None:
        super().__init__()

    @property
    def stream(self):  # noqa: D102 - StreamHandler's attribute, read at each emit
        import sys
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


_logging_configured = False


def configure_logging() -> None:
    """``JANUS_LOG=info|debug``: give the ``janus`` logger a handler on stderr, once, at the
    first use of Janus (``janus: <message>`` lines; the logger stops propagating, so a root
    handler does not print them twice).  Unset: nothing is configured (library code adds no
    handler)."""
    global _logging_configured
    if _logging_configured:
        return
    _logging_configured = True
    level = config.log_level()
    if level is None:
        return
    handler = _Stderr()
    handler.setFormatter(logging.Formatter("janus: %(message)s"))
    log.addHandler(handler)
    log.setLevel(level.upper())
    log.propagate = False


def do_not_convert(f: Callable) -> Callable:
    """Mark ``f`` so that Janus never converts it: ``janus.function(f)`` and the GradientTape
    hook leave it plain, and a Janus function whose call reaches it runs eagerly (Janus runs
    whole functions, so the caller runs eagerly too; ``janus.explain`` names ``f``).
    Returns ``f`` itself (a Janus function: its plain Python function), marked."""
    if isinstance(f, (staticmethod, classmethod)):
        do_not_convert(f.__func__)
        return f
    jf = getattr(f, "__janus_function__", None)
    if isinstance(jf, JanusFunction):
        f = jf.python_function if not isinstance(f, BoundJanusFunction) else types.MethodType(jf.python_function,
                                                                                                f.__self__)
    inner = f.__func__ if isinstance(f, types.MethodType) else f
    if not isinstance(inner, types.FunctionType):
        raise TypeError(f"janus.do_not_convert expects a Python function or method, got {type(f).__name__}")
    setattr(inner, support.DO_NOT_CONVERT, True)
    return f


_REGISTRY: "weakref.WeakSet[JanusFunction]" = weakref.WeakSet()


_WRAPPERS: "weakref.WeakValueDictionary[int, JanusFunction]" = weakref.WeakValueDictionary()


def wrapping(fn: types.FunctionType) -> "JanusFunction | None":
    """The Janus function made of ``fn`` (by the decorator or the hook), if any."""
    jf = _WRAPPERS.get(id(fn))
    return jf if jf is not None and jf.python_function is fn else None


class JanusFunction:
    """A Python function that Janus runs as specialized graphs whenever it safely can."""

    def __init__(self, fn: types.FunctionType, profile_calls: int | None = None, speculate: bool = True,
                 jit_compile: bool | None = None, strict: bool | None = None):
        configure_logging()
        functools.update_wrapper(self, fn)
        self.python_function = fn
        _WRAPPERS[id(fn)] = self
        self.collective: Any = None  # the multi-worker strategy its graphs use, if any
        self._profile_calls = profile_calls
        self.speculate = speculate
        self.jit_compile = jit_compile
        self._strict = strict
        self.last_entry: CacheEntry | None = None  # the graph that served the last graph call
        self._failure: tuple[str, str | None] | None = None  # (reason, location) of this call's failed conversion
        self._why_convert: str | None = None  # what led to the next conversion, for its log line
        self._permanent_location: str | None = None  # the user's line of the reason it gave up, if known
        self.entries: list[CacheEntry] = []
        self.reasons: Counter[str] = Counter()
        self.counts: Counter[str] = Counter()
        self.source: str | None = None
        self.profiler = Profiler(include=is_user_code, values=False)  # what the converter reads
        self.policy = ConversionPolicy(fn.__qualname__)
        self._converting = threading.Lock()  # held by the thread that profiles or converts
        self._trial = threading.Lock()  # held by the thread that runs an XLA trial call
        _REGISTRY.add(self)

    @property
    def __janus_function__(self) -> "JanusFunction":
        return self

    @property
    def profile_calls(self) -> int:
        return config.profile_calls() if self._profile_calls is None else self._profile_calls

    @property
    def strict(self) -> bool:
        """Raise :class:`GraphBreakError` instead of running a call eagerly (``JANUS_STRICT``
        when not given)."""
        return config.strict() if self._strict is None else self._strict

    @property
    def xla_mode(self) -> bool | None:
        """XLA for new graphs: True, False, or None (chosen by measuring each graph)."""
        return config.jit_compile() if self.jit_compile is None else self.jit_compile

    @property
    def permanent_reason(self) -> str | None:
        """Why this function runs eagerly for good (None while Janus still converts it)."""
        return self.policy.permanent_reason

    # -- descriptor protocol: methods share one cache, with guards on ``self`` ---------
    def __get__(self, obj: Any, objtype: type | None = None):
        if obj is None:
            return self
        return BoundJanusFunction(self, obj)

    # -- calls ------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        ctx = current()
        if ctx is not None:  # reached from library code while another function is traced: inline
            return ctx.convert(self.python_function)(*args, **kwargs)
        self.counts["calls"] += 1
        if tf.distribute.has_strategy() and not tf.distribute.in_cross_replica_context():
            return self._in_replica(args, kwargs)
        entry = next((e for e in sorted(self.entries, key=_has_symbolic_dims) if e.check(args, kwargs)), None)
        if entry is not None or self.policy.gave_up:
            if entry is None and self.strict:
                self._break()
            return self._dispatch(entry, args, kwargs)
        # One thread at a time profiles and converts; meanwhile other threads run the call as written.
        if not self._converting.acquire(blocking=False):
            return self._dispatch(None, args, kwargs, plain=True)
        try:
            self._failure = None
            entry = self._miss(args, kwargs)
            if entry is None and self.strict and (self._failure is not None or self.policy.gave_up):
                self._break()
            return self._dispatch(entry, args, kwargs)
        finally:
            self._converting.release()

    def _break(self) -> None:
        """Strict mode: this call cannot run as a graph; raise instead of running it eagerly."""
        if self._failure is not None:
            reason, location = self._failure
        else:
            reason, location = self.policy.permanent_reason or "unknown", self._permanent_location
        self.counts["graph_breaks"] += 1
        raise GraphBreakError(self.__qualname__, reason, location or _def_location(self.python_function))

    def _failed(self, reason: str, location: str | None = None) -> None:
        """Remember why this call's conversion failed (for strict mode's error)."""
        self._failure = (reason, location)

    def _miss(self, args: tuple, kwargs: dict) -> CacheEntry | None:
        """No cached graph fits: convert if the policy says so (None: run this call eagerly)."""
        try:
            miss = self.policy.learn_from_miss(self.entries[0], args, kwargs) if self.entries else None
            entry = self._maybe_convert(args, kwargs)
        except Exception as e:  # noqa: BLE001 - Janus's own failure: never the user's exception
            self._note(f"converting failed inside Janus: {_first_line(e)}")
            self._failed(f"converting failed inside Janus: {_first_line(e)}")
            return None
        if entry is not None and not entry.check(args, kwargs):
            self._note("a new graph's guards did not hold on the call that built it")
            self._failed("a new graph's guards did not hold on the call that built it (a Janus bug)")
            entry = None
        elif entry is None and miss is not None:
            self._note(f"no cached graph's guards held ({miss})")
            self._why_convert = f"a guard miss ({miss})"
        return entry

    def _dispatch(self, entry: CacheEntry | None, args: tuple, kwargs: dict, plain: bool = False) -> Any:
        """Run ``entry``'s graph, or the call eagerly (``plain``: unprofiled)."""
        if self.collective is not None and not self._every_worker_runs_a_graph(entry is not None):
            if entry is not None:
                self._note("another worker could not run a graph at this step: every worker runs it eagerly")
            entry = None
        if entry is not None:
            return self._run(entry, args, kwargs)
        if plain:
            self.counts["eager_calls"] += 1
            self._note("another thread was profiling or converting this function: ran as written")
            return self.python_function(*args, **kwargs)
        return self._eager(args, kwargs)

    def _every_worker_runs_a_graph(self, mine: bool) -> bool:
        """Agree with the other workers of a multi-worker strategy: a graph's collectives are
        not the eager step's (gradients are packed differently), so either every worker
        runs its graph at this step or every worker runs the step eagerly.  One eager
        all-reduce of a vote per step."""
        strategy = self.collective
        votes = strategy.experimental_distribute_values_from_function(lambda _: tf.constant(int(mine)))
        return int(strategy.reduce(tf.distribute.ReduceOp.SUM, votes, axis=None)) == strategy.num_replicas_in_sync

    def _collective_seen(self, strategy: Any) -> None:
        """A trace used a multi-worker strategy: from now on every call agrees with the other
        workers, and conversions make no assumption (an aborted run on one worker would
        desynchronize the workers' collectives)."""
        if self.collective is None:
            self.collective = strategy
            self.speculate = False

    def _in_replica(self, args: tuple, kwargs: dict) -> Any:
        """A call inside ``strategy.run`` (one per replica, on the strategy's threads): run as
        written.  A graph traced there cannot hold the step's synchronization points (an
        optimizer's gradient all-reduce), and replicas must all take the same path; the
        function that calls ``strategy.run`` is the one to convert."""
        self.counts["eager_calls"] += 1
        self._note("called inside strategy.run (a replica context): runs as written; "
                   "convert the function that calls strategy.run instead")
        return self.python_function(*args, **kwargs)

    def _run(self, entry: CacheEntry, args: tuple, kwargs: dict) -> Any:
        """Run a graph and commit its effects; if it aborts (an assertion or an op failed),
        nothing was committed: run eagerly.  Ctrl-C waits until the commit is done.

        While the graph's XLA trial is on (``janus.driver.xla_choice``), its runs are timed,
        and once its XLA variant exists each call runs both and compares them (one thread
        at a time, and only while no other Python thread runs)."""
        decision = entry.xla
        trial = decision is not None and not decision.done and self._trial.acquire(blocking=False)
        try:
            if trial and xla_choice.wants_variant(decision):
                self._build_xla_variant(entry, decision, args, kwargs)
            with SignalsDeferred():
                outputs, target = self._execute(entry, decision if trial else None, args, kwargs)
                if outputs is not None:
                    result = target.finish(outputs, args, kwargs)
                    entry.hits += 1
                    self.last_entry = target
                    for assumption in entry.assumptions:
                        assumption.held += 1
                    self.counts["graph_calls"] += 1
                    if trial and decision.chosen:
                        self._adopt_xla_variant(entry, decision)
        finally:
            if trial:
                self._trial.release()
        if outputs is None:  # outside the except block: eager's exception must not chain to the graph's
            return self._eager(args, kwargs)
        return result

    def _execute(self, entry: CacheEntry, trial: xla_choice.XlaDecision | None, args: tuple,
                 kwargs: dict) -> tuple[list | None, CacheEntry]:
        """The graph's outputs and the entry that made them, or None if the run aborted."""
        try:
            if trial is not None and trial.variant is not None and atomicity.no_other_threads():
                return xla_choice.run_both(entry, trial, args, kwargs, time.perf_counter)
            if trial is not None and entry.hits:  # the first run instantiates the graph: not timed
                start = time.perf_counter()
                outputs = entry.execute(args, kwargs)
                xla_choice.record_plain(trial, time.perf_counter() - start)
                return outputs, entry
            return entry.execute(args, kwargs), entry
        except Exception as e:  # noqa: BLE001 - an op failed, or Janus's own input gathering: run eagerly
            entry.failures += 1
            self.counts["assertion_failures"] += 1
            self._aborted(entry, e)
            return None, entry

    def _build_xla_variant(self, entry: CacheEntry, decision: xla_choice.XlaDecision, args: tuple,
                           kwargs: dict) -> None:
        """Trace the call once more with XLA clusters: the variant under trial."""
        try:
            variant = decision.rebuild(args, kwargs)
        except Exception as e:  # noqa: BLE001 - the plain graph stays
            xla_choice.give_up(decision, f"tracing it with XLA failed ({_first_line(e)})")
            return
        if variant.guard_source != entry.guard_source:
            xla_choice.give_up(decision, "tracing it again specialized on other values")
        elif not variant.xla_ops:
            xla_choice.give_up(decision, "no op of its graph qualifies for XLA (janus.trace.xla)")
        else:
            decision.variant = variant

    def _adopt_xla_variant(self, entry: CacheEntry, decision: xla_choice.XlaDecision) -> None:
        """The XLA variant won: it takes the plain graph's place in the cache."""
        variant, decision.variant = decision.variant, None
        variant.xla, variant.hits, variant.failures = decision, entry.hits, entry.failures + variant.failures
        if entry in self.entries:
            self.entries[self.entries.index(entry)] = variant

    def _aborted(self, entry: CacheEntry, error: BaseException) -> None:
        """A failed assumption (speculation or run-time check, named by its id in the failed
        assertion's message): drop every graph that made it, never assume it again.

        The user's own ``assert`` failing is no failed assumption: the eager re-run raises
        its AssertionError, and the graph stays (it is right whenever the assert holds).
        Nor, while it is rare, is a side that raises being taken (``if bad: raise``).
        """
        if isinstance(error, atomicity.Disturbed):
            self._note(f"ran eagerly: {error}")
            return
        text = str(error)
        if entry.seeds is not None and seeds.OVERFLOW_MESSAGE in text:
            entry.seeds.grow()
            self._note("the graph made more random draws than seeds were reserved; re-ran eagerly, reserving more")
            return
        match = _ASSUMPTION_ID.search(text)
        failed = next((a for a in entry.assumptions if match and a.id == int(match.group(1))), None)
        if failed is None:
            if USER_ASSERT_MESSAGE in text:
                self._note("an assert statement failed in the graph; re-ran eagerly (graph kept)")
            else:
                self._note(f"graph run aborted{_op_location(error)}, re-ran eagerly: {_first_line(error)}")
            return
        failed.failed += 1
        if failed.kind == "not_raising" and failed.failed <= failed.held:
            # The graph is right on every call that does not take the raising side, and the
            # eager re-run raises where eager does: kept while at most half its runs raise.
            self._note(f"a side that raises was taken, re-ran eagerly (graph kept): {failed.description}")
            return
        self.policy.banned_sites.add(failed.ban)
        self.entries[:] = [e for e in self.entries if not any(a.ban == failed.ban for a in e.assumptions)]
        self.policy.eager_since_attempt = self.profile_calls  # re-convert on the next call, without it
        self._why_convert = f"a failed assumption (#{failed.id} {failed.description})"
        self._note(f"assumption failed, re-ran eagerly: {failed.description}")

    def _eager(self, args: tuple, kwargs: dict) -> Any:
        self.counts["eager_calls"] += 1
        policy = self.policy
        if self.counts["conversions"] or policy.failed_attempts or policy.gave_up:
            self.counts["fallbacks"] += 1
        if policy.gave_up:
            return self.python_function(*args, **kwargs)
        policy.eager_since_attempt += 1
        for source, value in input_leaves(args, kwargs):
            policy.observe(source, value)
        if config.profiling() and not policy.budget_exhausted():
            return self.profiler.call(self.python_function, *args, **kwargs)
        return self.python_function(*args, **kwargs)

    # -- conversion -------------------------------------------------------------------
    def _maybe_convert(self, args: tuple, kwargs: dict) -> CacheEntry | None:
        policy = self.policy
        if not policy.due(bool(self.entries), self.profile_calls):
            return None
        if policy.budget_exhausted():
            self._note("conversion budget exhausted; running eagerly")
            policy.give_up_on_budget()
            self._permanent_location = None
            return None
        if policy.reuse_unlikely(self.entries):
            self._note("the last graphs were never reused; running eagerly")
            policy.give_up(f"its last {len(self.entries[:3])} graphs were never reused "
                           f"({policy.misses.most_common(1)[0][0] if policy.misses else 'new guards every call'})",
                           "Values it specializes on change at every call; see janus.explain(f).")
            self.entries[:] = [e for e in self.entries if e.hits > 1]
            self._permanent_location = None
            return None
        fn = self.python_function
        started = time.perf_counter()
        why = self._why_convert or f"{policy.eager_since_attempt} profiled calls"
        self._permanent_location = None
        reason = "marked janus.do_not_convert" if support.marked_do_not_convert(fn) else support.unsupported_reason(fn)
        if reason is None:
            try:
                self.source = convert_source(fn)
                converted = convert(fn)
            except ConversionError as e:
                reason = str(e)
            except Exception as e:  # noqa: BLE001 - Janus's own failure: never the user's exception
                self._note(f"converting failed inside Janus: {_first_line(e)}")
                self._failed(f"converting failed inside Janus: {_first_line(e)}")
                policy.converted(False)
                return None
        else:
            self._permanent_location = _construct_location(fn, reason)
        if reason is not None:
            self._note(f"cannot convert: {reason}")
            policy.give_up(reason, "It contains a construct Janus does not convert; see janus.explain(f).")
            return None
        for source, value in input_leaves(args, kwargs):
            policy.observe(source, value)
        relaxed = policy.relaxed_shapes()
        history = self.profiler.data.arg_history(fn) if self.speculate else []
        fed = policy.fed_scalars(fn, history, self.speculate, args, kwargs)
        mode = self.xla_mode
        entry = self._trace(converted, args, kwargs, relaxed, fed, mode is True)
        if entry is None and (relaxed or fed) and not policy.gave_up:
            relaxed = fed = None
            entry = self._trace(converted, args, kwargs, None, None, mode is True)
        policy.converted(entry is not None)
        seconds = time.perf_counter() - started
        if entry is None:
            if log.isEnabledFor(logging.INFO):
                why = self._failure[0] if self._failure else "see janus.explain"
                log.info("%s: conversion failed after %.2f s (%s)%s", self.__qualname__, seconds, why,
                         "; runs eagerly from now on" if policy.gave_up else "")
            return None
        entry.xla = self._xla_decision(mode, entry, converted, relaxed, fed)
        self.counts["conversions"] += 1
        self.entries.insert(0, entry)
        del self.entries[config.MAX_CACHE_ENTRIES:]
        if log.isEnabledFor(logging.INFO):
            log.info("converted %s in %.2f s after %s: %d guards, %d assumptions, %d inputs%s%s",
                     self.__qualname__, seconds, why, len(entry.guards),
                     sum(1 for a in entry.assumptions if a.speculative), len(entry.input_specs),
                     " (relaxed shapes)" if entry.relaxed else "", _specialized_on(entry))
        self._why_convert = None
        return entry

    def _xla_decision(self, mode: bool | None, entry: CacheEntry, converted: Callable, relaxed: dict | None,
                      fed: dict | None) -> xla_choice.XlaDecision:
        decision = xla_choice.start(mode)
        if mode is True and not entry.xla_ops:
            decision.why = "no op of its graph qualifies (janus.trace.xla)"
        elif not decision.done and self.collective is not None:
            xla_choice.give_up(decision, "a multi-worker step: every worker must run the same graphs")
        elif not decision.done and entry.xla_rounding:
            xla_choice.give_up(decision, f"not tried: XLA rounds {', '.join(entry.xla_rounding[:4])} differently "
                                         f"from TensorFlow's kernels (eager's numbers come first)")
        if not decision.done:
            decision.rebuild = lambda a, k: build_entry(
                self.python_function, converted, a, k, relaxed, self._speculator(), fed,
                on_collective=self._collective_seen, xla=True)
        return decision

    def _speculator(self) -> Speculator:
        policy = self.policy
        return Speculator(self.profiler.data if self.speculate else None, policy.banned_sites, policy.assumptions)

    def _trace(self, converted: Callable, args: tuple, kwargs: dict, relaxed: dict | None,
               fed: dict | None, xla: bool = False) -> CacheEntry | None:
        policy = self.policy
        for _ in range(3):
            try:
                return build_entry(self.python_function, converted, args, kwargs, relaxed, self._speculator(), fed,
                                   on_collective=self._collective_seen, xla=xla)
            except StateBeforeAssertion as e:
                if not e.assumptions:
                    self._note(f"trace failed: {e} (an assert in the code)")
                    self._failed(f"trace failed: {e} (an assert in the code)", _trace_location(e).removeprefix(" at "))
                    return None
                for a in e.assumptions:
                    policy.banned_sites.add(a.ban)
                self._note(f"not speculated, checked after a state update: "
                           f"{'; '.join(a.description for a in e.assumptions)}")
                continue
            except ConversionError as e:
                self._note(f"trace failed{_trace_location(e)}: {e}")
                self._failed(str(e), _trace_location(e).removeprefix(" at ") or None)
                if e.permanent:
                    self._permanent_location = _trace_location(e).removeprefix(" at ") or None
                    policy.give_up(str(e), "It reaches code Janus never converts; see janus.explain(f).")
                return None
            except Exception as e:  # noqa: BLE001 - eager will raise it (or not) for real
                self._note(f"trace raised{_trace_location(e)} {_first_line(e)}")
                self._failed(f"tracing it raised {_first_line(e)}", _trace_location(e).removeprefix(" at ") or None)
                return None
        self._failed("assumptions kept being checked after a state update")
        return None

    def _note(self, reason: str) -> None:
        self.reasons[reason] += 1
        log.debug("%s: %s", self.__qualname__, reason)

    def reset(self) -> None:
        """Forget every graph, profile and count."""
        self.entries.clear()
        self.reasons.clear()
        self.counts.clear()
        self.source = None
        self.last_entry = None
        self._failure = None
        self._permanent_location = None
        self._why_convert = None
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


def _has_symbolic_dims(entry: CacheEntry) -> bool:
    """The lookup order's key: a graph with symbolic dimensions serves every shape, but the
    graph specialized on one shape, built before it, runs that shape faster (the LSTM
    example: 1,404 ops against 1,973, 3.8 against 5.0 ms per step), and is kept for it."""
    return entry.relaxed


def _trace_location(e: BaseException) -> str:
    """`` at file.py:LINE``: the user's line where converted code was when ``e`` was raised."""
    where = ""
    tb = e.__traceback__
    while tb is not None:
        if is_converted_code(tb.tb_frame.f_code):
            where = f" at {os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno}"
        tb = tb.tb_next
    return where


_OP_FRAME = re.compile(r'File "([^"]+)", line (\d+), in ')


def _op_location(e: BaseException) -> str:
    """`` at file.py:LINE``: the user's line that created the graph op that failed.

    TensorFlow's error for a failed graph op lists the stack that created the op; the
    innermost frame in a user file is the converted code's, which carries the user's lines.
    """
    frames = [(f, int(n)) for f, n in _OP_FRAME.findall(str(e)) if is_user_code_file(f)]
    return f" at {os.path.basename(frames[-1][0])}:{frames[-1][1]}" if frames else ""


def _def_location(fn: Any) -> str | None:
    code = getattr(fn, "__code__", None)
    return f"{os.path.basename(code.co_filename)}:{code.co_firstlineno}" if code is not None else None


def _construct_location(fn: types.FunctionType, reason: str) -> str | None:
    """``file.py:LINE`` of the construct a static reason names (``support.unsupported_reason``)."""
    try:
        from janus.convert.parse import function_ast
        node, filename, _, _ = function_ast(fn)
        kinds = tuple(kind for kind, text in support._REASONS.items() if text == reason)  # noqa: SLF001
        import gast
        for child in gast.walk(node):
            if child is not node and kinds and isinstance(child, kinds) and hasattr(child, "lineno"):
                return f"{os.path.basename(filename)}:{child.lineno}"
    except Exception:  # noqa: BLE001 - the location is a courtesy; the def line stands in
        pass
    return None


def _specialized_on(entry: CacheEntry) -> str:
    """``; specialized on: ...``: the first guards of a new graph, for its log line."""
    shown = [g.description for g in entry.guards[:3]]
    if not shown:
        return ""
    more = f" (+{len(entry.guards) - 3} more)" if len(entry.guards) > 3 else ""
    return "; specialized on: " + "; ".join(shown) + more


def _first_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0][:300]}" if lines else type(e).__name__


def function(fn: Callable | None = None, *, profile_calls: int | None = None, speculate: bool = True,
             jit_compile: bool | None = None, strict: bool | None = None):
    """Decorator: run ``fn`` through Janus (``JANUS_DISABLE=1`` leaves it untouched).

    ``profile_calls``: eager, profiled calls before the first conversion (a whole number
    >= 0; default 3, or ``JANUS_PROFILE_CALLS``).  ``speculate=False`` keeps every
    tensor-dependent branch and loop dynamic (``tf.cond`` / ``tf.while_loop``): the
    conservative conversion.  ``jit_compile``: XLA clusters for the pure part of each
    graph (assertions and state writes stay outside them): True always, False never, None
    (default, or ``JANUS_JIT_COMPILE``) per graph, kept only if, run both ways on the same
    calls, XLA was faster and gave the same bits.  ``strict=True`` (default ``JANUS_STRICT``):
    a call that would fall back to eager (a construct Janus never converts, a failed
    conversion, a function Janus gave up on) raises :class:`GraphBreakError` instead; the
    profiled calls before a conversion and the eager re-run of an aborted graph run are not
    fallbacks.  A function marked :func:`do_not_convert` is returned unchanged.

    The options are checked here, when given (a TypeError or ValueError naming the option),
    so that a bad one never surfaces later from inside a call.
    """
    import operator

    if profile_calls is not None:
        try:
            calls = None if isinstance(profile_calls, bool) else operator.index(profile_calls)
        except TypeError:
            calls = None
        if calls is None:
            raise TypeError(f"janus.function: profile_calls must be a whole number >= 0 or None, "
                            f"got {profile_calls!r}")
        if calls < 0:
            raise ValueError(f"janus.function: profile_calls must be a whole number >= 0, got {profile_calls!r}")
        profile_calls = calls
    if not isinstance(speculate, bool):
        raise TypeError(f"janus.function: speculate must be True or False, got {speculate!r}")
    if jit_compile is not None and not isinstance(jit_compile, bool):
        raise TypeError(f"janus.function: jit_compile must be True, False or None, got {jit_compile!r}")
    if strict is not None and not isinstance(strict, bool):
        raise TypeError(f"janus.function: strict must be True, False or None, got {strict!r}")
    configure_logging()

    def wrap(f: Callable):
        if config.disabled():
            return f
        if isinstance(f, (JanusFunction, BoundJanusFunction)):
            return f
        if support.marked_do_not_convert(f):
            return f
        if isinstance(f, types.MethodType):
            return JanusFunction(f.__func__, profile_calls, speculate, jit_compile, strict).__get__(f.__self__)
        if not isinstance(f, types.FunctionType):
            raise TypeError(f"janus.function expects a Python function or method, got {type(f).__name__}")
        return JanusFunction(f, profile_calls, speculate, jit_compile, strict)
    return wrap(fn) if fn is not None else wrap


def registry() -> list[JanusFunction]:
    return list(_REGISTRY)
