"""Converting a function on a call: the policy's go-ahead, then one bounded retry loop.

A conversion parses and converts the function once, then traces it on the call's
arguments (:func:`janus.graphs.tracing.build_entry`, one trace) under a frozen
:class:`~janus.graphs.plan.TracePlan` the policy makes.  A trace that raises a
:class:`janus.errors.Restart` starts again under the plan the signal asks for
(``revise``: a speculation banned, arrays or tensors kept as values, islands refused, the
recursions on trees regrouped); one that fed NumPy arrays and failed otherwise tries them
with this call's shapes, then as values; one that fails with relaxed shapes or fed numbers
is tried once more specialized on this call's values.  All of it happens in
:meth:`Conversion.run`'s single loop, at most ``config.LIMITS.max_traces`` traces; the policy learns
from the last plan, and what came of it is returned as one
:data:`janus.driver.outcome.Outcome`.
"""
from __future__ import annotations

import logging
import os
import time
import types
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable

import tensorflow as tf

from janus import config
from janus.convert import registry, support
from janus.convert.parse import function_ast
from janus.convert.pipeline import convert_source, own_codes
from janus.convert.analysis.breaks import unsplittable_reason
from janus.convert.segment_code import Exit
from janus.convert.splitting import BreakSite
from janus.convert.registry import is_converted_code
from janus.driver import xla_choice
from janus.graphs.entry import CacheEntry
from janus.graphs.inputs import fed_arrays, input_leaves
from janus.graphs.tracing import RAISED_UNDER, build_entry, convert
from janus.driver.outcome import NOT_DUE, Converted, Failed, Outcome, Raised, RaisesAsEager, SplitAt, Why
from janus.errors import ConversionError, NotYet, Regroup, Restart, StateBeforeAssertion, UndefinedValueError
from janus.reporting.codes import Code, derived, reason as _reason
from janus.graphs.plan import Arrays, TracePlan
from janus.trace.aborts import summary

if TYPE_CHECKING:
    from janus.driver.cache import GraphCache
    from janus.driver.ledger import Ledger
    from janus.driver.options import Options
    from janus.driver.policy import ConversionPolicy
    from janus_profiler import Profiler

log = logging.getLogger("janus")

# traces of one conversion, every retry counted: restarts (a few each: bans, trees
# regrouped twice, values kept), fed arrays tried three ways, the specialized retry


class Conversion:
    """The conversions of one function, and what the last one left to report."""

    def __init__(self, fn: types.FunctionType, policy: "ConversionPolicy", profiler: "Profiler",
                 note: Callable[[str], None], ledger: "Ledger"):
        self.fn = fn
        self.policy = policy
        self.ledger = ledger  # the function's time, for the whole-run rule
        self.profiler = profiler
        self.note = note
        self.reset()

    def reset(self) -> None:
        self.source: str | None = None  # the generated code, for janus.explain
        self.why: str | None = None  # what led to the next conversion, for its log line (next_because)
        self._last_failed: tuple | None = None  # the last failed attempt: its failure and what it knew
        self.next_break: BreakSite | None = None  # a statement eager ran where its trace raised: the next break
        self.raising: list[Callable[[tuple, dict], bool]] = []  # guards of calls that raise while tracing
        self.may_break = False  # the function may be split at a break (not strict, no collectives)
        self._why_unsplittable: str | None = None  # "" once known to be splittable

    def next_because(self, why: str) -> None:
        """What the next conversion of this function is for (a guard miss, a failed
        assumption), for its log line."""
        self.why = why

    def run(self, args: tuple, kwargs: dict, entries: "GraphCache", options: "Options",
            collective: tf.distribute.Strategy | None,
            on_collective: Callable[[tf.distribute.Strategy], None]) -> Outcome:
        """Convert on this call if the policy says so: a new entry, its XLA decision made,
        or why this call runs otherwise (``janus.driver.outcome``)."""
        policy = self.policy
        self.may_break = not options.strict and collective is None
        if self.next_break is not None and self.may_break:
            site, self.next_break = self.next_break, None
            return SplitAt(site)
        if not self._due(entries, options.profile_calls):
            return NOT_DUE
        started = time.perf_counter()
        why = self.why or f"{policy.eager_since_attempt} profiled calls"
        converted = self._converted()
        if isinstance(converted, (Failed, SplitAt)):
            return converted
        speculate, mode = options.speculate, options.xla_mode
        for source, value in input_leaves(args, kwargs):
            policy.observe(source, value)
        history = self.profiler.data.arg_history(self.fn) if speculate else []
        first = policy.plan(self.fn, history, speculate, args, kwargs, xla=mode is True)
        profile = self.profiler.data if speculate else None
        outcome, plan = self._traced(converted, args, kwargs, first, profile, on_collective)
        policy.adopt(plan)
        policy.converted(isinstance(outcome, Converted))
        seconds = time.perf_counter() - started
        if not isinstance(outcome, Converted):
            self._give_up_if_repeated(first, args, kwargs, outcome)
            if log.isEnabledFor(logging.INFO):
                log.info("%s: conversion failed after %.2f s (%s)%s", self.fn.__qualname__, seconds,
                         outcome.why.reason if isinstance(outcome, (Failed, RaisesAsEager)) else "see janus.explain",
                         "; runs eagerly from now on" if policy.gave_up else "")
            return outcome
        self._last_failed = None
        entry = outcome.entry
        entry.report.seconds = seconds
        xla_plan = replace(plan, xla=True)
        entry.xla = xla_choice.decide(mode, entry, collective, lambda a, k: build_entry(
            self.fn, converted, a, k, xla_plan, policy.speculator(profile, xla_plan), on_collective))
        if log.isEnabledFor(logging.INFO):
            log.info("converted %s in %.2f s after %s: %d guards, %d assumptions, %d inputs%s%s",
                     self.fn.__qualname__, seconds, why, len(entry.report.guards),
                     sum(1 for a in entry.report.assumptions if a.kind.speculative), len(entry.report.input_specs),
                     " (relaxed shapes)" if entry.report.relaxed else "", _specialized_on(entry))
        self.why = None
        return outcome

    def _traced(self, converted: Callable, args: tuple, kwargs: dict, plan: TracePlan, profile: Any,
                on_collective: Callable[[tf.distribute.Strategy], None]) -> tuple[Outcome, TracePlan]:
        """The one loop: trace under ``plan``, revised after each failed trace, at most
        ``config.LIMITS.max_traces`` traces; what came of it, and the last plan (what the policy learns)."""
        for _ in range(config.LIMITS.max_traces):
            try:
                entry = build_entry(self.fn, converted, args, kwargs, plan, self.policy.speculator(profile, plan),
                                    on_collective)
            except Exception as e:  # noqa: BLE001 - every outcome of a trace is decided below
                step = self._after_failed_trace(e, plan, fed_arrays(args, kwargs, plan))
                if not isinstance(step, TracePlan):
                    return step, plan
                plan = step
                continue
            if plan.arrays is Arrays.VALUES:  # with every array a value it worked: keep them so
                plan = replace(plan, numpy_values=plan.numpy_values | fed_arrays(args, kwargs, plan.restarted()))
            return Converted(entry), plan
        return Failed(Why(_reason(Code.RESTARTS, "the trace kept being restarted"))), plan

    def _give_up_if_repeated(self, plan: TracePlan, args: tuple, kwargs: dict, outcome: Outcome) -> None:
        """A conversion that failed exactly as the one before, on a call of the same kind
        (tensors of the same dtypes and shapes, the same Python numbers and strings) and
        knowing the same (no new relaxation, no speculation banned since), would fail again:
        stop trying rather than profile and trace until the budget is spent (a step with a
        NumPy call on a gradient ran at 0.69x eager that way).  The calls then run plainly
        eagerly."""
        if not isinstance(outcome, (Failed, RaisesAsEager)) or self.policy.gave_up:
            return
        known = (len(self.policy.banned_sites),) + tuple(sorted(repr(i) for i in {**plan.relaxed, **plan.fed}.items()))
        attempt = ((outcome.why.reason, outcome.why.location), known, _kind_of_call(args, kwargs))
        if isinstance(outcome, RaisesAsEager):  # counted once eager has run the call (eager_call)
            outcome.raised.attempt = attempt
            return
        self._count_failed(attempt)

    def _count_failed(self, attempt: tuple) -> None:
        """Give up on a second failed attempt in a row just like the one before."""
        if attempt != self._last_failed:
            self._last_failed = attempt
            return
        reason, location = attempt[0]
        self.note(_reason(Code.FAILED_TWICE, "the conversion failed twice the same way; running eagerly"))
        self.policy.give_up(_reason(Code.FAILED_TWICE, f"its conversion failed twice the same way: {reason}"),
                            "See janus.explain(f) for the construct; janus.do_not_convert marks it on purpose.", location)

    def raises(self, args: tuple, kwargs: dict) -> bool:
        """Does this call match the guards of a trace that raised what eager raised too?
        Such a call runs eagerly without a conversion (eager raises it again, or not)."""
        return any(check(args, kwargs) for check in self.raising)

    def eager_call(self, call: Callable[[], Any], raised: Raised | None = None) -> Any:
        """``call()``, the eager run of this call.  When its trace ``raised`` the user's
        exception, eager's outcome decides: the same exception — the function raises on
        such calls (a function that raises now and then keeps its graphs for the others),
        remembered under the trace's guards and not a failed conversion; anything else — a
        failed conversion, counted towards giving up."""
        if raised is None:
            return call()
        try:
            result = call()
        except Exception as e:
            self._eager_outcome(raised, e)
            raise
        segment = registry.segment_of(self.fn.__code__)
        # a segment that catches returns what it raised: (RAISED, exception, outputs)
        caught = result[1] if segment is not None and segment.catch and result[0] == Exit.RAISED else None
        self._eager_outcome(raised, caught if isinstance(caught, Exception) else None)
        return result

    def _eager_outcome(self, raised: Raised, error: Exception | None) -> None:
        """Eager raised ``error`` (None: nothing) on a call whose trace raised ``raised``."""
        if error is not None and type(error) is raised.kind and str(error) == raised.message:
            if len(self.raising) < config.LIMITS.max_raising:
                self.raising.append(raised.check)
            self.note(_reason(Code.RAISES_AS_EAGER,
                              f"raises {raised.kind.__name__} on such calls, as eager does: they run eagerly"))
        elif error is None and raised.line is not None and self.may_break and not issubclass(raised.kind, NameError):
            # eager ran the statement its trace raised in: it needs eager (a library call that
            # reads values, as get_weights() does), not this call's values; a break at once
            # rather than a conversion failed again on every call.  (A NameError is a local the
            # trace did not bind where eager had: the trace's bookkeeping, not the statement.)
            reason = _reason(Code.NEEDS_EAGER, f"tracing it raised {raised.kind.__name__} where eager does not "
                                               f"({raised.message[:80]})")
            self.next_break = BreakSite(raised.line, reason)
            self.note(_reason(Code.NEEDS_EAGER, f"graph break at line {raised.line} from the next call: {reason}"))
        elif raised.attempt is not None:
            self._count_failed(raised.attempt)

    def _due(self, entries: "GraphCache", profile_calls: int) -> bool:
        """The policy's go-ahead; giving up here when the budget is spent or graphs go unused."""
        policy = self.policy
        if not policy.due(bool(entries), profile_calls):
            return False
        if policy.budget_exhausted():
            self.note(_reason(Code.BUDGET, "conversion budget exhausted; running eagerly"))
            policy.give_up_on_budget()
            return False
        if policy.reuse_unlikely(entries):
            stopped = policy.stop_specializing_values()
            if stopped:
                self.note(_reason(Code.REPLANNED, f"the last graphs were never reused: "
                                  f"{', '.join(sorted(s.label for s in stopped))} no longer specialized by value"))
                entries.drop(lambda e: e.counters.hits <= 1)
                return True
            self.note(_reason(Code.NEVER_REUSED, "the last graphs were never reused; running eagerly"))
            unused = len(entries[:config.LIMITS.unused_graphs_before_giving_up])
            policy.give_up(_reason(Code.NEVER_REUSED, f"its last {unused} graphs were never reused "
                           f"({policy.misses.most_common(1)[0][0] if policy.misses else 'new guards every call'})"),
                           "Values it specializes on change at every call; see janus.explain(f).")
            entries.drop(lambda e: e.counters.hits <= 1)
            return False
        return self._pays(entries)

    def _pays(self, entries: "GraphCache") -> bool:
        """The whole-run rule (``ConversionPolicy.whole_run``), and before it the rule on runs
        too short to convert (``ConversionPolicy.too_short``): False after stopping because
        the conversions do not pay, or could not.  The graphs that were reused stay, unless a warm graph
        call was measured no faster than eager."""
        policy, ledger = self.policy, self.ledger
        short = policy.too_short(ledger)
        if short is not None:
            self.note(_reason(Code.TOO_SHORT, "its eager runs are too short for a graph to pay; running as written"))
            policy.give_up_on_shortness(short)
            entries.drop(lambda e: True)  # no graph of it is faster than its Python
            return False
        account = policy.whole_run(ledger)
        if not account.stop:
            return True
        self.note(_reason(Code.NO_PAYBACK, "its conversions cost more than they saved; running eagerly"))
        policy.give_up_on_cost(account)
        graph, eager = ledger.graph_per_call(), ledger.eager_per_call()
        slower = graph is not None and eager is not None and graph >= eager
        entries.drop(lambda e: slower or e.counters.hits <= 1)
        return False

    def _converted(self) -> Callable | Failed | SplitAt:
        """The converted function; or the statement to split at, or why it failed (for good,
        but for Janus's own failure)."""
        fn, location = self.fn, None
        found = support.Unsupported(_reason(Code.DO_NOT_CONVERT, "marked janus.do_not_convert")) \
            if support.marked_do_not_convert(fn) else support.unsupported(fn)
        if found is None:
            try:
                self.source = convert_source(fn)
                return convert(fn)
            except ConversionError as e:
                reason = e.reason
            except Exception as e:  # noqa: BLE001 - Janus's own failure: never the user's exception
                bug = _reason(Code.JANUS_BUG, f"converting failed inside Janus: {summary(e)}")
                self.note(bug)
                self.policy.converted(False)
                return Failed(Why(bug))
        else:
            reason, line = found.reason, found.line
            location = None if line is None else f"{os.path.basename(fn.__code__.co_filename)}:{line}"
            if self.may_break and line is not None and found.statement:
                self.note(derived(reason, f"cannot convert line {line}: {reason}; splitting there"))
                self.policy.converted(False)
                return SplitAt(BreakSite(line, reason))
        self.note(derived(reason, f"cannot convert: {reason}"))
        self.policy.give_up(reason, "It contains a construct Janus does not convert; see janus.explain(f).", location)
        return Failed(Why(reason, location, permanent=True))

    def _after_failed_trace(self, error: Exception, plan: TracePlan, fed: frozenset) -> TracePlan | Outcome:
        """The plan of the next trace after ``error`` (``fed``: the NumPy arrays the trace
        fed); or, when there is none, what the conversion came to."""
        if isinstance(error, Restart):
            revised = error.revise(plan)
            if revised is not None:
                if error.note:
                    self.note(_reason(Code.REPLANNED, error.note))
                return revised
            if isinstance(error, Regroup):
                error = ConversionError("recursive calls on trees changed between traces", code=Code.TREE_RECURSION)
        elif not (isinstance(error, ConversionError) and error.permanent):
            fallback = plan.arrays_fallback(fed)
            if fallback is not None:
                return fallback
        outcome = self._failure(error, trace_location(error) or None)
        if isinstance(outcome, SplitAt) or isinstance(outcome, Failed) and outcome.why.permanent:
            return outcome
        if (plan.relaxed or plan.fed) and not self.policy.gave_up:
            return plan.specialized()  # once more, specialized on this call's values
        if isinstance(error, ConversionError):  # a construct Janus refuses, not an error eager raises too
            site = self._break_site(error, error.reason)
            if site is not None:
                return SplitAt(site)
        return outcome

    def _failure(self, error: Exception, where: str | None) -> Failed | SplitAt | RaisesAsEager:
        """What a trace that failed with ``error`` (no restart) says, noted for explain."""
        if isinstance(error, StateBeforeAssertion):
            failure = derived(error.reason, f"trace failed: {error.reason} (an assert in the code)")
            self.note(failure)
            return Failed(Why(failure, where))
        if isinstance(error, ConversionError):
            self.note(derived(error.reason, f"trace failed{_at(where)}: {error.reason}"))
            if not error.permanent:
                return Failed(Why(error.reason, where))
            site = self._break_site(error, error.reason)
            if site is not None:
                return SplitAt(site)
            self.policy.give_up(error.reason, "It reaches code Janus never converts; see janus.explain(f).", where)
            return Failed(Why(error.reason, where, permanent=True))
        if isinstance(error, Restart):
            self.note(_reason(Code.RESTARTS, f"trace failed{_at(where)}: an unexpected restart ({type(error).__name__})"))
            return Failed(Why(_reason(Code.RESTARTS, f"an unexpected restart ({type(error).__name__})"), where))
        # eager will raise it (or not) for real
        self.note(_reason(Code.RAISES_AS_EAGER, f"trace raised{_at(where)} {summary(error)}"))
        why = Why(_reason(Code.RAISES_AS_EAGER, f"tracing it raised {summary(error)}"), where)
        check = getattr(error, RAISED_UNDER, None)
        if check is None:
            return Failed(why)
        line = self._own_line(error) if self.may_break and not self._unsplittable() else None
        return RaisesAsEager(why, Raised(type(error), str(error), check, line=line))

    def _break_site(self, error: BaseException, reason: str) -> BreakSite | None:
        """A trace failed in a statement of the function's own code: that statement will run
        in Python, the rest in graph segments (``janus.driver.segments``); None: it cannot."""
        if not self.may_break or isinstance(error, (UndefinedValueError, NotYet)):  # eager raises / a later call converts
            return None
        line = self._own_line(error)
        if line is None or self._unsplittable():
            return None
        return BreakSite(line, reason)

    def _own_line(self, error: BaseException) -> int | None:
        """The innermost line of the function's own code ``error`` passed through."""
        codes = own_codes(self.fn)
        line = None
        tb = error.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code in codes:
                line = tb.tb_lineno
            tb = tb.tb_next
        return line

    def _unsplittable(self) -> str | None:
        """Why the function cannot be split at a break (None: it can), once per function."""
        if self._why_unsplittable is None:
            node, _, _, _ = function_ast(self.fn)
            self._why_unsplittable = unsplittable_reason(node, self.fn.__qualname__) or ""
            if self._why_unsplittable:
                self.note(_reason(Code.UNSPLITTABLE, f"not split at graph breaks: {self._why_unsplittable}"))
        return self._why_unsplittable or None


def _kind_of_call(args: tuple, kwargs: dict) -> tuple:
    """What a call's arguments are, as far as a trace could specialize on them cheaply."""
    def kind(v: Any) -> Any:
        if hasattr(type(v), "dtype") and hasattr(type(v), "shape"):  # the type's: UNDEF raises on any attribute
            return (str(v.dtype), tuple(v.shape))
        if type(v) in (int, float, bool, str, type(None)):
            return v
        return type(v).__qualname__
    return tuple(kind(v) for v in args) + tuple((k, kind(v)) for k, v in sorted(kwargs.items()))


def _at(where: str | None) -> str:
    return f" at {where}" if where else ""


def trace_location(e: BaseException) -> str:
    """``file.py:LINE``: the user's line where converted code was when ``e`` was raised."""
    where = ""
    tb = e.__traceback__
    while tb is not None:
        if is_converted_code(tb.tb_frame.f_code):
            where = f"{os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno}"
        tb = tb.tb_next
    return where


def _specialized_on(entry: CacheEntry) -> str:
    """``; specialized on: ...``: the first guards of a new graph, for its log line."""
    guards = entry.report.guards
    if not guards:
        return ""
    more = f" (+{len(guards) - 3} more)" if len(guards) > 3 else ""
    return "; specialized on: " + "; ".join(g.description for g in guards[:3]) + more
