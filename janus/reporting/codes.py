"""Break and fallback codes: one stable code for every reason Janus gives for running
something in Python (a statement at a graph break, a call eagerly, a function for good).

Each :class:`Code` has one :class:`Entry` (title, what it means, a small example, the fix
and the knob): the break codes' in ``janus.reporting.break_entries``, the others' in
``janus.reporting.fallback_entries``, rendered into ``docs/breaks.md`` by
``janus.reporting.breaks_page`` and checked by ``tests/test_break_codes.py`` (every code
documented, every example producing its code).
A reason travels as a :class:`Reason`: its text (a ``str``, so messages read as before)
carrying its code, never parsed back from the words.  This module imports nothing of
Janus's and no TensorFlow: the converter reads it.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass


class Kind(enum.Enum):
    """Where the code leaves the program."""

    BREAK = "graph break or fallback"  # the statement runs in Python, or the call eagerly
    WHOLE = "whole function eagerly"  # no statement of it can be a graph segment
    GIVE_UP = "give-up"  # the function (or segment) runs as written from now on
    EAGER = "eager call"  # this call ran eagerly; the graphs stay
    NOTE = "note"  # the conversion changed course; nothing ran differently


class Code(str, enum.Enum):
    """A reason's stable code (``JB012``); the member's name says it in a word."""

    GENERATOR = "JB001"
    COROUTINE = "JB002"
    STATEMENT = "JB003"
    GLOBAL_NONLOCAL = "JB004"
    BUILTIN = "JB005"
    NO_SOURCE = "JB006"
    DO_NOT_CONVERT = "JB007"
    NOT_ALLOWED = "JB012"
    CONSTRUCTS = "JB013"
    TENSOR_VALUE = "JB014"
    PY_FUNCTION = "JB015"
    UNMODELED_VALUE = "JB016"
    ATTRIBUTE_HOOK = "JB017"
    PROTOCOL = "JB018"
    CONTEXT_MANAGER = "JB019"
    EXCEPT_LIBRARY = "JB020"
    TENSOR_BRANCH = "JB021"
    TENSOR_LOOP = "JB022"
    STATE_IN_TENSOR_FLOW = "JB023"
    RANDOM = "JB024"
    DATASET = "JB025"
    GRAPH_LIST = "JB026"
    TREE_RECURSION = "JB027"
    TRACE_TOO_LARGE = "JB028"
    NOT_LOADED = "JB029"
    LIBRARY_EFFECT = "JB030"
    LEAVES_GRAPH = "JB031"
    CREATES_VARIABLE = "JB032"
    STRING_FORMAT = "JB033"
    UNKNOWN_SHAPE = "JB034"
    UNDEFINED = "JB035"
    ISLAND = "JB036"
    DISTRIBUTED = "JB037"
    TYPE_QUERY = "JB038"
    MAPPING = "JB039"
    FAILED_BEFORE = "JB040"
    TAPE_OUTSIDE = "JB041"
    NEEDS_EAGER = "JB042"
    TENSOR_ARRAY = "JB043"
    BUDGET = "JB050"
    NEVER_REUSED = "JB051"
    FAILED_TWICE = "JB052"
    ALWAYS_ABORTS = "JB053"
    TOO_MANY_BREAKS = "JB054"
    UNSPLITTABLE = "JB055"
    RESTARTS = "JB056"
    JANUS_BUG = "JB057"
    RAISES_AS_EAGER = "JB058"
    NO_PAYBACK = "JB059"
    GUARD_MISS = "JB060"
    ASSUMPTION_FAILED = "JB061"
    RUN_ABORTED = "JB062"
    IN_REPLICA = "JB063"
    BUSY = "JB064"
    OTHER_WORKER = "JB065"
    REPLANNED = "JB066"
    SEGMENT_TRIAL = "JB067"
    TOO_SHORT = "JB068"
    DISABLED = "JB070"
    NOT_RUN = "JB071"

    def __str__(self) -> str:
        return self.value


class Reason(str):
    """A reason's words with its code: equal to its words (messages and tests read them),
    its code in ``.code``.  Composing one into longer words keeps the code: :func:`derived`."""

    __slots__ = ("code",)

    def __new__(cls, text: str, code: Code) -> "Reason":
        self = super().__new__(cls, text)
        self.code = code
        return self

    def __reduce__(self):
        return Reason, (str(self), self.code)


def reason(code: Code, text: str) -> Reason:
    """``text`` carrying ``code``."""
    return Reason(text, code)


def code_of(text: object, default: Code | None = None) -> Code | None:
    """The code ``text`` carries (``default`` when it is a plain string)."""
    return getattr(text, "code", None) or default


def derived(inner: object, text: str, default: Code = Code.JANUS_BUG) -> Reason:
    """``text`` (built around ``inner``'s words) carrying ``inner``'s code."""
    return Reason(text, code_of(inner, default))


def tagged(text: object) -> str:
    """``text [JB014]``: the words with their code, as messages and ``janus.explain`` show them."""
    code = code_of(text)
    return f"{text} [{code.value}]" if code is not None else str(text)


@dataclass(frozen=True)
class Entry:
    """One code's page in ``docs/breaks.md``.  ``example``: a program (``janus``, ``tf``,
    ``np`` imported) whose run gives the code, or None when it needs what a test cannot
    make (``why_no_example``)."""

    code: Code
    kind: Kind
    title: str
    meaning: str
    fix: str
    knob: str
    example: str | None
    why_no_example: str = ""

    @property
    def anchor(self) -> str:
        return self.code.value.lower()


EAGER_SEMANTICS = "Nothing to do: this is eager's semantics."
ALLOW = "`janus.do_not_convert(f)` on the function keeps it plain (no attempt, no message)"
STRICT = "`strict=True` / `JANUS_STRICT=1` raises `janus.GraphBreakError` naming this code instead"
NO_KNOB = "none: this is how Janus keeps eager's results"


def page(code: Code, kind: Kind, title: str, meaning: str, fix: str, knob: str, example: str | None,
       why_no_example: str = "") -> Entry:
    return Entry(code, kind, title, meaning, fix, knob, example.strip("\n") if example else None, why_no_example)
