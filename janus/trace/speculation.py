"""Where Janus speculates: the profile decides what a trace may assume.

The converter tags every ``if``, conditional expression, ``while`` and ``for`` of the
user's source with a :class:`SiteInfo`.  When, while tracing, such a site turns out
to depend on a tensor, the operators ask the :class:`Speculator`:

* a branch that went only one way in every profiled call is assumed to go that way
  again (only that side is traced, and an assertion op checks the condition);
* a loop that ran the same number of times in every profiled call is unrolled that
  many times (assertions check the condition held for each iteration and fails
  after the last, or that the length matched).

Each speculation is an :class:`Assumption` with an id and a readable description.
A failed assertion names its id; that site is then banned for the function and the
next conversion keeps it dynamic (``tf.cond`` / ``tf.while_loop``).

Three run-time checks are assumptions too, though no profile suggests them: that a
side of a tensor branch which raises while tracing is not taken (``not_raising``),
that a Python int the graph computes fits int32 where TensorFlow converts it
(``int32``: eager would make an int64 tensor otherwise), and that an index of a list
whose length the graph computes is in range (``list_index``: eager raises
``IndexError``).  They get ids the same way;
once one failed, :meth:`Speculator.check` refuses it and the conversion that would
need it fails (the calls run eagerly).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Iterable

from janus.convert.sites import SiteInfo
from janus.trace import aborts

MAX_UNROLL = 64
_ids = itertools.count(1)


SPECULATIONS = ("branch", "trips")  # kinds the profile suggests; the others are run-time checks


@dataclass
class Assumption:
    """One speculation (or run-time check) a graph depends on.

    ``site``: the user's ``if``/loop it is about, when known; ``where``: a readable place
    for assumptions without a site; ``detail``: extra words of the description.
    """

    id: int
    site: SiteInfo | None
    kind: str
    value: Any
    held: int = 0
    failed: int = 0
    where: str = ""
    detail: str = ""

    @property
    def speculative(self) -> bool:
        """Suggested by the profile (rather than a check every conversion of the code makes)."""
        return self.kind in SPECULATIONS

    @property
    def ban(self) -> Any:
        """What a failure of this assumption forbids the next conversions to assume."""
        if self.kind in SPECULATIONS:
            return self.site.key
        return (self.kind, self.site.key if self.site is not None else self.where, self.value)

    @property
    def description(self) -> str:
        if self.kind == "branch":
            return f"branch at {self.site.where} `{self.site.text}` assumed {self.value}"
        if self.kind == "trips":
            return f"loop at {self.site.where} `{self.site.text}` assumed {self.value} iterations"
        if self.kind == "not_raising":
            place = f"at {self.site.where} `{self.site.text}`" if self.site is not None else f"({self.where})"
            return f"branch {place} assumed not to take its {self.value} side, which raises {self.detail}"
        if self.kind == "numpy_range":
            return f"the operands of a NumPy operation the graph computes in {self.where} are in the range where " \
                "TensorFlow computes NumPy's bits" + (f" (`{self.detail}`)" if self.detail else "")
        if self.kind == "list_index":
            return f"an index of a list whose length the graph computes in {self.where} is in range" \
                + (f" (`{self.detail}`)" if self.detail else "")
        return f"a Python int the graph computes in {self.where} fits int32 where TensorFlow converts it" \
            + (f" (`{self.detail}`)" if self.detail else "")

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
        # from the trace's plan (janus.build.plan): NumPy array arguments not to feed (the
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
            if 0 <= n <= MAX_UNROLL:
                return n
        return None

    def assumption(self, site: SiteInfo, kind: str, value: Any) -> Assumption:
        """The (shared, counted) assumption object for this speculation."""
        key = (site.key, kind, value)
        found = self.registry.get(key)
        if found is None:
            found = self.registry[key] = Assumption(next(_ids), site, kind, value)
        return found

    def check(self, kind: str, site: SiteInfo | None, value: Any, where: str = "", detail: str = "") \
            -> Assumption | None:
        """The assumption of a run-time check (``not_raising``, ``int32``, ``list_index``, ``numpy_range``), or None when it
        failed before (its ban is recorded) and must not be assumed again."""
        key = (kind, site.key if site is not None else where, value)
        found = self.registry.get(key)
        if found is None:
            found = Assumption(next(_ids), site, kind, value, where=where, detail=detail)
        if found.ban in self.banned:
            return None
        self.registry[key] = found
        return found
