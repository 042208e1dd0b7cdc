"""The verdict of every timing trial (a segment's graph against its code as written, a
graph with XLA against the plain one): a candidate is kept only if clearly faster."""
from __future__ import annotations

import statistics
from typing import Sequence


def faster(candidate: Sequence[float], baseline: Sequence[float], min_gain: float) -> bool:
    """Were ``candidate``'s runs faster than ``baseline``'s, their median by more than
    ``min_gain`` of the baseline's?  (Medians: a run the machine delayed does not decide.)"""
    return statistics.median(candidate) < (1 - min_gain) * statistics.median(baseline)
