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
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Iterable

from janus.convert.sites import SiteInfo

MAX_UNROLL = 64
_ids = itertools.count(1)


@dataclass
class Assumption:
    """One speculation a graph depends on."""

    id: int
    site: SiteInfo
    kind: str
    value: Any
    held: int = 0
    failed: int = 0

    @property
    def description(self) -> str:
        if self.kind == "branch":
            return f"branch at {self.site.where} `{self.site.text}` assumed {self.value}"
        return f"loop at {self.site.where} `{self.site.text}` assumed {self.value} iterations"

    @property
    def message(self) -> str:
        """Text of the assertion op: names the assumption when it fails."""
        return f"janus assumption #{self.id}: {self.description}"


class Speculator:
    """Answers, per site, what the profile allows a trace to assume."""

    def __init__(self, profile: Any, banned: Iterable[Any] = (), registry: dict | None = None):
        self.profile = profile
        self.banned = set(banned)
        self.registry = registry if registry is not None else {}

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
        if not self._allowed(site):
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
