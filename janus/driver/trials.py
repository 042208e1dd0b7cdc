"""Every timing trial (a segment's graph against its code as written, whole calls with
segments as graphs against them as written, a graph with XLA against the plain one): a
:class:`Trial` records both sides' runs and gives one :class:`Verdict`; a candidate is kept
only if clearly faster (:func:`faster`)."""
from __future__ import annotations

import enum
import statistics
from typing import Sequence


class Side(enum.Enum):
    """Which way a timed run went."""

    CANDIDATE = "candidate"  # what Janus would like to run (a graph, XLA)
    BASELINE = "baseline"  # what runs otherwise (the code as written, the plain graph)


class Verdict(enum.Enum):
    """What a trial found."""

    UNDECIDED = "undecided"  # a side still wants runs
    KEEP = "keep"  # the candidate was clearly faster
    DROP = "drop"  # it was not: the baseline stays


def faster(candidate: Sequence[float], baseline: Sequence[float], min_gain: float) -> bool:
    """Were ``candidate``'s runs faster than ``baseline``'s, their median by more than
    ``min_gain`` of the baseline's?  (Medians: a run the machine delayed does not decide.)"""
    return statistics.median(candidate) < (1 - min_gain) * statistics.median(baseline)


class Trial:
    """``runs`` timed runs of each side (in any one unit), and the verdict once both have
    them: the candidate is kept if it beat the baseline by ``min_gain`` (:func:`faster`).
    A run recorded for a side that has its runs is not kept."""

    __slots__ = ("runs", "min_gain", "times")

    def __init__(self, runs: int, min_gain: float) -> None:
        self.runs = runs
        self.min_gain = min_gain
        self.times: dict[Side, list[float]] = {Side.CANDIDATE: [], Side.BASELINE: []}

    @property
    def candidate(self) -> list[float]:
        return self.times[Side.CANDIDATE]

    @property
    def baseline(self) -> list[float]:
        return self.times[Side.BASELINE]

    def record(self, side: Side, time: float) -> None:
        """One timed run of ``side`` (ignored once that side has its runs)."""
        if self.due(side):
            self.times[side].append(time)

    def due(self, side: Side) -> bool:
        """Does ``side`` still want runs?"""
        return len(self.times[side]) < self.runs

    @property
    def started(self) -> bool:
        """Some run was recorded."""
        return bool(self.candidate or self.baseline)

    @property
    def decided(self) -> bool:
        """Both sides have their runs."""
        return not self.due(Side.CANDIDATE) and not self.due(Side.BASELINE)

    def verdict(self) -> Verdict:
        """KEEP or DROP once decided, UNDECIDED before."""
        if not self.decided:
            return Verdict.UNDECIDED
        return Verdict.KEEP if faster(self.candidate, self.baseline, self.min_gain) else Verdict.DROP

    def medians(self) -> tuple[float, float]:
        """The candidate's and the baseline's median (of the runs so far; both sides must have one)."""
        return statistics.median(self.candidate), statistics.median(self.baseline)
