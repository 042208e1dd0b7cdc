"""Every exception class Janus defines, and their one root.

Two families.  Janus's own signals (:class:`InternalSignal`: ``ConversionError``, the
``Restart`` family, ...) never reach the user: a conversion or trace problem makes the call
run eagerly instead, and the converted code's ``except`` handlers let every internal signal
through (a user's ``except Exception`` must not swallow one).  The errors meant for the user
(:class:`GraphBreakError`, ``janus.config.ConfigError``) derive from :class:`UserFacingError`
and are caught like any other exception.
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from janus.reporting.codes import Code, Reason, tagged

if TYPE_CHECKING:
    from janus.graphs.plan import TracePlan
    from janus.trace.sources import Source


class JanusError(Exception):
    """The root of every exception class Janus defines."""


class InternalSignal(JanusError):
    """Janus's own signal, never the user's: it passes through the user's ``except`` handlers
    in converted code and ends at Janus's driver (the call then runs eagerly, or is retried)."""

    code: Code = Code.JANUS_BUG  # the reason's code (janus.reporting.codes); a signal's own class or instance sets it

    @property
    def reason(self) -> str:
        """The human-readable reason (``janus.explain``): the signal's own message, carrying its code."""
        return Reason(str(self.args[0]) if self.args else type(self).__name__, self.code)


class UserFacingError(JanusError):
    """An error Janus raises to the user on purpose (bad configuration, strict mode)."""


class Restart(InternalSignal):
    """The trace starts again under the plan this signal asks for (:meth:`revise`): the
    conversion loop (``janus.driver.conversion``) applies it, a bounded number of times.
    Every kind of restart is defined here."""

    @property
    def note(self) -> str | None:
        """What was replanned, for ``janus.explain`` (None: nothing worth saying)."""
        return None

    def revise(self, plan: "TracePlan") -> "TracePlan | None":
        """The plan of the next trace (None: it cannot be followed, the conversion fails)."""
        raise NotImplementedError


class StateBeforeAssertion(Restart):
    """An assertion depends on a state update, so the graph cannot be all-or-nothing: the
    conversion traces again without ``assumptions`` (with none, it fails)."""

    code = Code.STATE_IN_TENSOR_FLOW

    def __init__(self, assumptions: list):
        self.assumptions = [a for a in assumptions if a is not None]
        super().__init__("an assertion checks a value computed after a state update")

    @property
    def note(self) -> str:
        return f"not speculated, checked after a state update: {'; '.join(a.description for a in self.assumptions)}"

    def revise(self, plan: "TracePlan") -> "TracePlan | None":
        if not self.assumptions:
            return None
        return plan.restarted(banned=plan.banned | {a.ban for a in self.assumptions})


class StateArraysKept(Restart):
    """A trace read arrays of Python state as NumPy: from the next trace on they are kept
    as values (``janus.trace.arrays``)."""

    code = Code.REPLANNED

    def __init__(self, sources: "set[Source]"):
        super().__init__(", ".join(sorted(s.label for s in sources)))
        self.sources = frozenset(sources)

    @property
    def note(self) -> str:
        return f"kept as NumPy values (read as NumPy): {self.args[0]}"

    def revise(self, plan: "TracePlan") -> "TracePlan":
        return plan.restarted(numpy_values=plan.numpy_values | self.sources)


class ArraysReadAsNumPy(Restart):
    """A trace used NumPy array arguments it fed as NumPy arrays: the next keeps those as
    values, and after a second such trace every array it fed."""

    code = Code.REPLANNED

    def __init__(self, sources: "set[Source]", fed: "frozenset[Source]"):
        super().__init__(", ".join(sorted(s.label for s in sources)))
        self.sources, self.fed = frozenset(sources), frozenset(fed)

    def revise(self, plan: "TracePlan") -> "TracePlan":
        kept = self.fed if plan.numpy_rereads else self.sources
        return replace(plan, numpy_values=plan.numpy_values | kept, numpy_rereads=plan.numpy_rereads + 1)


class TensorValuesKept(Restart):
    """A failed trace needed the values of tensors computed from these tensor inputs: the
    next trace specializes them by value (``janus.trace.known_values``)."""

    code = Code.REPLANNED

    def __init__(self, wanted: "dict[Source, str]"):
        super().__init__(", ".join(f"{s.label} ({why})" for s, why in wanted.items()))
        self.sources = frozenset(wanted)

    @property
    def note(self) -> str:
        return f"specialized by value (Python needs values made of them): {self.args[0]}"

    def revise(self, plan: "TracePlan") -> "TracePlan":
        # a number fed to the graph among them (a recursion's depth) is a value again
        return plan.restarted(tensor_values=plan.tensor_values | self.sources,
                              fed={s: kind for s, kind in plan.fed.items() if s not in self.sources})


class IslandsRefused(Restart):
    """A trace used an island's array as NumPy: the next trace does not make islands of
    these methods, so they are inlined or break as before (``janus.lowering.islands``)."""

    code = Code.REPLANNED

    def __init__(self, methods: "dict[Any, str]", described: str):
        super().__init__(described)
        self.methods = frozenset(methods)

    @property
    def note(self) -> str:
        return f"called as written, not as Python islands (their arrays are used as NumPy): {self.args[0]}"

    def revise(self, plan: "TracePlan") -> "TracePlan":
        return plan.restarted(no_islands=plan.no_islands | self.methods)


class Regroup(Restart):
    """Trace again, computing these roots (``{function: [sources]}``) in one forest, or
    (``False``) each root in a forest of its own; or inline the recursion of a function
    whose trees cannot be batched (``refused``: function -> why)."""

    code = Code.REPLANNED

    def __init__(self, grouping: dict | bool | None, refused: dict | None = None):
        super().__init__("retrace with the roots of recursive calls known")
        self.grouping = grouping
        self.refused = refused or {}

    def revise(self, plan: "TracePlan") -> "TracePlan | None":
        """First find the roots, then group them, then each alone (None: the trees changed
        between traces)."""
        if self.refused:
            return plan.restarted(refused={**plan.refused, **self.refused})
        if plan.grouping is None or plan.grouping and self.grouping is False:
            return plan.restarted(grouping=self.grouping)
        return None


class ConversionError(InternalSignal):
    """The function (or this specialization of it) cannot be run as a graph.

    The message is the human-readable reason shown by ``janus.explain``.  ``permanent``:
    the reason holds whatever the arguments (a construct Janus never converts), so the
    function stops trying at once.
    """

    def __init__(self, message: str, permanent: bool = False, code: Code | None = None):
        super().__init__(message)
        self.permanent = permanent
        self.code = getattr(message, "code", None) or code or type(self).code


class NotYet(ConversionError):
    """This call cannot run as a graph but a later one may (eager loads a module at this
    call): no graph break is made of it."""

    code = Code.NOT_LOADED


class TraceTooLarge(NotYet):
    """A trace grew past a bound of ``janus.config`` (user functions inlined too deep, too
    many ops built): it is abandoned and the call runs eagerly.  A call with other values
    (a shallower recursion) may fit, so no graph break is made of it."""

    code = Code.TRACE_TOO_LARGE


class UndefinedValueError(ConversionError):
    """Converted code touched a variable that eager Python would not have bound."""

    code = Code.UNDEFINED


class UndefinedAttributeError(UndefinedValueError, AttributeError):
    """An attribute of such a variable: an ``AttributeError`` too, so that library probes
    (``hasattr``, ``tf.is_tensor``) pass it by, as they pass any object without it."""


class GraphBreakError(UserFacingError):
    """A call of a strict Janus function (``janus.function(strict=True)`` or ``JANUS_STRICT=1``)
    could not run as a graph: instead of running it eagerly, Janus raised this (the call did
    not run).  ``function``: the function's qualified name; ``reason``: why (the construct,
    the conversion failure, or why Janus gave up); ``location``: ``file.py:LINE`` of the
    user's line, when known."""

    def __init__(self, function: str, reason: str, location: str | None = None):
        self.function = function
        self.reason = reason
        self.location = location
        where = f" (at {location})" if location else ""
        self.code: Code | None = getattr(reason, "code", None)
        super().__init__(f"{function} cannot run as a graph{where}: {tagged(reason)} [janus strict mode: "
                         f"janus.function(strict=True) or JANUS_STRICT=1 raises instead of running eagerly]")
