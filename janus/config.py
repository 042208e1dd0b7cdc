"""Settings read from the environment (and their defaults).

Every ``JANUS_*`` variable is read here, by one parser per kind: a switch accepts
``1/0``, ``true/false``, ``yes/no``, ``on/off`` (any case; unset or empty is the
default), and anything else is a :class:`ConfigError` naming the variable and what it
accepts, in one line.  ``python -m janus`` checks them all at start (:func:`check`).
"""
from __future__ import annotations

import math
import os

from janus.errors import UserFacingError

DEFAULT_PROFILE_CALLS = 3
MAX_CACHE_ENTRIES = 8
MAX_CONVERSIONS = 12
DEFAULT_TAKEOVER_SAMPLE_MS = 10.0
# What one trace may build (janus.trace.bounds): user functions inlined inside one another
# (a deeper recursion runs eagerly), and ops in all its graphs, branch and loop bodies
# included (JANUS_MAX_TRACE_OPS), checked where a user function is inlined and at every loop
# trip traced in Python; past either the trace is abandoned and the call runs eagerly.
MAX_INLINE_DEPTH = 64
DEFAULT_MAX_TRACE_OPS = 200_000

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
        return DEFAULT_PROFILE_CALLS
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
        return DEFAULT_MAX_TRACE_OPS
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


# The per-call log behind the report page and the timeline (janus.reporting.events): every call
# of the first TRACE_FULL_CALLS, then one in TRACE_SAMPLE_EVERY; at most TRACE_MAX_EVENTS kept.
TRACE_FULL_CALLS = 2_000
TRACE_SAMPLE_EVERY = 50
TRACE_MAX_EVENTS = 50_000


def takeover_sample_seconds() -> float:
    """How often the hook looks for running training steps on Python 3.11:
    ``JANUS_TAKEOVER_SAMPLE_MS`` (milliseconds, default 10; shorter finds short steps
    sooner and costs more)."""
    value = _raw("JANUS_TAKEOVER_SAMPLE_MS")
    if value is None:
        return DEFAULT_TAKEOVER_SAMPLE_MS / 1000
    try:
        ms = float(value)
    except ValueError:
        ms = math.nan
    if not (0 < ms < math.inf):
        raise ConfigError(f"JANUS_TAKEOVER_SAMPLE_MS must be a positive number of milliseconds, "
                          f"got {os.environ['JANUS_TAKEOVER_SAMPLE_MS']!r}")
    return ms / 1000


# The hook beyond tapes (janus.takeover.hot): a TensorFlow function without a tape is taken
# over at its HOT_CALLS-th call.  Counted, not timed, so that the same program is taken over
# at the same call on every machine.  20: functions called once or once per epoch (building
# the model, ``main``, an evaluation over a few epochs) stay as written, their profiled calls
# and conversion would never pay back; a function of a per-step loop (``sample_action`` at
# every environment step, thousands of calls) loses 20 calls of its run.  Tests set it lower.
HOT_CALLS = 20


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


# XLA by measured cost (janus.driver.xla_choice): the timed calls that run both graphs,
# the shortest plain run worth trying XLA on, and the gain XLA must show.
XLA_TRIAL_RUNS = 5
XLA_MIN_RUN_MS = 0.3
XLA_MIN_GAIN = 0.05

# A graph segment's trial (janus.driver.segments): its graph is kept only when it beats the
# code as written by this share of the time.  Five runs each way cannot tell a tie from a
# gain, and a tie lost costs more than it shows (the graph's backward function under a tape,
# which a segment's own time does not see).  Tests set it to force a verdict.
SEGMENT_MIN_GAIN = 0.05

# A `for` over a Python range whose `break` a tensor decides (an episode ending on the
# environment's `done`): up to this many items after the break became the graph's, each is a
# conditional of its own; a longer rest is one tf.while_loop (janus.lowering.loops.for_stmt),
# whose graph does not grow with the range.
UNROLLED_BREAK_ITEMS = 32

# Never slower than eager over a whole run (janus.driver.policy.ConversionPolicy.whole_run): a
# function stops converting once its conversions cannot bring the run back within this share
# of eager's total.  None turns the rule off (tests do, but for tests/test_whole_run.py: the rule
# weighs measured time).
DEFAULT_WHOLE_RUN_SLACK = 0.10
WHOLE_RUN_SLACK: float | None = DEFAULT_WHOLE_RUN_SLACK
