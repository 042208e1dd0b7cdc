"""Every exception class Janus defines, and their one root.

Two families.  Janus's own signals (:class:`InternalSignal`: ``ConversionError``, the
``Restart`` family, ...) never reach the user: a conversion or trace problem makes the call
run eagerly instead, and the converted code's ``except`` handlers let every internal signal
through (a user's ``except Exception`` must not swallow one).  The errors meant for the user
(:class:`GraphBreakError`, ``janus.config.ConfigError``) derive from :class:`UserFacingError`
and are caught like any other exception.
"""
from janus.reporting.codes import Code, Reason, tagged


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
    """The work in progress (a trace, a loop's trace, a tree plan) starts again with what this
    signal carries; each kind is caught by the one loop that retries it, a bounded number of
    times."""


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
