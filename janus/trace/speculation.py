"""Where Janus speculates: the profile decides what a trace may assume.

The converter tags every ``if``, conditional expression, ``while`` and ``for`` of the
user's source with a :class:`SiteInfo`.  When, while tracing, such a site turns out
to depend on a tensor, the operators ask the :class:`Speculator`:

* a branch that went only one way in every profiled call is assumed to go that way
  again (only that side is traced, and an assertion op checks the condition);
* a loop that ran the same number of times in every profiled call is unrolled that
  many times (assertions check the condition held for each iteration and fails
  after the last, or that the length matched).

Each speculation is an :class:`Assumption` with an id; its :class:`AssumptionKind` says how
it reads and what a failure bans.
A failed assertion names its id; that site is then banned for the function and the
next conversion keeps it dynamic (``tf.cond`` / ``tf.while_loop``).

Four run-time checks are assumptions too, though no profile suggests them: that a
side of a tensor branch which raises while tracing is not taken (:data:`NOT_RAISING`),
that a Python int the graph computes fits int32 where TensorFlow converts it
(:data:`INT32`: eager would make an int64 tensor otherwise), that an index of a list
whose length the graph computes is in range (:data:`LIST_INDEX`: eager raises
``IndexError``), and that the operands of a NumPy operation the graph computes are where
TensorFlow gives NumPy's bits (:data:`NUMPY_RANGE`).  They get ids the same way;
once one failed, :meth:`Speculator.check` refuses it and the conversion that would
need it fails (the calls run eagerly).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from janus import config
from janus.convert.sites import SiteInfo
from janus.trace import aborts

_ids = itertools.count(1)


def _place(a: "Assumption") -> str:
    return f"at {a.site.where} `{a.site.text}`" if a.site is not None else f"({a.where})"


def _detail(a: "Assumption") -> str:
    return f" (`{a.detail}`)" if a.detail else ""


@dataclass(frozen=True)
class AssumptionKind:
    """What an :class:`Assumption` is about, and every sentence Janus says of it.

    ``speculative``: the profile suggests it (a failure bans the site: the next conversion
    keeps it dynamic); otherwise it is a run-time check, and a failure bans that check at
    that place.  ``rare``: how a failure reads when it is a call eager runs its own way (it
    raises, or NumPy computes what the graph cannot), kept as rare while the check holds
    more often than it fails (``janus.driver.aborted``), or None.  ``failed_before``: why a
    conversion that needs the check again fails.
    """

    name: str
    speculative: bool
    describe: Callable[["Assumption"], str]
    failed_before: str = ""
    rare: str | None = None


BRANCH = AssumptionKind(
    "branch", True, lambda a: f"branch at {a.site.where} `{a.site.text}` assumed {a.value}")
TRIPS = AssumptionKind(
    "trips", True, lambda a: f"loop at {a.site.where} `{a.site.text}` assumed {a.value} iterations")
NOT_RAISING = AssumptionKind(
    "not_raising", False,
    lambda a: f"branch {_place(a)} assumed not to take its {a.value} side, which raises {a.detail}",
    failed_before="a side of a tensor-dependent branch raises, and it was taken",
    rare="a side that raises was taken")
INT32 = AssumptionKind(
    "int32", False,
    lambda a: f"a Python int the graph computes in {a.where} fits int32 where TensorFlow converts it{_detail(a)}",
    failed_before="a Python int the graph computes did not fit int32 where TensorFlow converts it")
LIST_INDEX = AssumptionKind(
    "list_index", False,
    lambda a: f"an index of a list whose length the graph computes in {a.where} is in range{_detail(a)}",
    failed_before="an index of a list whose length the graph computes was out of range",
    rare="a list index was out of range")
NUMPY_RANGE = AssumptionKind(
    "numpy_range", False,
    lambda a: f"the operands of a NumPy operation the graph computes in {a.where} are in the range where "
              f"TensorFlow computes NumPy's bits{_detail(a)}",
    failed_before="the operands of a NumPy operation left the range where TensorFlow computes NumPy's bits",
    rare="a NumPy operation's operands left the range the graph computes it in")


@dataclass
class Assumption:
    """One speculation (or run-time check) a graph depends on.

    ``site``: the user's ``if``/loop it is about, when known; ``where``: a readable place
    for assumptions without a site; ``detail``: extra words of the description.
    """

    id: int
    site: SiteInfo | None
    kind: AssumptionKind
    value: Any
    held: int = 0
    failed: int = 0
    where: str = ""
    detail: str = ""

    @property
    def ban(self) -> Any:
        """What a failure of this assumption forbids the next conversions to assume."""
        if self.kind.speculative:
            return self.site.key
        return (self.kind.name, self.site.key if self.site is not None else self.where, self.value)

    @property
    def description(self) -> str:
        return self.kind.describe(self)

    @property
    def message(self) -> str:
        """Text of the assertion op: names the assumption when it fails (``janus.trace.aborts``)."""
        return f"{aborts.marker(aborts.CheckKind.ASSUMPTION, self.id)} {self.description}"


class Speculator:
    """Answers, per site, what the profile allows a trace to assume."""

    def __init__(self, profile: Any, banned: Iterable[Any] = (), registry: dict | None = None,
                 numpy_values: set | None = None, trips: bool = True, tensor_values: set | None = None,
                 never_values: set | None = None, no_islands: set | None = None):
        self.profile = profile
        # False: assume no loop's trip count (a trace made at once after a miss, whose new
        # shapes or numbers may change counts the profile has not seen change yet)
        self.speculate_trips = trips
        self.banned = set(banned)
        self.registry = registry if registry is not None else {}
        # from the trace's plan (janus.graphs.plan): NumPy array arguments not to feed (the
        # function reads them with NumPy), kept as Python values, guarded by value
        # (janus.trace.arrays); tensor inputs specialized by value (Python needs values made
        # of them: janus.trace.known_values), and those no longer specialized; methods not
        # to run as Python islands (a trace used their arrays as NumPy: janus.lowering.islands)
        self.numpy_values = numpy_values if numpy_values is not None else set()
        self.tensor_values = tensor_values if tensor_values is not None else set()
        self.never_values = never_values if never_values is not None else set()
        self.no_islands = no_islands if no_islands is not None else set()

    def _allowed(self, site: SiteInfo | None) -> bool:
        return site is not None and self.profile is not None and site.key not in self.banned

    def branch(self, site: SiteInfo | None) -> bool | None:
        """The only outcome the branch ever had, or None."""
        if not self._allowed(site):
            return None
        outcomes = self.profile.branch_outcomes(site.key)
        if len(outcomes) == 1:
            return bool(next(iter(outcomes)))
        return None

    def trips(self, site: SiteInfo | None) -> int | None:
        """The only trip count the loop ever had (if small enough to unroll), or None."""
        if not self.speculate_trips or not self._allowed(site):
            return None
        counts = self.profile.trip_counts(site.key)
        if len(counts) == 1:
            n = next(iter(counts))
            if 0 <= n <= config.LIMITS.max_unroll:
                return n
        return None

    def assumption(self, site: SiteInfo, kind: AssumptionKind, value: Any) -> Assumption:
        """The (shared, counted) assumption object for this speculation."""
        key = (site.key, kind.name, value)
        found = self.registry.get(key)
        if found is None:
            found = self.registry[key] = Assumption(next(_ids), site, kind, value)
        return found

    def check(self, kind: AssumptionKind, site: SiteInfo | None, value: Any, where: str = "", detail: str = "") \
            -> Assumption | None:
        """The assumption of a run-time check (:data:`NOT_RAISING`, :data:`INT32`, :data:`LIST_INDEX`,
        :data:`NUMPY_RANGE`), or None when it failed before (its ban is recorded) and must not be
        assumed again."""
        key = (kind.name, site.key if site is not None else where, value)
        found = self.registry.get(key)
        if found is None:
            found = Assumption(next(_ids), site, kind, value, where=where, detail=detail)
        if found.ban in self.banned:
            return None
        self.registry[key] = found
        return found
