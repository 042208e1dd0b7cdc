"""Settings read from the environment, and every limit Janus keeps (:data:`LIMITS`, the
defaults of the settings that override one).

Every ``JANUS_*`` variable is read here, by one parser per kind: a switch accepts
``1/0``, ``true/false``, ``yes/no``, ``on/off`` (any case; unset or empty is the
default), and anything else is a :class:`ConfigError` naming the variable and what it
accepts, in one line.  ``python -m janus`` checks them all at start (:func:`check`).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

from janus.errors import UserFacingError


@dataclass(frozen=True)
class Limits:
    """Every bound Janus keeps, in one place: how many, how long, how large.

    One field per limit, with what it bounds and why that value.  Modules read
    ``config.LIMITS.<field>`` when they use it (never a copy taken at import), so a test
    swaps the record: ``monkeypatch.setattr(config, "LIMITS", dataclasses.replace(
    config.LIMITS, max_unroll=3))``.  The ``JANUS_*`` settings that override a limit
    (:func:`profile_calls`, :func:`max_trace_ops`, :func:`takeover_sample_seconds`) take
    their defaults from here."""

    # -- profiling and conversion (janus.driver) --
    # Eager (profiled) calls before the first conversion (JANUS_PROFILE_CALLS): enough to
    # see which values change between calls, few enough to convert early.
    profile_calls: int = 3
    # Specialized graphs one function keeps (janus.driver.cache), newest first: past that,
    # the oldest goes, so a function's graphs do not grow without bound.
    max_cache_entries: int = 8
    # Conversions one function may make before it gives up and runs eagerly (the budget).
    max_conversions: int = 12
    # Traces one conversion may make (each restart revises the plan) before it fails.
    max_traces: int = 16
    # Kinds of call one function remembers to raise the user's exception while tracing.
    max_raising: int = 4
    # Graphs in a row that were never reused before the next miss: a sign the guards that
    # keep failing pin values that change on every call (janus.driver.policy).
    unused_graphs_before_giving_up: int = 3
    # Conversion attempts a function always gets before the whole-run rule may stop it (as
    # many as unused graphs it may build: a function whose graphs go unused gives that reason
    # first).
    min_attempts_before_stopping: int = 3
    # Never slower than eager over a whole run (ConversionPolicy.whole_run): a function stops
    # converting once its conversions cannot bring the run back within this share of eager's
    # total.  None turns the rule off (tests do, but for tests/test_whole_run.py: the rule
    # weighs measured time).
    whole_run_slack: float | None = 0.10
    # A function or segment whose eager runs take less than this (median, ms, profiled runs
    # included) is not converted: a graph call alone costs about as much (30 us on a quiet
    # machine, docs/costs.md), so its graph could not pay back a conversion of tens of ms.
    # None turns the rule off (tests do, but for tests/test_whole_run.py: it weighs measured time).
    shortest_run_ms: float | None = 0.05
    # Runs of a graph that never succeeded, each failing in an op (not an assumption), after
    # which the function gives up: the graph, not the input, is what fails (driver.aborted).
    retire_after_failed_runs: int = 3
    # The latest eager call times kept for the per-call estimate, their median
    # (janus.driver.ledger): one slow call does not move it, and old calls age out.
    eager_samples: int = 64

    # -- what one trace may build (janus.trace) --
    # User functions inlined inside one another (janus.trace.bounds); a deeper recursion
    # runs eagerly.
    max_inline_depth: int = 64
    # Ops in all of one trace's graphs, branch and loop bodies included (JANUS_MAX_TRACE_OPS):
    # well above a large model's training step; it keeps a runaway trace from taking the
    # machine's memory.  Past it the trace is abandoned and the call runs eagerly.
    max_trace_ops: int = 200_000
    # Iterations a loop may run in Python while tracing (janus.lowering.loops): past them the
    # conversion fails rather than unroll without end a loop that eager leaves by an exception
    # the trace assumes away, or build a graph that large.
    max_traced_iterations: int = 1_000
    # The largest trip count a loop the profile saw always run the same number of times is
    # unrolled at, under an assumption on the count (janus.trace.speculation); a longer one
    # stays a loop.
    max_unroll: int = 64
    # A `for` over a Python range whose `break` a tensor decides: up to this many items after
    # the break became the graph's, each is a conditional of its own; a longer rest is one
    # tf.while_loop (janus.lowering.loops.for_stmt), whose graph does not grow with the range.
    unrolled_break_items: int = 32
    # Elements of a tensor input that may be specialized by value (janus.trace.known_values).
    max_known_elements: int = 1024
    # Ops a constant fold or a search for its inputs visits before giving up (known_values).
    max_fold_ops: int = 256
    # Elements of a tensor computed while tracing to fold it (known_values): a larger one is
    # left to the graph.
    max_folded_elements: int = 1 << 16
    # Items of a Python list, tuple, dict, deque or array a trace reads item by item
    # (janus.trace.heap): a longer one fails the conversion (every item would be guarded).
    max_specialized_items: int = 256
    # How deep and how wide a call's arguments are searched for tensors fed to the graph
    # (janus.graphs.inputs): nested containers past these are not looked into.
    input_walk_depth: int = 4
    input_walk_items: int = 256
    # Objects and containers reachable from the TensorFlow and Keras objects a trace read,
    # whose Python state one guard holds unchanged (janus.trace.library_state): a trace that
    # reaches more fails (each call would compare them all).
    library_state_objects: int = 20_000
    # Output routers taken away from sys.stdout kept alive (janus.trace.output): a thread
    # may still write through one it read before.
    retired_kept: int = 256

    # -- recursion over trees (janus.lowering.trees) --
    # Tree heights a batched recursion handles (a graph unrolls one block per height);
    # higher trees run eagerly.
    max_tree_levels: int = 64
    # Kinds of node one recursion tells apart before it is not batched.
    max_tree_cases: int = 16

    # -- graph breaks (janus.driver.segments) --
    # Splits of a function and its segments, after which it runs eagerly as a whole.
    max_breaks: int = 8
    # Graph runs of a segment, then as many runs as written, to see which is faster (and the
    # whole calls each way of the confirmation under a tape).
    segment_trial_runs: int = 5
    # A segment's graph is kept only when it beats the code as written by this share of the
    # time.  Five runs each way cannot tell a tie from a gain, and a tie lost costs more than
    # it shows (the graph's backward function under a tape, which a segment's own time does
    # not see).  Tests set it to force a verdict.
    segment_min_gain: float = 0.05

    # -- XLA by measured cost (janus.driver.xla_choice, janus.trace.xla) --
    # Timed runs of the plain graph before deciding whether XLA is worth trying.
    xla_plain_runs: int = 3
    # The shortest plain run (median, ms) worth trying XLA on: under it, too little for XLA
    # to gain.
    xla_min_run_ms: float = 0.3
    # Timed calls that run both graphs (after the compiling one) before the verdict.
    xla_trial_runs: int = 5
    # The share of the plain graph's time XLA must save to be kept.
    xla_min_gain: float = 0.05
    # The fewest ops that compute in a group of marked ops for it to be marked: TensorFlow's
    # own auto-clustering drops clusters under 4 ops (``tf_xla_min_cluster_size``) but applies
    # no minimum to ops marked explicitly, as Janus marks them.
    min_cluster_work: int = 4

    # -- taking over unmodified programs (janus.takeover) --
    # How often (ms) the hook looks for running training steps on Python 3.11
    # (JANUS_TAKEOVER_SAMPLE_MS): shorter finds short steps sooner and costs more.
    takeover_sample_ms: float = 10.0
    # A traced main thread is asked again only after this long (s) (janus.takeover.redirect).
    parked_seconds: float = 0.5
    # A TensorFlow function without a tape is taken over at its hot_calls-th call
    # (janus.takeover.hot).  Counted, not timed, so that the same program is taken over at
    # the same call on every machine.  20: functions called once or once per epoch (building
    # the model, ``main``, an evaluation over a few epochs) stay as written, their profiled
    # calls and conversion would never pay back; a function of a per-step loop
    # (``sample_action`` at every environment step, thousands of calls) loses 20 calls of its
    # run.  Tests set it lower.
    hot_calls: int = 20

    # -- the per-call log behind the report page and the timeline (janus.reporting.events) --
    # Every call of the first trace_full_calls, then one in trace_sample_every; at most
    # trace_max_events kept.
    trace_full_calls: int = 2_000
    trace_sample_every: int = 50
    trace_max_events: int = 50_000


LIMITS = Limits()

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")
SWITCH_WORDS = "1/0, true/false, yes/no or on/off"


class ConfigError(UserFacingError, ValueError):
    """A ``JANUS_*`` variable holds a value its setting does not accept."""


def _raw(name: str) -> str | None:
    """The variable's value, stripped; None when unset or empty."""
    value = os.environ.get(name)
    if value is None or not value.strip():
        return None
    return value.strip()


def switch(name: str, default: bool) -> bool:
    """The on/off variable ``name`` (the one boolean parser of every ``JANUS_*`` switch)."""
    value = _raw(name)
    if value is None:
        return default
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise ConfigError(f"{name} must be {SWITCH_WORDS}, got {os.environ[name]!r}")


def disabled() -> bool:
    """``JANUS_DISABLE=1`` turns every Janus function into its plain eager self."""
    return switch("JANUS_DISABLE", False)


def profile_calls() -> int:
    """Eager (profiled) calls before the first conversion: ``JANUS_PROFILE_CALLS``."""
    value = _raw("JANUS_PROFILE_CALLS")
    if value is None:
        return LIMITS.profile_calls
    try:
        calls = int(value)
    except ValueError:
        calls = -1
    if calls < 0:
        raise ConfigError(f"JANUS_PROFILE_CALLS must be a whole number >= 0, got {os.environ['JANUS_PROFILE_CALLS']!r}")
    return calls


def max_trace_ops() -> int:
    """Ops one trace may build before it is abandoned (the call then runs eagerly):
    ``JANUS_MAX_TRACE_OPS``, a whole number >= 1 (default 200,000, well above a large
    model's training step; it keeps a runaway trace from taking the machine's memory)."""
    value = _raw("JANUS_MAX_TRACE_OPS")
    if value is None:
        return LIMITS.max_trace_ops
    try:
        ops = int(value)
    except ValueError:
        ops = 0
    if ops < 1:
        raise ConfigError(f"JANUS_MAX_TRACE_OPS must be a whole number >= 1, got {os.environ['JANUS_MAX_TRACE_OPS']!r}")
    return ops


def profiling() -> bool:
    """Eager calls run under the bytecode profiler unless ``JANUS_PROFILE=0``."""
    return switch("JANUS_PROFILE", True)


def report() -> bool:
    """``JANUS_REPORT=1``: ``python -m janus`` prints one line per Janus function at exit."""
    return switch("JANUS_REPORT", False)


def report_html() -> str | None:
    """``JANUS_REPORT_HTML=path``: write the report page (``janus.report``) there at exit."""
    return _raw("JANUS_REPORT_HTML")


def trace_path() -> str | None:
    """``JANUS_TRACE=path``: write the run's timeline there at exit (Chrome trace-event JSON)."""
    return _raw("JANUS_TRACE")


def takeover_sample_seconds() -> float:
    """How often the hook looks for running training steps on Python 3.11:
    ``JANUS_TAKEOVER_SAMPLE_MS`` (milliseconds, default 10; shorter finds short steps
    sooner and costs more)."""
    value = _raw("JANUS_TAKEOVER_SAMPLE_MS")
    if value is None:
        return LIMITS.takeover_sample_ms / 1000
    try:
        ms = float(value)
    except ValueError:
        ms = math.nan
    if not (0 < ms < math.inf):
        raise ConfigError(f"JANUS_TAKEOVER_SAMPLE_MS must be a positive number of milliseconds, "
                          f"got {os.environ['JANUS_TAKEOVER_SAMPLE_MS']!r}")
    return ms / 1000


def hot_functions() -> bool:
    """``JANUS_HOT_FUNCTIONS=0``: the hook takes over only functions that record a
    ``tf.GradientTape``, not TensorFlow functions without a tape called in a hot loop
    (``janus.enable(hot_functions=...)`` and ``python -m janus --tapes-only`` say it too)."""
    return switch("JANUS_HOT_FUNCTIONS", True)


def subtree_reuse() -> bool:
    """``JANUS_SUBTREE_REUSE=1``: recursion over trees computes identical subtrees of one
    call once.  Off by default: it sums gradients in another order than eager (results
    agree to round-off, not bitwise) and measured no faster (``docs/recursion.md``)."""
    return switch("JANUS_SUBTREE_REUSE", False)


def strict() -> bool:
    """``JANUS_STRICT=1``: every Janus function behaves as ``janus.function(strict=True)``
    (unless given ``strict=False``): a call that would fall back to eager raises
    ``janus.GraphBreakError`` instead — for tests and CI."""
    return switch("JANUS_STRICT", False)


LOG_LEVELS = ("debug", "info", "warning", "error")


def log_level() -> str | None:
    """``JANUS_LOG=info|debug`` (also ``warning``, ``error``): Janus configures the ``janus``
    logger with a handler on stderr at first use; ``info`` gives one line per conversion and
    give-up, ``debug`` also every note (why a call ran eagerly).  Unset: no handler added."""
    value = _raw("JANUS_LOG")
    if value is None:
        return None
    if value.lower() not in LOG_LEVELS:
        raise ConfigError(f"JANUS_LOG must be one of {', '.join(LOG_LEVELS)}, got {os.environ['JANUS_LOG']!r}")
    return value.lower()


def jit_compile() -> bool | None:
    """``JANUS_JIT_COMPILE``: XLA for the functions that leave ``jit_compile`` unset.
    ``1``: always (shape-specialized graphs); ``0``: never; unset or ``auto``: measured
    per graph (``docs/xla.md``)."""
    value = _raw("JANUS_JIT_COMPILE")
    if value is None or value.lower() == "auto":
        return None
    try:
        return switch("JANUS_JIT_COMPILE", False)
    except ConfigError:
        raise ConfigError(f"JANUS_JIT_COMPILE must be 0, 1 or auto (or true/false, yes/no, on/off), "
                          f"got {os.environ['JANUS_JIT_COMPILE']!r}") from None


# Every setting read from the environment, for :func:`check` (and the CLI's --help).
SETTINGS = {
    "JANUS_DISABLE": disabled,
    "JANUS_PROFILE_CALLS": profile_calls,
    "JANUS_PROFILE": profiling,
    "JANUS_MAX_TRACE_OPS": max_trace_ops,
    "JANUS_REPORT": report,
    "JANUS_TAKEOVER_SAMPLE_MS": takeover_sample_seconds,
    "JANUS_HOT_FUNCTIONS": hot_functions,
    "JANUS_SUBTREE_REUSE": subtree_reuse,
    "JANUS_JIT_COMPILE": jit_compile,
    "JANUS_STRICT": strict,
    "JANUS_LOG": log_level,
    "JANUS_REPORT_HTML": report_html,
    "JANUS_TRACE": trace_path,
}


def check() -> None:
    """Read every ``JANUS_*`` setting once: raise the first bad value's ``ConfigError``."""
    for read in SETTINGS.values():
        read()
