"""What converted code leaves for the graph run to check, and what its handlers let through.

* :func:`assertion`: an assertion op; when it fails the run aborts and Janus re-runs eagerly.
  Every assertion names an assumption (a speculation, or that a raising side of a branch
  is not taken) except the user's own ``assert`` (:func:`assert_`).
* :func:`speculate_branch`, :func:`speculate_trips`: what the profile lets a trace assume
  about a tensor-dependent branch or loop (``janus.trace.speculation``), checked by assertions.
* :func:`caught`: the first call of every ``except`` handler of converted code.
"""
from __future__ import annotations

import os
from typing import Any, Callable

import tensorflow as tf

from janus.convert.registry import is_converted_code
from janus.convert.sites import SiteInfo
from janus.errors import ConversionError, InternalSignal
from janus.reporting.codes import Code
from janus.lowering.dunders import truth_operand
from janus.lowering.truth import is_tensor, to_bool
from janus.trace import aborts, speculation
from janus.trace.active import current
from janus_profiler import usercode

USER_ASSERT_MESSAGE = f"{aborts.marker(aborts.CheckKind.USER_ASSERT)} assert statement failed"


def assertion(pred: tf.Tensor, message: str, assumption: Any = None) -> Any:
    """An assertion op (returned) the graph run must pass; its failure makes Janus re-run eagerly.

    ``assumption`` is the speculation it checks (None for the user's own ``assert``).
    """
    return current().assert_that(pred, message, assumption)


def assert_(cond: Any, message: Callable[[], Any] | None = None) -> None:
    """The ``assert`` statement.

    On a tensor it is an assertion op without an assumption: when it fails, the run aborts
    (nothing is committed) and the eager re-run raises the ``AssertionError`` with the
    user's message.  Nothing was assumed, so the graph stays: it is right for every call
    whose assert holds.
    """
    cond = truth_operand(cond)
    if not is_tensor(cond):
        if not cond:
            raise AssertionError(message()) if message is not None else AssertionError
        return
    assertion(to_bool(cond), USER_ASSERT_MESSAGE)


# -- speculation ------------------------------------------------------------------
def speculate_branch(cond: Any, site: SiteInfo | None) -> bool | None:
    """Assume the profiled outcome of a one-sided tensor branch, checked by an assertion."""
    ctx = current()
    value = ctx.checks.speculator.branch(site) if ctx is not None and ctx.checks.speculator is not None else None
    if value is None:
        return None
    assumption = ctx.checks.assume(site, speculation.BRANCH, value)
    pred = to_bool(cond)
    assertion(pred if value else tf.logical_not(pred), assumption.message, assumption)
    return value


def speculate_trips(site: SiteInfo | None) -> Any:
    """The assumed trip count of a tensor-dependent loop (an assumption), or None."""
    ctx = current()
    n = ctx.checks.speculator.trips(site) if ctx is not None and ctx.checks.speculator is not None else None
    if n is None:
        return None
    return ctx.checks.assume(site, speculation.TRIPS, n)


# -- exceptions -----------------------------------------------------------------------
_JANUS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def caught(error: BaseException) -> None:
    """At the top of every ``except`` handler of converted code: re-raise what it must not catch.

    Janus's own errors pass through (the conversion fails or retraces, as it would without
    the ``try``).  An exception raised inside library code while tracing (a shape error of a
    TF op, a Keras check) is a graph-construction error: eager raises another one, or
    none, at run time, so the conversion fails and the call runs eagerly.
    """
    if isinstance(error, InternalSignal):
        raise error
    tb = error.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not (is_converted_code(tb.tb_frame.f_code) or usercode.is_user_file(filename)
                or os.path.realpath(filename).startswith(_JANUS_DIR + os.sep)):
            raise ConversionError(f"an except clause catches {type(error).__name__} raised by library code while "
                                  f"the graph was built ({os.path.basename(filename)}); eager may raise another error",
                                  code=Code.EXCEPT_LIBRARY)
        tb = tb.tb_next
