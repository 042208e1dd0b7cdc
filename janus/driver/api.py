"""The decorators: ``janus.function`` (run a function through Janus) and
``janus.do_not_convert`` (never convert it)."""
from __future__ import annotations

import operator
import types
from typing import Callable

from janus import config
from janus.convert import support
from janus.driver.function import BoundJanusFunction, JanusFunction
from janus.driver.options import Options
from janus.driver.logs import configure_logging


def do_not_convert(f: Callable) -> Callable:
    """Mark ``f`` so that Janus never converts it: ``janus.function(f)`` and the GradientTape
    hook leave it plain, and a Janus function whose call reaches it runs eagerly (Janus runs
    whole functions, so the caller runs eagerly too; ``janus.explain`` names ``f``).
    Returns ``f`` itself (a Janus function: its plain Python function), marked."""
    if isinstance(f, (staticmethod, classmethod)):
        do_not_convert(f.__func__)
        return f
    jf = getattr(f, "__janus_function__", None)
    if isinstance(jf, JanusFunction):
        f = jf.python_function if not isinstance(f, BoundJanusFunction) else types.MethodType(jf.python_function,
                                                                                                f.__self__)
    inner = f.__func__ if isinstance(f, types.MethodType) else f
    if not isinstance(inner, types.FunctionType):
        raise TypeError(f"janus.do_not_convert expects a Python function or method, got {type(f).__name__}")
    setattr(inner, support.DO_NOT_CONVERT, True)
    return f


def function(fn: Callable | None = None, *, profile_calls: int | None = None, speculate: bool = True,
             jit_compile: bool | None = None, strict: bool | None = None):
    """Decorator: run ``fn`` through Janus (``JANUS_DISABLE=1`` leaves it untouched).

    ``profile_calls``: eager, profiled calls before the first conversion (a whole number
    >= 0; default 3, or ``JANUS_PROFILE_CALLS``).  ``speculate=False`` keeps every
    tensor-dependent branch and loop dynamic (``tf.cond`` / ``tf.while_loop``): the
    conservative conversion.  ``jit_compile``: XLA clusters for the pure part of each
    graph (assertions and state writes stay outside them): True always, False never, None
    (default, or ``JANUS_JIT_COMPILE``) per graph, kept only if, run both ways on the same
    calls, XLA was faster and gave the same bits.  ``strict=True`` (default ``JANUS_STRICT``):
    a call that would fall back to eager (a construct Janus never converts, a failed
    conversion, a function Janus gave up on) raises :class:`GraphBreakError` instead; the
    profiled calls before a conversion and the eager re-run of an aborted graph run are not
    fallbacks.  A function marked :func:`do_not_convert` is returned unchanged.

    The options are checked here, when given (a TypeError or ValueError naming the option),
    so that a bad one never surfaces later from inside a call.
    """
    if profile_calls is not None:
        try:
            calls = None if isinstance(profile_calls, bool) else operator.index(profile_calls)
        except TypeError:
            calls = None
        if calls is None:
            raise TypeError(f"janus.function: profile_calls must be a whole number >= 0 or None, "
                            f"got {profile_calls!r}")
        if calls < 0:
            raise ValueError(f"janus.function: profile_calls must be a whole number >= 0, got {profile_calls!r}")
        profile_calls = calls
    if not isinstance(speculate, bool):
        raise TypeError(f"janus.function: speculate must be True or False, got {speculate!r}")
    if jit_compile is not None and not isinstance(jit_compile, bool):
        raise TypeError(f"janus.function: jit_compile must be True, False or None, got {jit_compile!r}")
    if strict is not None and not isinstance(strict, bool):
        raise TypeError(f"janus.function: strict must be True, False or None, got {strict!r}")
    configure_logging()
    options = Options(profile_calls, speculate, jit_compile, strict)

    def wrap(f: Callable):
        if config.disabled():
            return f
        if isinstance(f, (JanusFunction, BoundJanusFunction)):
            return f
        if support.marked_do_not_convert(f):
            return f
        if isinstance(f, types.MethodType):
            return JanusFunction(f.__func__, options).__get__(f.__self__)
        if not isinstance(f, types.FunctionType):
            raise TypeError(f"janus.function expects a Python function or method, got {type(f).__name__}")
        return JanusFunction(f, options)
    return wrap(fn) if fn is not None else wrap
