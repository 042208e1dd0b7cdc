"""Settings read from the environment (and their defaults)."""
import os

DEFAULT_PROFILE_CALLS = 3
MAX_CACHE_ENTRIES = 8
MAX_CONVERSIONS = 12


def disabled() -> bool:
    """``JANUS_DISABLE=1`` turns every Janus function into its plain eager self."""
    return os.environ.get("JANUS_DISABLE", "") not in ("", "0", "false", "False")


def profile_calls() -> int:
    """Eager (profiled) calls before the first conversion: ``JANUS_PROFILE_CALLS``."""
    value = os.environ.get("JANUS_PROFILE_CALLS")
    if value is None or value == "":
        return DEFAULT_PROFILE_CALLS
    try:
        return max(0, int(value))
    except ValueError:
        raise ValueError(f"JANUS_PROFILE_CALLS must be a whole number, got {value!r}") from None


def profiling() -> bool:
    """Eager calls run under the bytecode profiler unless ``JANUS_PROFILE=0``."""
    return os.environ.get("JANUS_PROFILE", "1") not in ("0", "false", "False")


DEFAULT_TAKEOVER_SAMPLE_MS = 10.0


def takeover_sample_seconds() -> float:
    """How often the hook looks for running training steps on Python 3.11:
    ``JANUS_TAKEOVER_SAMPLE_MS`` (milliseconds, default 10; shorter finds short steps
    sooner and costs more)."""
    value = os.environ.get("JANUS_TAKEOVER_SAMPLE_MS")
    if value is None or value == "":
        return DEFAULT_TAKEOVER_SAMPLE_MS / 1000
    try:
        ms = float(value)
    except ValueError:
        raise ValueError(f"JANUS_TAKEOVER_SAMPLE_MS must be a number of milliseconds, got {value!r}") from None
    if ms <= 0:
        raise ValueError(f"JANUS_TAKEOVER_SAMPLE_MS must be positive, got {value!r}")
    return ms / 1000


def subtree_reuse() -> bool:
    """``JANUS_SUBTREE_REUSE=1``: recursion over trees computes identical subtrees of one
    call once.  Off by default: it sums gradients in another order than eager (results
    agree to round-off, not bitwise) and measured no faster (``docs/recursion.md``)."""
    value = os.environ.get("JANUS_SUBTREE_REUSE", "0")
    if value not in ("0", "1", "true", "false", "True", "False", ""):
        raise ValueError(f"JANUS_SUBTREE_REUSE must be 0 or 1, got {value!r}")
    return value not in ("0", "false", "False")


def jit_compile() -> bool | None:
    """``JANUS_JIT_COMPILE``: XLA for the functions that leave ``jit_compile`` unset.
    ``1``: always (shape-specialized graphs); ``0``: never; unset or ``auto``: measured
    per graph (``docs/xla.md``)."""
    value = os.environ.get("JANUS_JIT_COMPILE", "auto")
    if value in ("", "auto"):
        return None
    if value in ("1", "true", "True"):
        return True
    if value in ("0", "false", "False"):
        return False
    raise ValueError(f"JANUS_JIT_COMPILE must be 0, 1 or auto, got {value!r}")


# XLA by measured cost (janus.driver.xla_choice): the timed calls that run both graphs,
# the shortest plain run worth trying XLA on, and the gain XLA must show.
XLA_TRIAL_RUNS = 5
XLA_MIN_RUN_MS = 0.3
XLA_MIN_GAIN = 0.05
