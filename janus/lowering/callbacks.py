"""The user's functions handed to library code or to builtins run converted.

``tf.map_fn(f, xs)``, ``sorted(xs, key=f)``, a Keras layer of the user's: the library
calls the user's code, which must be converted like any code of the step.  The wrappers
here take the call dispatcher (``janus.lowering.calls.call``) as an argument: it is the
module that calls them, and it runs each callback converted.
"""
from __future__ import annotations

import types
from typing import Any, Callable

import tensorflow as tf

from janus.lowering import branch_effects
from janus.trace import atomicity
from janus.convert.libraries import is_user_function, is_user_method, qualified_name
from janus.convert.registry import is_converted_function
from janus.errors import ConversionError
from janus.reporting.codes import Code
from janus.trace import active
from janus.trace.active import current

# Library functions that run Python while the graph runs: an aborted run could not take
# back what that Python did.
RUN_TIME_PYTHON = (tf.py_function, tf.numpy_function, tf.compat.v1.py_func)


def library_arguments(args: Any, library: Any, call: Callable[..., Any]) -> Any:
    """Arguments (a tuple or a dict) of a call of ``library``, with the user's functions
    (and functions of converted code, such as a lambda in the step) made callbacks that
    run converted through ``call``.

    Where the library calls one in a graph of its own (the body of ``tf.map_fn``, a branch
    of ``tf.cond``, a ``Dataset.map`` function), it runs a number of times only the graph
    knows: Python effects, random draws and variable writes there make the conversion
    fail rather than happen once at trace time.
    """
    def wrap(a: Any) -> Any:
        if not (is_user_function(a) or is_user_method(a) or is_converted_function(a)):
            return a
        site, ctx = tf.compat.v1.get_default_graph(), current()
        return lambda *x, **kw: _callback(a, site, ctx, library, x, kw, call)

    if isinstance(args, dict):
        return {k: wrap(v) for k, v in args.items()} if args else args
    return tuple(wrap(a) for a in args)


def _callback(fn: Any, site: Any, ctx: Any, library: Any, args: tuple, kwargs: dict,
              call: Callable[..., Any]) -> Any:
    if current() is not ctx:  # a thread of the library's (tf.distribute runs a replica per thread)
        previous = active.swap(ctx)
        try:
            return _callback(fn, site, ctx, library, args, kwargs, call)
        finally:
            active.swap(previous)
    graph = tf.compat.v1.get_default_graph()
    if graph is site:  # called while the library builds the caller's graph: as often as it runs
        return call(fn, *args, **kwargs)
    what = f"a function passed to {qualified_name(library)}"
    with branch_effects.tensor_dependent(ctx.log), ctx.seeds.forbidden(f"{what} draws random numbers"):
        out = call(fn, *args, **kwargs)
    if atomicity.graph_writes_state(graph, ctx.checks.writer_constructs):
        raise ConversionError(f"{what} changes a variable in a graph of its own", code=Code.LIBRARY_EFFECT)
    return out


def builtin_arguments(args: tuple, call: Callable[..., Any]) -> tuple:
    """User functions handed to builtins (``map``, ``sorted(key=...)``) are converted too."""
    return tuple(_wrap_one(a, call) for a in args)


def builtin_keywords(kwargs: dict, call: Callable[..., Any]) -> dict:
    """Keyword arguments of a builtin, like :func:`builtin_arguments`."""
    return {k: _wrap_one(v, call) for k, v in kwargs.items()} if kwargs else kwargs


def _wrap_one(a: Any, call: Callable[..., Any]) -> Any:
    if is_user_function(a) or is_user_method(a):
        return lambda *x, **kw: call(a, *x, **kw)
    return a


def user_layer_call(layer: Any, args: tuple, kwargs: dict) -> Any:
    """Call a user-defined Keras layer through Keras's ``__call__`` with its ``call`` converted.

    Keras's ``__call__`` propagates ``training`` and builds the layer; the user's
    ``call`` must still be converted, so it is shadowed on the instance for the call.
    """
    method = type(layer).call
    if not is_user_function(method):
        return layer(*args, **kwargs)
    if not layer.built:
        raise ConversionError(f"{type(layer).__qualname__} is not built yet", code=Code.LIBRARY_EFFECT)
    conv = types.MethodType(current().convert(method), layer)
    had = "call" in vars(layer)
    previous = vars(layer).get("call")
    object.__setattr__(layer, "call", conv)
    try:
        return layer(*args, **kwargs)
    finally:
        if had:
            object.__setattr__(layer, "call", previous)
        else:
            object.__delattr__(layer, "call")
