"""Calls made by converted code: inline user functions, allow-list the rest.

Every call in converted code goes through :func:`call`.  A user-defined function or
method is converted too and called in place, so its body becomes part of the same
graph (inlining); its globals and closure are read through the state helpers, so they
are guarded like the caller's.  A user method that draws from a NumPy generator its
object holds, and changes nothing else, runs in Python inside the graph instead, on a copy
of its object (a Python island: ``janus.lowering.islands``).  TensorFlow, Keras, NumPy (not its random module), the
``math`` module and a fixed set of builtins are called as they are (the allow-list:
``janus.convert.libraries``; a library's Python that ``janus.allow`` allowed is inlined
like the user's), builtins that need care on graph values through their
shims (``janus.lowering.builtin_shims``), methods of Python containers through
``janus.lowering.containers``, and the user's functions a library is handed run
converted (``janus.lowering.callbacks``).  Anything else (an unknown C extension, a
third-party or standard-library Python function not allowed, a constructor of a class
Janus cannot follow) makes the conversion fail, and the call runs eagerly.
"""
from __future__ import annotations

import collections
import dataclasses
import math
import operator
import os
import types
from typing import Any

import tensorflow as tf

from janus.convert.libraries import (
    ALLOWED_BUILTINS, is_allowed_library, is_user_function, is_user_method, module_of, qualified_name,
)
from janus.convert.registry import is_converted_function
from janus.errors import ConversionError
from janus.reporting.codes import Code
from janus.lowering import (
    builtin_shims, callbacks, containers, dunders, environments, islands, numpy_draws, random_ops, state,
    tensor_arrays,
)
from janus.lowering.graph_lists import GraphList
from janus.lowering.trees import recursion
from janus.trace import arrays, kinds
from janus.trace.active import current
from janus.lowering.trees.forest_plan import NodeView
from janus.trace.known_values import KnownValue
from janus.trace.mappings import EnvironView
from janus.trace.scalars import PyScalar, value_needed
from janus.trace.values import SymbolicShape, is_symbolic, is_user_class

_IMMUTABLE = (str, bytes, int, float, bool, tuple, frozenset, complex)


def converted(fn: types.FunctionType):
    """The converted code of a user function, inlined into the trace in progress."""
    return current().convert(fn)


def inline(fn: types.FunctionType, args: tuple, kwargs: dict) -> Any:
    """Call user function ``fn`` converted, in place; a recursion over a tree is run over
    the whole tree at once instead (``janus.lowering.trees.recursion``).  Inlining is bounded
    (``janus.trace.bounds``): in depth, in ops, and a recursion may not end on a fed number."""
    taken_over = next((c for c in fn.__code__.co_consts
                       if isinstance(getattr(c, "python_function", None), types.FunctionType)), None)
    if taken_over is not None:  # the hook's trampoline code (janus.takeover.redirect, .hot): the function as written
        fn = taken_over.python_function
    ctx = current()
    rec = ctx.recursion
    if rec is not None:
        out = rec.intercept(fn, args, kwargs)
        if out is not recursion.NOT_RECURSION:
            return out
    with ctx.bounds.inlining(fn):
        return converted(fn)(*args, **kwargs)


def call(f: Any, *args: Any, **kwargs: Any) -> Any:
    """``f(*args, **kwargs)`` in converted code: converted and inlined when it is the user's,
    called as it is when it is allowed, lowered when Janus models it, refused otherwise."""
    if is_converted_function(f):
        return f(*args, **kwargs)
    janus_fn = getattr(f, "__janus_function__", None)
    if janus_fn is not None:
        bound_self = getattr(f, "__self__", None)
        fn = janus_fn.python_function
        return inline(fn, (bound_self, *args) if bound_self is not None else args, kwargs)
    if f is print:
        return builtin_shims.print_(*args, **kwargs)
    if is_user_function(f):
        return inline(f, args, kwargs)
    rec = current().recursion
    if rec is not None and rec.active is not None:
        args, kwargs = _in_recursion(f, args, kwargs)
    if arrays.lowers(f, args, kwargs):  # NumPy on fed arrays, computed by the graph as NumPy would
        return arrays.lowered_call(f, args)
    if numpy_draws.is_generator_draw(f):  # np.random.rand(), rng.choice(...): an island of the graph (or a break)
        return numpy_draws.draw(f, args, kwargs)
    if f in random_ops.REPLACEMENTS:  # stateful random ops draw from fed seeds (janus.trace.seeds)
        return random_ops.REPLACEMENTS[f](*_shapes(args), **callbacks.builtin_keywords(_shapes(kwargs), call))
    if isinstance(f, types.MethodType):
        return _method(f, args, kwargs)
    return _other(f, args, kwargs)


def _other(f: Any, args: tuple, kwargs: dict) -> Any:
    """Any other callee: a builtin method of a container or an immutable value, a builtin
    Janus models, a class, a Keras layer or callable object of the user's, an allowed
    builtin or library function, an operator."""
    if isinstance(f, types.BuiltinMethodType) and kinds.is_container(f.__self__):
        return containers.container_method(f.__self__, f.__name__, args, kwargs)
    if isinstance(f, types.BuiltinMethodType) and type(f.__self__) in _IMMUTABLE:
        return builtin_shims.no_symbolic(f)(*args, **kwargs)
    if f in builtin_shims.SPECIAL:
        return builtin_shims.SPECIAL[f](*args, **kwargs)
    if f is collections.namedtuple:
        return _namedtuple(*args, **kwargs)
    if isinstance(f, type):
        return _class(f, args, kwargs)
    if isinstance(f, tf.keras.layers.Layer) and is_user_class(type(f)):
        return callbacks.user_layer_call(f, args, kwargs)
    if not isinstance(f, (types.FunctionType, types.BuiltinFunctionType)) and is_user_class(type(f)):
        method = getattr(type(f), "__call__", None)
        if is_user_function(method):
            return inline(method, (f, *args), kwargs)
        raise ConversionError(f"callee not allow-listed: {type(f).__qualname__} instance", permanent=True,
                              code=Code.NOT_ALLOWED)
    if f in ALLOWED_BUILTINS:
        return f(*callbacks.builtin_arguments(_protocols(f, args), call), **callbacks.builtin_keywords(kwargs, call))
    if is_allowed_library(f):
        return _library(f, args, kwargs)
    if f in vars(operator).values() or f in vars(math).values():
        return f(*_protocols(f, args), **callbacks.builtin_keywords(kwargs, call))
    raise _not_allowed(f, qualified_name(f))


def _in_recursion(f: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """The arguments of a call made while a recursion over trees is computed in batches."""
    if f not in builtin_shims.VIEW_CALLS and any(type(v) is NodeView for v in (*args, *kwargs.values())) \
            and not is_user_method(f):
        raise ConversionError(f"passes a tree node to {qualified_name(f)} during the recursion over it",
                              code=Code.TREE_RECURSION)
    # Nodes are computed in batches by TensorFlow's vectorizer, which batches a gather
    # from a variable's value but not from the variable (ResourceGather): pass the value.
    return tuple(_variable_value(v) for v in args), {k: _variable_value(v) for k, v in kwargs.items()}


def _method(f: types.MethodType, args: tuple, kwargs: dict) -> Any:
    """A bound method: Janus's own stand-ins as they are, a user method converted (or an
    island), a library method allowed as it is, a few refused for what they would do."""
    owner = f.__self__
    if isinstance(owner, (SymbolicShape, KnownValue, GraphList, EnvironView)):
        return f(*args, **kwargs)
    if isinstance(owner, tf.TensorArray):
        return tensor_arrays.method(owner, f.__name__, args, kwargs)
    if is_user_function(f.__func__):
        out = islands.island(f, args, kwargs)
        return inline(f.__func__, (owner, *args), kwargs) if out is islands.NOT_AN_ISLAND else out
    if f.__name__ == "numpy" and isinstance(owner, tf.Variable):
        raise ConversionError(".numpy() of a variable the graph reads", code=Code.TENSOR_VALUE)
    if isinstance(owner, tf.GradientTape) and owner not in current().tapes:
        # a tape recording eagerly, outside this graph (across a graph break): its gradient
        # of the graph's tensors would be None, eager's is not
        raise ConversionError("uses a tf.GradientTape recorded outside the graph", code=Code.TAPE_OUTSIDE)
    if isinstance(owner, tf.distribute.MultiWorkerMirroredStrategy):
        current().uses_collective(owner)
    if isinstance(owner, tf.distribute.experimental.ParameterServerStrategy):
        raise ConversionError("uses a ParameterServerStrategy, whose coordinator schedules tf.functions of "
                              "its own", permanent=True, code=Code.DISTRIBUTED)
    if environments.is_environment_method(f):  # env.step(action): an island of the graph (or a break)
        return environments.island(f, args, kwargs)
    if is_allowed_library(f.__func__) or is_allowed_library(owner) or _named_tuple_method(f):
        return f(*callbacks.library_arguments(_protocols(f, _shapes(args)), f, call),
                 **callbacks.library_arguments(_protocols(f, _shapes(kwargs)), f, call))
    raise _not_allowed(f.__func__, qualified_name(f))


def _class(f: type, args: tuple, kwargs: dict) -> Any:
    """A class called: an exception, an allowed builtin or library type, a named tuple or
    an extension type built as it is; a plain user class constructed in the trace."""
    if issubclass(f, BaseException) or not is_user_class(f) and f in ALLOWED_BUILTINS:
        return f(*callbacks.builtin_arguments(_protocols(f, args), call), **callbacks.builtin_keywords(kwargs, call))
    if issubclass(f, tuple) and hasattr(f, "_fields"):
        return f(*args, **kwargs)
    if issubclass(f, tf.experimental.ExtensionType) \
            and not any("__validate__" in vars(k) for k in f.__mro__ if is_user_class(k)):
        return f(*args, **kwargs)  # its generated __init__ only checks and stores the fields
    if not is_user_class(f) and is_allowed_library(f):
        return f(*args, **kwargs)
    if not is_user_class(f):
        raise ConversionError(f"constructs a {f.__qualname__} object", permanent=True, code=Code.CONSTRUCTS)
    return _construct(f, args, kwargs)


def _library(f: Any, args: tuple, kwargs: dict) -> Any:
    """An allowed library function: called as it is, unless it would run Python while the
    graph runs, or NumPy would read the values of what the graph computes."""
    if f in callbacks.RUN_TIME_PYTHON:
        raise ConversionError(f"{qualified_name(f)} runs Python while the graph runs: an aborted run could "
                              "not take its effects back", permanent=True, code=Code.PY_FUNCTION)
    made = arrays.tensor_values(f, args, kwargs)  # np.squeeze(probs): eager's array of a tensor's values
    if made is not None:
        return made
    if qualified_name(f).startswith("numpy.") and any(is_symbolic(v) for v in (*args, *kwargs.values())):
        raise ConversionError(f"{qualified_name(f)} reads the values of a tensor the graph computes",
                              code=Code.TENSOR_VALUE)
    carried = [e for v in (*args, *kwargs.values()) for e in _carried_scalars(v)]
    strings = [e for e in carried if e.kind is str]
    if strings and module_of(f).split(".")[0] not in _TENSORFLOW:  # only TensorFlow reads a fed str
        value_needed(strings[0].tensor, f"passed to {qualified_name(f)}")
    if qualified_name(f).startswith("numpy.") and carried:
        # np.round(float(t), 4): NumPy would raise TypeError on the traced number (no
        # `rint` method), taken for an error eager raises; it needs the number's value
        raise ConversionError(f"{qualified_name(f)} reads a Python number the graph computes",
                              code=Code.TENSOR_VALUE)
    return f(*callbacks.library_arguments(_protocols(f, _shapes(args)), f, call),
             **callbacks.library_arguments(_protocols(f, _shapes(kwargs)), f, call))


def _protocols(f: Any, args: tuple | dict) -> tuple | dict:
    """Arguments of builtin or library ``f``: user iterables handed to a builtin that only
    iterates them become their items; an object whose protocols ``f`` would call unseen
    fails the trace (``janus.lowering.dunders``)."""
    if isinstance(args, dict):
        return {k: dunders.library_argument(f, v) for k, v in args.items()} if args else args
    return tuple(dunders.library_argument(f, a) for a in args)


_TENSORFLOW = frozenset({"tensorflow", "keras", "tf_keras"})


def _carried_scalars(v: Any) -> list:
    """The Python numbers and strings the graph carries that ``v`` is or (a list or tuple) holds."""
    if isinstance(v, PyScalar):
        return [v]
    return [e for e in v if isinstance(e, PyScalar)] if type(v) in (list, tuple) else []


def _not_allowed(fn: Any, name: str) -> ConversionError:
    """The permanent failure of a call into code Janus neither converts nor calls as it is;
    an installed package's Python function names the way to have it converted."""
    installed = isinstance(fn, types.FunctionType) and fn.__module__ and \
        {"site-packages", "dist-packages"} & set(os.path.normpath(fn.__code__.co_filename).split(os.sep))
    hint = f" (an installed package's Python: janus.allow({fn.__module__}) converts it)" if installed else ""
    return ConversionError(f"callee not allow-listed: {name}{hint}", permanent=True, code=Code.NOT_ALLOWED)


def mutate_attr(obj: Any, name: str, method: str, *args: Any) -> Any:
    """``obj.name.method(*args)`` for a container mutator, without reading the container.

    When ``obj`` is Python state and ``obj.name`` a list/dict/set not read so far in
    this trace, the call is recorded as a deferred effect and only the container's
    type is guarded (``janus.lowering.containers``).  Anything else is an ordinary call.
    """
    if containers.defer_attr(obj, name, method, args):
        return None
    return call(getattr(state.ld_attr(obj, name), method), *args)


def mutate_global(g: dict, name: str, method: str, *args: Any) -> Any:
    """``name.method(*args)`` on a module global container: like :func:`mutate_attr`."""
    if containers.defer_global(g, name, method, args):
        return None
    return call(getattr(state.ld_global(g, name), method), *args)


def mutate_cell(cells: tuple, index: int, name: str, method: str, *args: Any) -> Any:
    """``name.method(*args)`` on a closure variable's container: like :func:`mutate_attr`."""
    if containers.defer_cell(cells, index, name, method, args):
        return None
    return call(getattr(state.ld_cell(cells, index, name), method), *args)


def _construct(cls: type, args: tuple, kwargs: dict) -> Any:
    """``cls(*args, **kwargs)`` for a plain user class (or dataclass) built inside the step.

    The object belongs to the trace: its ``__init__`` is converted and inlined, its
    attributes are set at once, and it leaves the graph (returned, or written to state)
    rebuilt from the run's outputs.  Classes with behaviour Janus cannot follow in
    Python (their own ``__new__``, ``__setattr__``, ``__slots__``, a metaclass, a
    library base class) make the conversion fail.
    """
    bases = [k for k in cls.__mro__ if k is not object]
    if type(cls) is not type or not all(is_user_class(k) for k in bases):
        raise ConversionError(f"constructs a {cls.__qualname__} object (a metaclass or library base class)", permanent=True,
                              code=Code.TENSOR_VALUE)
    for special in ("__new__", "__setattr__", "__slots__", "__getattr__", "__getattribute__", "__del__"):
        if any(special in vars(k) for k in bases):
            raise ConversionError(f"constructs a {cls.__qualname__} object ({special})", permanent=True,
                                  code=Code.CONSTRUCTS)
    obj = current().heap.adopt(object.__new__(cls))
    init = next((vars(k)["__init__"] for k in bases if "__init__" in vars(k)), None)
    if init is None:
        if args or kwargs:
            raise TypeError(f"{cls.__name__}() takes no arguments")
    elif dataclasses.is_dataclass(cls) and init.__code__.co_filename.startswith("<"):
        if any("__post_init__" in vars(k) for k in bases):
            raise ConversionError(f"constructs a {cls.__qualname__} dataclass with __post_init__", permanent=True,
                                  code=Code.TENSOR_VALUE)
        init(obj, *args, **kwargs)  # the dataclass's generated __init__ only sets fields
    else:
        converted(init)(obj, *args, **kwargs)
    return obj


def _named_tuple_method(f: types.MethodType) -> bool:
    """``p._replace(...)``, ``P._make(...)``, ``p._asdict()``: the pure methods every named tuple has."""
    owner = f.__self__ if isinstance(f.__self__, type) else type(f.__self__)
    return issubclass(owner, tuple) and hasattr(owner, "_fields") and f.__func__.__module__ == "collections"


def _namedtuple(*args: Any, **kwargs: Any) -> type:
    """``collections.namedtuple(...)`` inside the step: the class is made while tracing.

    Its instances convert like any named tuple's, but neither they nor the class may leave
    the graph (packing refuses them): eager makes a new class at every call.
    """
    cls = collections.namedtuple(*args, **kwargs)
    current().heap.created_classes.add(cls)
    return cls


def _shapes(args: Any) -> Any:
    """Lists of Python ints among a library call's arguments, some of which the graph
    computes (``[x.shape[0], 4]``, or a relaxed ``x.shape`` itself), become the int32
    tensor TensorFlow would make of them; lists of strs, some of them fed to the graph
    (``vectorize([sentence])``), the string tensor."""
    def fix(v: Any) -> Any:
        if isinstance(v, SymbolicShape):  # tf.zeros(x.shape) of a relaxed x
            v = v.as_list()
        if type(v) in (list, tuple) and v and any(isinstance(e, PyScalar) for e in v):
            if all(type(e) is int or isinstance(e, PyScalar) and e.kind is int for e in v):
                return tf.stack([tf.convert_to_tensor(e) if isinstance(e, PyScalar) else tf.constant(e, tf.int32)
                                 for e in v])
            if all(type(e) is str or isinstance(e, PyScalar) and e.kind is str for e in v):  # vectorize([s])
                return tf.stack([tf.convert_to_tensor(e, tf.string) for e in v])
        return v
    if isinstance(args, dict):
        return {k: fix(v) for k, v in args.items()} if args else args
    return tuple(fix(v) for v in args)


def _variable_value(v: Any) -> Any:
    return v.value() if type(v) is not NodeView and isinstance(v, tf.Variable) else v
