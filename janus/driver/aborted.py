"""What a function learns when one of its graph runs aborted (nothing was committed, and the
call re-runs eagerly): what failed (:mod:`janus.trace.aborts`) tells the policy what to stop
assuming, which graphs to drop, and when a graph itself cannot run — returned as one
:class:`Learned`."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from janus import config
from janus.commit import undo as undoing
from janus.convert.libraries import is_user_code_file
from janus.graphs.entry import CacheEntry
from janus.reporting.codes import Code, reason
from janus.trace import aborts

if TYPE_CHECKING:
    from janus.trace.speculation import Assumption


@dataclass(frozen=True)
class Learned:
    """What an aborted run taught the function (:meth:`JanusFunction._learn` applies it): a
    note for ``janus.explain``; an assumption never to make again (its graphs go, and the
    next call converts without it); or that the graph itself cannot run (it goes, and the
    function runs eagerly for good, ``retired``: why)."""

    note: str
    banned: "Assumption | None" = None
    retired: str | None = None


def learn_from_abort(entry: CacheEntry, error: BaseException) -> Learned:
    """What a run of ``entry`` that aborted with ``error`` teaches.  A failed assumption drops
    every graph that made it, and is never assumed again.  The user's ``assert`` failing is
    none: the graph stays (right whenever the assert holds); nor, while it is rare, is a
    raising side taken or a list index out of range."""
    if isinstance(error, undoing.Disturbed):
        return Learned(reason(Code.RUN_ABORTED, f"ran eagerly: {error.reason}"))
    match aborts.classify(error, entry.report.assumptions):
        case aborts.SeedsOverflowed():
            entry.graph.seeds.grow()
            return Learned(reason(Code.RUN_ABORTED, "the graph made more random draws than seeds were reserved; re-ran "
                                                    "eagerly, reserving more"))
        case aborts.AssertFailed():
            return Learned(reason(Code.RUN_ABORTED, "an assert statement failed in the graph; re-ran eagerly (graph kept)"))
        case aborts.OpFailed() as failed:
            note = reason(Code.RUN_ABORTED, f"graph run aborted{failed.location(is_user_code_file)}, re-ran eagerly: "
                                            f"{failed.summary}")
            if entry.counters.hits == 0 and entry.counters.failures >= config.LIMITS.retire_after_failed_runs:
                # never ran through: a graph TensorFlow cannot run, not an input eager also fails on
                return Learned(note, retired=reason(Code.ALWAYS_ABORTS, f"its graph failed on each of its "
                                                    f"{entry.counters.failures} runs ({failed.summary})"))
            return Learned(note)
        case aborts.AssumptionFailed(assumption=failed):
            failed.failed += 1
            if failed.kind.rare is not None and failed.failed <= failed.held:
                # a call eager runs its own way (it raises, or NumPy computes what the graph
                # cannot), rare while the check holds more often than it fails: the graph stays
                return Learned(reason(Code.RUN_ABORTED, f"{failed.kind.rare}, re-ran eagerly (graph kept): "
                                                        f"{failed.description}"))
            return Learned(reason(Code.ASSUMPTION_FAILED, f"assumption failed, re-ran eagerly: {failed.description}"),
                           banned=failed)
