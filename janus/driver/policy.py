"""The conversion policy of one Janus function: when to convert, what to relax, what
to stop assuming, and when to give up.

* **When**: after ``profile_calls`` eager (profiled) calls; after a guard miss of a
  working graph, at the next miss; after a failed attempt, after another full round.
* **What to relax**: a tensor (or a fed NumPy array) whose shape changed gets the most
  specific common shape (its changed dimensions become symbolic); a Python number whose
  value guard failed is fed to the next graph instead of being specialized again.
* **What not to feed**: a NumPy array argument a trace found read as NumPy stays a
  Python value, guarded by value, in every later trace (``numpy_values``); so does a
  small integer tensor whose values Python needed (``tensor_values``), and a Python
  number that decides where a recursion ends (``janus.trace.bounds``: fed, its recursion
  would be inlined without end), until the graphs made for its values go unreused
  (``janus.trace.known_values``).
* **What to stop assuming**: a speculation whose assertion failed is banned at its site.
* **What a conversion starts from**: a :class:`~janus.graphs.plan.TracePlan` made of all of
  the above (:meth:`ConversionPolicy.plan`); its traces revise it, and the policy learns
  from the last plan (:meth:`ConversionPolicy.adopt`).
* **When to give up**: at once for a construct that can never convert; after the
  conversion budget; when the last graphs built were never reused (the profile of
  misses predicts no reuse); or when its conversions do not pay for themselves over the
  whole run (:meth:`ConversionPolicy.whole_run`).  A function that gave up runs plainly
  eagerly, without profiling, and a warning says why and what the user can do, once.

**When a function stops converting because conversions do not pay** (:meth:`~ConversionPolicy.whole_run`,
asked whenever a conversion is due, after the budget and the never-reused rule).  With the
function's :class:`~janus.driver.ledger.Ledger`: ``T`` Janus's seconds for the calls so far
(profiled and eager runs, conversions with their failed traces and each new graph's first
run, XLA trials, graph runs, aborted ones too), ``X`` eager's estimated seconds for them (the
eager runs' own seconds, and for each other call ``E``, the median eager run), ``O = T - X``
the overhead (what converting cost, less what the warm graph calls saved against ``E``) and
``C`` the mean seconds of one conversion attempt, it stops converting when

* at least ``config.LIMITS.min_attempts_before_stopping`` (3) conversions were attempted: a function's
  first conversions always get their chance to pay back;
* ``O > whole_run_slack * X + C``: the run so far is more than ``config.LIMITS.whole_run_slack``
  (10%) over eager's, by more than one conversion — the credit of the newest graph, which
  has not had the time to pay back; so the conversions so far have, on the whole, cost more
  than their graphs saved, and the next one, made the same way, would not pay either;
* and the next conversion would be told nothing the last was not (no speculation banned,
  number fed, shape relaxed or tensor unspecialized since), and no tensor or recursion bound
  specialized by value has missed: a step up the specialization hierarchy (value, shape,
  rank, dtype) always goes ahead, and the never-reused rule decides when values stop being
  specialized (one graph for every tree); nor is a graph dropped for a banned assumption
  being rebuilt (``lost_to_ban``); the budget still bounds all of these.

A function converted once is never weighed again unless it misses; one whose graphs pay for
their conversions has ``O <= 0`` (a 2 s conversion saving 50 ms a call is even after 40
calls).  A stop keeps the graphs that were reused, unless a warm graph call was measured no
faster than eager (then every graph goes); the calls run plainly eagerly, unprofiled, so the
overhead stops growing while the slack grows with every call: the loss is bounded by what was
spent before the stop.
"""
from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import tensorflow as tf

from janus import config
from janus.commit.effects import Effect, SetAttr, When
from janus.driver.outcome import Why
from janus.reporting.codes import Code, reason, tagged
from janus.trace.guards import GuardKind
from janus.trace.sources import Arg, Attr, Item, KwArg, Source
from janus.graphs.plan import TracePlan
from janus.trace.speculation import Assumption, Speculator
from janus.trace.number_lists import ListKind
from janus.trace.scalars import FED_KINDS, is_eager_tensor
from janus.trace.values import is_eager_composite

if TYPE_CHECKING:
    from janus.driver.ledger import Ledger

log = logging.getLogger("janus")


@dataclass(frozen=True)
class WholeRun:
    """The whole-run account behind a due conversion (:meth:`ConversionPolicy.whole_run`):
    whether to stop converting, and the seconds the rule weighed."""

    stop: bool
    calls: int = 0
    spent: float = 0.0  # Janus's seconds for the calls so far
    eager: float = 0.0  # eager's estimated seconds for the same calls
    saved: float = 0.0  # what its warm graph calls saved against eager's per-call estimate
    grace: float = 0.0  # one conversion's mean seconds: the credit of the newest graph, yet to pay back
    allowance: float = 0.0  # what the overhead may be: the slack of eager's estimate, plus the grace

    @property
    def overhead(self) -> float:
        return self.spent - self.eager

    def describe(self) -> str:
        """The account in words, for the give-up reason."""
        return (f"{self.spent:.3f} s in {self.calls} calls against eager's estimated {self.eager:.3f} s (its graph "
                f"calls saved {self.saved:.3f} s): {self.overhead:.3f} s over eager, more than the {self.allowance:.3f} s "
                f"allowed ({config.LIMITS.whole_run_slack:.0%} of eager's time, plus one conversion's "
                f"{self.grace:.3f} s)")


class GuardMissed(NamedTuple):
    """What one failing guard says of a miss: whether the next trace covers it without a new
    profile (``explained``), and whether it pinned a number of the function's state."""

    explained: bool
    state_number: bool = False


class ConversionPolicy:
    """Per-function conversion state and decisions (the driver asks, the policy answers)."""

    def __init__(self, qualname: str, segment: bool = False):
        self.qualname = qualname
        self.segment = segment  # a graph segment of a function split at its breaks
        self.reset()

    def reset(self) -> None:
        self.conversions = 0
        self.failed_attempts = 0
        self.eager_since_attempt = 0
        self.last_attempt_failed = False
        self.explained_miss = False  # the last miss was a shape or value the next trace relaxes
        self.permanent: Why | None = None  # why it runs eagerly for good
        self.shapes: dict[Source, tf.TensorShape] = {}
        self.specs: dict[Source, tf.TypeSpec] = {}  # composite tensors: the spec widened over calls
        self.varying: dict[Source, type] = {}
        self.banned_sites: set = set()
        self.numpy_values: set[Source] = set()  # NumPy array arguments kept as values (janus.trace.arrays)
        # tensors specialized by value, those whose value guard failed, and those no longer
        # specialized (their values changed at every call: janus.trace.known_values)
        self.tensor_values: set[Source] = set()
        self.tensor_value_misses: set[Source] = set()
        self.never_values: set[Source] = set()
        self.no_islands: set = set()  # methods not run as Python islands (janus.lowering.islands)
        self.assumptions: dict = {}
        self.misses: Counter[str] = Counter()
        self.rebuilds = 0  # graphs dropped with a banned assumption, not yet rebuilt (whole_run)
        self._warned = False
        self._known_at_attempt = self._knowledge()  # what the last conversion attempt was told

    # -- when -----------------------------------------------------------------------
    @property
    def gave_up(self) -> bool:
        return self.permanent is not None

    @property
    def permanent_reason(self) -> str | None:
        return self.permanent.reason if self.permanent is not None else None

    def budget_exhausted(self) -> bool:
        return self.conversions + self.failed_attempts >= config.LIMITS.max_conversions

    def due(self, has_graphs: bool, profile_calls: int) -> bool:
        """Whether this call should convert (before the budget is checked)."""
        if self.gave_up or config.disabled():
            return False
        if has_graphs and not self.last_attempt_failed:
            # a miss the relaxation explains needs no new profile: convert on this call
            needed = 0 if self.explained_miss else 1
        else:
            needed = profile_calls
        return self.eager_since_attempt >= needed

    def converted(self, ok: bool) -> None:
        self._known_at_attempt = self._knowledge()
        self.rebuilds = max(0, self.rebuilds - 1)
        self.eager_since_attempt = 0
        self.explained_miss = False
        self.last_attempt_failed = not ok
        if ok:
            self.conversions += 1
        else:
            self.failed_attempts += 1

    def reuse_unlikely(self, entries: list) -> bool:
        """The newest graphs each served only the call that built them."""
        unused = config.LIMITS.unused_graphs_before_giving_up
        recent = entries[:unused]
        return len(recent) == unused and all(e.counters.hits <= 1 for e in recent)

    def whole_run(self, ledger: "Ledger") -> WholeRun:
        """Whether to stop converting because conversions do not pay over the whole run
        (the rule is in the module docstring); asked when a conversion is due."""
        limits = config.LIMITS
        attempts = self.conversions + self.failed_attempts
        per_call = ledger.eager_per_call()
        if per_call is None or attempts < limits.min_attempts_before_stopping or limits.whole_run_slack is None:
            return WholeRun(False)
        spent, eager = ledger.total, ledger.eager_estimate()
        saved = per_call * ledger.graph_calls - ledger.graph_seconds
        grace = ledger.conversion_seconds / attempts
        allowance = limits.whole_run_slack * eager + grace
        # over the allowance, with nothing to learn: the next trace would not be more general than
        # the last, and no tensor specialized by value is waiting to be unspecialized
        stop = spent - eager > allowance and self._knowledge() == self._known_at_attempt and \
            not self.tensor_value_misses & self.tensor_values and not self.rebuilds
        return WholeRun(stop, ledger.calls, spent, eager, saved, grace, allowance)

    def too_short(self, ledger: "Ledger") -> float | None:
        """Eager's seconds per call when they are under ``config.LIMITS.shortest_run_ms``: a
        graph call alone costs about as much, so no graph could pay back a conversion (None:
        not so, or the rule is off).  Asked whenever a conversion is due: the profiled runs
        before the first one are slower than the function's own (profiling costs), the runs
        as written after a segment's trial are not."""
        limit, per_call = config.LIMITS.shortest_run_ms, ledger.eager_per_call()
        if limit is None or per_call is None or per_call * 1000 >= limit:
            return None
        return per_call

    def give_up_on_shortness(self, per_call: float) -> None:
        """Never convert: eager's runs (``per_call`` seconds) are too short for a graph to pay."""
        self.give_up(reason(Code.TOO_SHORT, f"its eager runs take {per_call * 1000:.3f} ms, too short for a graph "
                            "to pay back a conversion"), "It runs as written; see janus.explain(f).", warn=False)

    def _knowledge(self) -> tuple:
        """What a trace is told beyond the profile, grown by misses: banned speculations, numbers
        fed, tensors no longer specialized by value, relaxed shapes and widened specs.  When it
        grew since the last attempt, the next trace is more general than the last."""
        return (len(self.banned_sites), len(self.varying), len(self.never_values),
                tuple(sorted(repr(item) for item in self.relaxed_shapes().items())))

    def give_up_on_cost(self, account: WholeRun) -> None:
        """Stop converting: the conversions cost more than they saved (``account``)."""
        self.give_up(reason(Code.NO_PAYBACK, f"its conversions cost more than they saved: {account.describe()}"),
                     "Values it specializes on change too often for a graph to pay back its conversion; "
                     "see janus.explain(f).")

    def record_eager_call(self) -> None:
        """A profiled eager call: one more toward the next conversion."""
        self.eager_since_attempt += 1

    def retry_next_call(self, profile_calls: int) -> None:
        """Convert again at the next call (a failed assumption, now banned, needs no new profile)."""
        self.eager_since_attempt = profile_calls

    # -- what to stop assuming --------------------------------------------------------
    def ban(self, assumption: Assumption) -> None:
        """Never assume again what ``assumption`` assumed (its site, or its check's value)."""
        self.banned_sites.add(assumption.ban)

    def lost_to_ban(self, graphs: int) -> None:
        """``graphs`` cached graphs were dropped for making a banned assumption: as many
        conversions rebuild them without the whole-run rule weighing them (they served calls;
        the ban, not values that keep changing, made them go)."""
        self.rebuilds += graphs

    def plan(self, fn: Any, history: list, speculate: bool, args: tuple, kwargs: dict, xla: bool) -> TracePlan:
        """The plan a conversion starts from: what this policy learned so far (the shapes it
        relaxes, the numbers it feeds, what it no longer assumes or makes)."""
        return TracePlan(relaxed=self.relaxed_shapes(), fed=self.fed_scalars(fn, history, speculate, args, kwargs),
                         xla=xla, banned=frozenset(self.banned_sites), numpy_values=frozenset(self.numpy_values),
                         tensor_values=frozenset(self.tensor_values), never_values=frozenset(self.never_values),
                         no_islands=frozenset(self.no_islands))

    def adopt(self, plan: TracePlan) -> None:
        """Learn what a conversion's traces learned: the revisions of its last ``plan``."""
        self.banned_sites |= plan.banned
        self.numpy_values |= plan.numpy_values
        self.tensor_values |= plan.tensor_values
        self.no_islands |= plan.no_islands

    def speculator(self, profile: Any, plan: TracePlan) -> Speculator:
        """What a trace under ``plan`` may assume: what ``profile`` saw (None: nothing), minus
        what the plan bans; assumptions shared across this function's traces through one
        registry (by id).  No trip count is assumed in a conversion made at once after a miss."""
        return Speculator(profile, plan.banned, self.assumptions, set(plan.numpy_values),
                          trips=not (self.explained_miss and self.eager_since_attempt == 0),
                          tensor_values=set(plan.tensor_values), never_values=set(plan.never_values),
                          no_islands=set(plan.no_islands))

    def stop_specializing_values(self) -> set[Source]:
        """Stop specializing by value the tensors whose value guards failed (the newest graphs,
        one per value, were never reused); what Python needs of them becomes a graph break."""
        stopped = self.tensor_value_misses & self.tensor_values
        self.tensor_values -= stopped
        self.never_values |= stopped
        self.tensor_value_misses.clear()
        return stopped

    # -- giving up ------------------------------------------------------------------
    def give_up(self, reason: str, advice: str, location: str | None = None, warn: bool = True) -> None:
        """Stop converting this function for good; warn once (unless not ``warn``: nothing is
        lost), naming the cause (and the user's line of it, ``location``, when known)."""
        if self.permanent is None:
            self.permanent = Why(reason, location, permanent=True)
        if warn and not self._warned:
            self._warned = True
            if self.segment:  # its statements go back into the driver: the other segments stay graphs
                log.warning("janus: %s, a graph segment, runs as written from now on: %s. %s", self.qualname, tagged(reason),
                            advice)
            else:
                log.warning("janus: %s runs eagerly from now on: %s. %s", self.qualname, tagged(reason), advice)

    def give_up_on_budget(self) -> None:
        miss = self.misses.most_common(1)
        cause = f"the guard that kept failing: {miss[0][0]}" if miss else "its conversions kept failing"
        self.give_up(reason(Code.BUDGET, f"it used its {config.LIMITS.max_conversions} conversions ({cause})"),
                     "If that value changes by design, pass it as a tensor; see janus.explain(f) for every reason.")

    # -- what to relax --------------------------------------------------------------
    def observe_shape(self, source: Source, shape: tf.TensorShape, before: tf.TensorShape | None = None) -> None:
        """Widen the shape known at ``source`` (an argument, or a heap tensor whose guard failed)."""
        seen = self.shapes.get(source, before)
        self.shapes[source] = shape if seen is None else _common_shape(seen, shape)

    def observe(self, source: Source, value: Any, before: Any = None) -> None:
        """Widen what is known at ``source`` by ``value``: a tensor's or NumPy array's shape,
        or a composite tensor's ``TypeSpec`` (``before``: what the failed graph assumed there)."""
        if is_eager_tensor(value) or isinstance(value, (np.ndarray, np.generic)):
            self.observe_shape(source, tf.TensorShape(value.shape), before)
            return
        spec = tf.type_spec_from_value(value)
        seen = self.specs.get(source, before)
        if seen is not None and seen != spec:
            spec = seen.most_specific_common_supertype([spec]) or spec
        self.specs[source] = spec

    def relaxed_shapes(self) -> dict[Source, tf.TensorShape | tf.TypeSpec]:
        """What to trace with at each source that varied: a relaxed shape for a tensor, a
        widened ``TypeSpec`` for a composite tensor."""
        relaxed: dict = {s: shape for s, shape in self.shapes.items() if shape.is_fully_defined() is False}
        return relaxed | self.specs

    def learn_from_miss(self, entry: Any, args: tuple, kwargs: dict, at_once: bool = True) -> str:
        """The first guard of ``entry`` that fails on this call; every Python int/float a
        failing guard pinned is fed next time, every changed heap tensor shape relaxed.
        When every failing guard is one of those — a number of state, not an argument, which
        may take its old value again — or an argument tensor's shape (the next trace relaxes
        it), the miss is *explained*: the call converts at once (unless not ``at_once``),
        without the profiled eager call a new profile would need, and assumes no loop's trip
        count (one may follow what changed; the profile has not seen it change)."""
        first = None
        explained, state_number = True, False
        graph, report = entry.graph, entry.report
        for guard in report.guards:
            if graph.holds(guard, args, kwargs):
                continue
            first = first or guard.description
            value = graph.value_at(guard.source, args, kwargs) if guard.source is not None else None
            if isinstance(guard.source, Item):  # an item of a list of NumPy numbers: the list is fed
                self._learn_list(guard.source.parent, graph.value_at(guard.source.parent, args, kwargs))
            missed = self._learn_from_guard(guard, value, report)
            explained = explained and missed.explained
            state_number = state_number or missed.state_number
        if state_number:
            self._feed_written_numbers(entry, args, kwargs)
        self.explained_miss = at_once and explained and first is not None
        first = first or "argument structure"
        self.misses[first] += 1
        return first

    def _learn_from_guard(self, guard: Any, value: Any, report: Any) -> "GuardMissed":
        """What one failing guard teaches: a number it pinned is fed, a heap tensor's shape or
        a composite's spec widened, a tensor specialized by value noted as missed."""
        source, kind = guard.source, guard.kind
        if kind is GuardKind.VALUE and type(value) in FED_KINDS:
            self.varying[source] = type(value)  # fed once no longer kept a value (tensor_values)
            if source in self.tensor_values and type(value) is not str:  # Python needs that str: a value for good
                self.tensor_value_misses.add(source)
            # an argument may take its old value again (its graph still serves it)
            return GuardMissed(explained=not source.is_argument, state_number=not source.is_argument)
        if kind is GuardKind.VALUE and self._learn_list(source, value):
            return GuardMissed(explained=False)
        if kind is GuardKind.VALUE and is_eager_tensor(value):
            self.tensor_value_misses.add(source)
            return GuardMissed(explained=False)
        if kind is GuardKind.TENSOR and tf.is_tensor(value) and not source.is_argument:
            self.observe_shape(source, value.shape, report.value_shape(source))
            return GuardMissed(explained=True)
        if kind is GuardKind.SPEC and is_eager_composite(value):
            self.observe(source, value, report.heap_specs.get(source))
            return GuardMissed(explained=True)
        # an argument tensor's new shape is relaxed by the next trace; anything else needs a profile
        return GuardMissed(explained=kind is GuardKind.TENSOR and is_eager_tensor(value)
                           and value.dtype == report.tensor_dtype(source))

    def _learn_list(self, source: Source, value: Any) -> bool:
        """A list argument of numbers whose values changed is fed from the next trace on,
        until Python needs its items (``tensor_values``)."""
        listed = ListKind.of(value)
        if listed is None or not isinstance(source, (Arg, KwArg)) or source in self.tensor_values:
            return False
        self.varying[source] = listed
        return True

    def _feed_written_numbers(self, entry: Any, args: tuple, kwargs: dict) -> None:
        """A number of state the function writes changes too: fed with the one that missed."""
        written = set(_written(entry.graph.effects))
        for guard in entry.report.guards:
            if guard.kind is GuardKind.VALUE and guard.source in written and guard.source not in self.varying:
                value = entry.graph.value_at(guard.source, args, kwargs)
                if type(value) in FED_KINDS:
                    self.varying[guard.source] = type(value)

    def fed_scalars(self, fn: Any, history: list, speculate: bool, args: tuple, kwargs: dict) -> dict[Source, type]:
        """Python ints, floats and strs to feed to the graph as tensors rather than specialize
        on (one graph, not one per value): state whose value guard failed, and arguments that
        had several values while profiling — or every numeric argument when not speculating;
        never a value kept a value (``tensor_values``: it decides where a recursion ends, or
        Python needs a string's value)."""
        fed = {s: kind for s, kind in self.varying.items() if s not in self.tensor_values}
        code = fn.__code__
        names = code.co_varnames[:code.co_argcount]
        items = [(Arg(i), names[i] if i < len(names) else None, v) for i, v in enumerate(args)]
        items += [(KwArg(n), n, v) for n, v in kwargs.items()]
        for source, name, value in items:
            if source in self.tensor_values:
                continue
            listed = ListKind.of(value)
            if listed is not None and len({_items(h[name]) for h in history if name in h}) > 1:
                fed[source] = listed  # a list of numbers whose values changed while profiling
            if type(value) not in FED_KINDS:
                continue
            seen = {(h[name].type, h[name].value) for h in history if name in h}
            if not speculate and type(value) is not str \
                    or len(seen) > 1 and all(t == type(value).__name__ for t, _ in seen):
                fed[source] = type(value)
        return fed


def _items(info: Any) -> tuple | None:
    """What the profile saw of a list argument's items (their types and values)."""
    return tuple((i.type, i.value) for i in info.items) if info.items is not None else None


def _written(effects: list[Effect]) -> list[Source]:
    """The attributes of Python state ``effects`` set (on either side of a conditional)."""
    out: list[Source] = []
    for e in effects:
        if isinstance(e, SetAttr):
            out.append(Attr(e.target, e.name))
        elif isinstance(e, When):
            out += _written(e.effects)
    return out


def _common_shape(a: tf.TensorShape, b: tf.TensorShape) -> tf.TensorShape:
    if a.rank != b.rank:
        return tf.TensorShape(None)
    return tf.TensorShape([x if x == y else None for x, y in zip(a.as_list(), b.as_list())])
