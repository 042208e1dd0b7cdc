"""Why a graph run aborted, as a typed outcome.

A kernel that fails inside a function call reaches Python as an ``OpError`` carrying only
the status message TensorFlow wrote: no field names the failing op, and an assertion op
cannot attach a payload.  So each assertion Janus makes carries a marker of its own in
that message, made by :func:`marker`: ``[janus check <kind> #<id>]``, the id being the
assumption's for a speculation.  :func:`classify` finds the marker (or, for an op that
is no assertion of Janus's, the user's line that created it) and returns what failed.
This module is the only one that reads an error's text.
"""
from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, Union

if TYPE_CHECKING:
    from janus.trace.speculation import Assumption


class CheckKind(enum.Enum):
    """What an assertion of a Janus graph checks."""

    ASSUMPTION = "assumption"  # a speculation or run-time check (janus.trace.speculation)
    USER_ASSERT = "assert"  # the user's own ``assert`` on a tensor
    SEEDS = "seeds"  # the run drew no more random seeds than were fed (janus.trace.seeds)


_PREFIX = "[janus check "


def marker(kind: CheckKind, ident: int = 0) -> str:
    """The text an assertion of ``kind`` carries, found again by :func:`classify`."""
    return f"{_PREFIX}{kind.value} #{ident}]"


@dataclass(frozen=True)
class AssumptionFailed:
    """An assumption of the graph did not hold on this call."""

    assumption: "Assumption"


@dataclass(frozen=True)
class AssertFailed:
    """The user's ``assert`` failed: the eager re-run raises its AssertionError."""


@dataclass(frozen=True)
class SeedsOverflowed:
    """The run made more random draws than seeds were reserved for it."""


@dataclass(frozen=True)
class OpFailed:
    """An op failed that is no check of Janus's (a bad index, a failed library assertion).

    ``frames``: ``(file, line)`` of the stack that created the op, innermost last;
    ``summary``: the error's type and first line."""

    frames: tuple[tuple[str, int], ...]
    summary: str

    def location(self, is_user_file: Callable[[str], bool]) -> str:
        """`` at file.py:LINE`` of the innermost frame in a user file (converted code
        carries the user's lines), or ``""``."""
        mine = [f for f in self.frames if is_user_file(f[0])]
        return f" at {os.path.basename(mine[-1][0])}:{mine[-1][1]}" if mine else ""


Abort = Union[AssumptionFailed, AssertFailed, SeedsOverflowed, OpFailed]


def classify(error: BaseException, assumptions: Iterable["Assumption"]) -> Abort:
    """What made the graph run raise ``error`` (``assumptions``: the graph's)."""
    text = str(error)
    start = text.find(_PREFIX)
    if start >= 0:
        kind_text, _, rest = text[start + len(_PREFIX):].partition(" #")
        ident = rest.partition("]")[0]
        kind = next((k for k in CheckKind if k.value == kind_text), None)
        if kind is CheckKind.SEEDS:
            return SeedsOverflowed()
        if kind is CheckKind.USER_ASSERT:
            return AssertFailed()
        if kind is CheckKind.ASSUMPTION and ident.isdigit():
            failed = next((a for a in assumptions if a.id == int(ident)), None)
            if failed is not None:
                return AssumptionFailed(failed)
    return OpFailed(_creation_frames(text), summary(error))


def first_line(error: BaseException, limit: int = 300) -> str:
    """The first line of an error's message (at most ``limit`` characters), to quote."""
    lines = str(error).strip().splitlines()
    return lines[0][:limit] if lines else ""


def summary(error: BaseException) -> str:
    """``Type: first line`` of an exception (at most 300 characters of the line)."""
    line = first_line(error)
    return f"{type(error).__name__}: {line}" if line else type(error).__name__


def _creation_frames(text: str) -> tuple[tuple[str, int], ...]:
    """The ``File "...", line N, in`` frames TensorFlow lists for the op that failed."""
    frames = []
    for chunk in text.split('File "')[1:]:
        path, sep, rest = chunk.partition('", line ')
        number = rest.partition(",")[0]
        if sep and number.isdigit():
            frames.append((path, int(number)))
    return tuple(frames)
