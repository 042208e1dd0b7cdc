"""What converting on a call came to, as values the driver reads in one ``match``.

:meth:`janus.driver.conversion.Conversion.run` returns one :data:`Outcome`:

* :class:`Converted` — a new cache entry, to run on this call;
* :class:`NotDue` — nothing was tried (the policy is still profiling, or gave up);
* :class:`Failed` — the conversion failed, and :class:`Why`;
* :class:`SplitAt` — a statement of the function runs in Python: split it there;
* :class:`RaisesAsEager` — the trace raised the user's exception: eager's run of this
  call decides whether the function raises so on such calls.

:class:`Why` is also what the policy keeps when the function runs eagerly for good.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Union

if TYPE_CHECKING:
    from janus.convert.splitting import BreakSite
    from janus.graphs.entry import CacheEntry


@dataclass(frozen=True)
class Why:
    """Why a call runs eagerly: the reason (a coded ``Reason``), the user's line it names
    (``file.py:LINE``) if known, and whether it holds for good."""

    reason: str
    location: str | None = None
    permanent: bool = False


@dataclass
class Raised:
    """A trace raised the user's exception (eager may raise it too): its kind, message, the
    guards the trace had checked when it raised, and the failed attempt (to count it as one
    if eager does not raise the same)."""

    kind: type
    message: str
    check: Callable[[tuple, dict], bool]
    attempt: tuple | None = None
    line: int | None = None  # the function's own line it was raised in, where a break may go


@dataclass(frozen=True)
class Converted:
    entry: "CacheEntry"


@dataclass(frozen=True)
class NotDue:
    pass


@dataclass(frozen=True)
class Failed:
    why: Why


@dataclass(frozen=True)
class SplitAt:
    site: "BreakSite"


@dataclass(frozen=True)
class RaisesAsEager:
    why: Why
    raised: Raised


NOT_DUE = NotDue()

Outcome = Union[Converted, NotDue, Failed, SplitAt, RaisesAsEager]
