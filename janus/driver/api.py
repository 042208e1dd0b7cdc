"""The decorators: ``janus.function`` (run a function through Janus),
``janus.do_not_convert`` (never convert it) and ``janus.allow`` (convert a library's Python)."""
from __future__ import annotations

import operator
import types
from typing import Callable

from janus import config
from janus.convert import libraries, support
from janus.driver.function import BoundJanusFunction, JanusFunction
from janus.driver.options import Options
from janus.driver.logs import configure_logging


def do_not_convert(f: Callable) -> Callable:
    """Mark ``f`` so that Janus never converts it: ``janus.function(f)`` and the hook (tape
    steps, hot functions) leave it plain, and a Janus function whose call reaches it runs
    eagerly (Janus runs whole functions, so the caller runs eagerly too; ``janus.explain``
    names ``f``).
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


def allow(target: types.ModuleType | str | Callable) -> types.ModuleType | str | Callable:
    """Convert a library's Python the way Janus converts the user's: a module (or a module's
    name, loaded or not) with every function defined in it and its submodules, or one
    function (or method).  Without it a call from a Janus function into third-party Python
    makes the caller run eagerly ("callee not allow-listed").  Its source must pass the
    same checks as the user's; what Janus cannot convert runs eagerly, never differently.
    ``janus.do_not_convert(f)`` wins over it.  TensorFlow, the Keras family, NumPy, ``math``
    and ``operator`` are called as they are, and are no argument here (ValueError); some
    TensorFlow-ecosystem packages are allowed already (``janus.convert.libraries``).
    Call it before the functions that use the library run.  Returns ``target``."""
    inner = target.__func__ if isinstance(target, (staticmethod, classmethod, types.MethodType)) else target
    jf = getattr(inner, "__janus_function__", None)
    if isinstance(jf, JanusFunction):
        inner = jf.python_function
    if isinstance(inner, types.ModuleType):
        name = inner.__name__
    elif isinstance(inner, str) and all(part.isidentifier() for part in inner.split(".")):
        name = inner
    elif isinstance(inner, types.FunctionType):
        name = inner.__module__ or ""
    else:
        what = f"{inner!r}" if isinstance(inner, str) else type(inner).__name__
        raise TypeError(f"janus.allow expects a module, a module's name or a Python function or method, got {what}")
    root = libraries.as_is_root(name)
    if root is not None:
        raise ValueError(f"janus.allow: {name} is part of {root}, which Janus "
                         f"{'is' if root.startswith('janus') else 'calls as it is, unconverted'}")
    if isinstance(inner, types.FunctionType):
        libraries.allow_function(inner)
    else:
        libraries.allow_module(name)
    return target


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
