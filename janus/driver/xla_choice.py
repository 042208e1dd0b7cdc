"""XLA chosen by measured cost: one cache entry's trial of its XLA variant.

With ``jit_compile=None`` (the default) a new graph runs plain first.  Once warm, its
runs are timed; if a run takes long enough for XLA to matter, Janus traces the same
call again with XLA clusters (``janus.trace.xla``), runs that variant once untimed (it
compiles), then alternates plain and XLA runs, timing each, and keeps the XLA graph only
if the median of its runs beats the plain median by ``config.XLA_MIN_GAIN``.
Alternating keeps a drifting machine from favouring whichever ran second.

XLA is not tried where it would break a promise: with a global seed set or op
determinism on, the user asked for eager's numbers, and XLA's fused kernels round
differently (the draws themselves stay outside XLA and are eager's in any case).
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from janus import _tf_private, config


@dataclass
class XlaDecision:
    """What Janus decided about XLA for one graph, and the timings behind it."""

    mode: str  # "on" (jit_compile=True), "off" (False) or "auto" (measured)
    chosen: bool | None = None  # None while the trial runs
    why: str = ""
    plain_ms: list[float] = field(default_factory=list)
    xla_ms: list[float] = field(default_factory=list)
    variant: Any = None  # the XLA entry under trial
    rebuild: Any = None  # traces a call again with XLA clusters: (args, kwargs) -> entry
    warm: bool = False  # the variant's untimed first run is done

    @property
    def done(self) -> bool:
        return self.chosen is not None

    def describe(self, xla_ops: int) -> str:
        if self.mode == "off":
            return "off (jit_compile=False)"
        if self.mode == "on":
            return (f"on (jit_compile=True): {xla_ops} ops in XLA clusters" if xla_ops
                    else "on (jit_compile=True), but no op qualified: " + self.why)
        timing = ""
        if self.xla_ms:
            timing = (f": {_median(self.xla_ms):.3f} ms with XLA, {_median(self.plain_ms):.3f} ms without "
                      f"(medians of {len(self.xla_ms)} and {len(self.plain_ms)} alternating runs)")
        if self.chosen is None:
            return f"measuring ({len(self.plain_ms)} plain, {len(self.xla_ms)} XLA runs timed)"
        if self.chosen:
            return f"chosen by measurement{timing}; {xla_ops} ops in XLA clusters"
        return f"not chosen: {self.why}{timing}"


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def start(mode: bool | None) -> XlaDecision:
    """The decision record of a new graph built in ``mode`` (``jit_compile``)."""
    if mode is True:
        return XlaDecision("on", chosen=True)
    if mode is False:
        return XlaDecision("off", chosen=False)
    decision = XlaDecision("auto")
    if _tf_private.global_seed() is not None or _tf_private.op_determinism_enabled():
        decision.chosen = False
        decision.why = ("a global seed is set (or op determinism is on): the program asked for eager's numbers, "
                        "and XLA's fused kernels round differently")
    return decision


def wants_variant(decision: XlaDecision) -> bool:
    """Are the plain runs timed, and long enough to try XLA?  (Ends the trial if too short.)"""
    if decision.done or decision.variant is not None or len(decision.plain_ms) < 3:
        return False
    if _median(decision.plain_ms) < config.XLA_MIN_RUN_MS:
        decision.chosen = False
        decision.why = (f"a run takes {_median(decision.plain_ms):.3f} ms, shorter than "
                        f"{config.XLA_MIN_RUN_MS} ms: too little for XLA to gain")
        return False
    return True


def next_runs_variant(decision: XlaDecision) -> bool:
    """Should the next run be the XLA variant's?  (Its untimed first run, then alternating.)"""
    if decision.variant is None or decision.done:
        return False
    return not decision.warm or len(decision.xla_ms) < len(decision.plain_ms) - 3 + 1


def record(decision: XlaDecision, on_variant: bool, seconds: float) -> None:
    """One successful run's time; decides once both sides have their runs."""
    ms = seconds * 1e3
    if on_variant:
        if not decision.warm:
            decision.warm = True
            return
        decision.xla_ms.append(ms)
    elif decision.variant is None or decision.warm:
        decision.plain_ms.append(ms)
    if len(decision.xla_ms) >= config.XLA_TRIAL_RUNS and len(decision.plain_ms) >= config.XLA_TRIAL_RUNS + 3:
        decision.plain_ms = decision.plain_ms[3:]  # the paired runs only: the first three chose to try
        faster = _median(decision.xla_ms) < (1 - config.XLA_MIN_GAIN) * _median(decision.plain_ms)
        decision.chosen = faster
        if not faster:
            decision.why = f"XLA was not at least {config.XLA_MIN_GAIN:.0%} faster"


def give_up(decision: XlaDecision, why: str) -> None:
    decision.chosen = False
    decision.why = why
    decision.variant = None
