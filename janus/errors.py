"""Exceptions Janus raises internally.  None of them ever reaches the user: a
conversion or trace problem makes the call run eagerly instead."""


class JanusError(Exception):
    """The root of the exceptions Janus raises for its own signals (never the user's)."""


class ConversionError(JanusError):
    """The function (or this specialization of it) cannot be run as a graph.

    The message is the human-readable reason shown by ``janus.explain``.  ``permanent``:
    the reason holds whatever the arguments (a construct Janus never converts), so the
    function stops trying at once.
    """

    def __init__(self, message: str, permanent: bool = False):
        super().__init__(message)
        self.permanent = permanent


class UndefinedValueError(ConversionError):
    """Converted code touched a variable that eager Python would not have bound."""
