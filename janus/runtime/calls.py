"""Calls made by converted code: inline user functions, allow-list the rest.

Every call in converted code goes through :func:`call`.  A user-defined function or
method is converted too and called in place, so its body becomes part of the same
graph (inlining); its globals and closure are read through the state helpers, so they
are guarded like the caller's.  TensorFlow, Keras, NumPy (not its random module), the
``math`` module and a fixed set of builtins are called as they are.  Anything else
(an unknown C extension, a third-party or standard-library Python function, a
constructor of a user class) makes the conversion fail, and the call runs eagerly.
"""
from __future__ import annotations

import collections
import dataclasses
import math
import operator
import sys
import types
from typing import Any

import tensorflow as tf

from janus.commit import atomicity
from janus.commit.effects import CallMethod, Print
from janus.convert.pipeline import is_converted_code as is_converted
from janus.convert.support import ALLOWED_BUILTINS
from janus.errors import ConversionError
from janus.runtime import loops, random, recursion, state, truth
from janus.trace import active
from janus.trace.active import current
from janus.trace.forest import NodeView, is_tree_part
from janus.trace.guards import GuardKind
from janus.trace.sources import Cell, Global, Source
from janus.trace.values import PyOrTensor, PyScalar, SymbolicShape, is_symbolic, is_user_class
from janus_profiler import usercode

ALLOWED_MODULE_ROOTS = {"tensorflow", "keras", "tf_keras", "numpy", "math", "_operator", "operator"}
DENIED_MODULES = ("numpy.random",)
_IMMUTABLE = (str, bytes, int, float, bool, tuple, frozenset, complex)


def is_converted_code(fn: Any) -> bool:
    code = getattr(fn, "__code__", None)
    return code is not None and is_converted(code)


def is_user_code(code: types.CodeType) -> bool:
    """Code from the user's files (not a library's, the standard library's or Janus's)."""
    return not is_converted(code) and is_user_code_file(code.co_filename)


def is_user_code_file(filename: str) -> bool:
    """A file of the user's program (not a library's, the standard library's, Janus's, or generated)."""
    return usercode.is_user_file(filename)


def is_user_function(fn: Any) -> bool:
    """A Python function written by the user (not a library's, not the standard library's)."""
    if not isinstance(fn, types.FunctionType) or not is_user_code(fn.__code__):
        return False
    mod = (fn.__module__ or "").split(".")[0]
    return mod not in ALLOWED_MODULE_ROOTS and mod != "janus"


def _module_of(fn: Any) -> str:
    mod = getattr(fn, "__module__", None)
    if mod is None and isinstance(getattr(fn, "__self__", None), types.ModuleType):
        mod = fn.__self__.__name__
    if mod is None:
        mod = type(getattr(fn, "__self__", fn)).__module__
    return mod or ""


def _allowed_library(fn: Any) -> bool:
    mod = _module_of(fn)
    if mod.startswith(DENIED_MODULES):
        return False
    return mod.split(".")[0] in ALLOWED_MODULE_ROOTS


def _name(fn: Any) -> str:
    qual = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__qualname__
    return f"{_module_of(fn)}.{qual}"


def converted(fn: types.FunctionType):
    """The converted code of a user function, inlined into the trace in progress."""
    return current().convert(fn)


def inline(fn: types.FunctionType, args: tuple, kwargs: dict) -> Any:
    """Call user function ``fn`` converted, in place; a recursion over a tree is run over
    the whole tree at once instead (``janus.runtime.recursion``)."""
    rec = current().recursion
    if rec is not None:
        out = rec.intercept(fn, args, kwargs)
        if out is not recursion.NOT_RECURSION:
            return out
    return converted(fn)(*args, **kwargs)


def call(f: Any, *args: Any, **kwargs: Any) -> Any:
    """``f(*args, **kwargs)`` in converted code."""
    if is_converted_code(f):
        return f(*args, **kwargs)
    janus_fn = getattr(f, "__janus_function__", None)
    if janus_fn is not None:
        bound_self = getattr(f, "__self__", None)
        fn = janus_fn.python_function
        return inline(fn, (bound_self, *args) if bound_self is not None else args, kwargs)
    if f is print:
        return print_(*args, **kwargs)
    if is_user_function(f):
        return inline(f, args, kwargs)
    rec = current().recursion
    if rec is not None and rec.active is not None:
        if f not in _VIEW_CALLS and any(type(v) is NodeView for v in (*args, *kwargs.values())) \
                and not (isinstance(f, types.MethodType) and is_user_function(f.__func__)):
            raise ConversionError(f"passes a tree node to {_name(f)} during the recursion over it")
        # Nodes are computed in batches by TensorFlow's vectorizer, which batches a gather
        # from a variable's value but not from the variable (ResourceGather): pass the value.
        args = tuple(_variable_value(v) for v in args)
        kwargs = {k: _variable_value(v) for k, v in kwargs.items()}
    if f in random.REPLACEMENTS:  # stateful random ops draw from fed seeds (janus.trace.seeds)
        return random.REPLACEMENTS[f](*_shapes(args), **_wrap_kw(_shapes(kwargs)))
    if isinstance(f, types.MethodType):
        if isinstance(f.__self__, SymbolicShape):
            return f(*args, **kwargs)
        if is_user_function(f.__func__):
            return inline(f.__func__, (f.__self__, *args), kwargs)
        if isinstance(f.__self__, tf.distribute.MultiWorkerMirroredStrategy):
            current().uses_collective(f.__self__)
        if isinstance(f.__self__, tf.distribute.experimental.ParameterServerStrategy):
            raise ConversionError("uses a ParameterServerStrategy, whose coordinator schedules tf.functions of "
                                  "its own", permanent=True)
        if _allowed_library(f.__func__) or _allowed_library(f.__self__) or _named_tuple_method(f):
            return f(*_callbacks(_shapes(args), f), **_callbacks(_shapes(kwargs), f))
        raise ConversionError(f"callee not allow-listed: {_name(f)}", permanent=True)
    if isinstance(f, types.BuiltinMethodType) and type(f.__self__) in (list, dict, set):
        return container_method(f.__self__, f.__name__, args, kwargs)
    if isinstance(f, types.BuiltinMethodType) and type(f.__self__) in _IMMUTABLE:
        return _no_symbolic(f)(*args, **kwargs)
    if f in _SPECIAL:
        return _SPECIAL[f](*args, **kwargs)
    if f is collections.namedtuple:
        return _namedtuple(*args, **kwargs)
    if isinstance(f, type):
        if issubclass(f, BaseException) or not is_user_class(f) and f in ALLOWED_BUILTINS:
            return f(*_wrap(args), **_wrap_kw(kwargs))
        if issubclass(f, tuple) and hasattr(f, "_fields"):
            return f(*args, **kwargs)
        if issubclass(f, tf.experimental.ExtensionType) \
                and not any("__validate__" in vars(k) for k in f.__mro__ if is_user_class(k)):
            return f(*args, **kwargs)  # its generated __init__ only checks and stores the fields
        if not is_user_class(f) and _allowed_library(f):
            return f(*args, **kwargs)
        if not is_user_class(f):
            raise ConversionError(f"constructs a {f.__qualname__} object", permanent=True)
        return _construct(f, args, kwargs)
    if isinstance(f, tf.keras.layers.Layer) and is_user_class(type(f)):
        return _user_layer_call(f, args, kwargs)
    if not isinstance(f, (types.FunctionType, types.BuiltinFunctionType)) and is_user_class(type(f)):
        method = getattr(type(f), "__call__", None)
        if is_user_function(method):
            return inline(method, (f, *args), kwargs)
        raise ConversionError(f"callee not allow-listed: {type(f).__qualname__} instance", permanent=True)
    if f in ALLOWED_BUILTINS:
        return f(*_wrap(args), **_wrap_kw(kwargs))
    if _allowed_library(f):
        if f in _RUN_TIME_PYTHON:
            raise ConversionError(f"{_name(f)} runs Python while the graph runs: an aborted run could not take "
                                  "its effects back", permanent=True)
        return f(*_callbacks(_shapes(args), f), **_callbacks(_shapes(kwargs), f))
    if f in vars(operator).values() or f in vars(math).values():
        return f(*args, **_wrap_kw(kwargs))
    raise ConversionError(f"callee not allow-listed: {_name(f)}", permanent=True)


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
        raise ConversionError(f"constructs a {cls.__qualname__} object (a metaclass or library base class)", permanent=True)
    for special in ("__new__", "__setattr__", "__slots__", "__getattr__", "__getattribute__", "__del__"):
        if any(special in vars(k) for k in bases):
            raise ConversionError(f"constructs a {cls.__qualname__} object ({special})", permanent=True)
    obj = current().heap.adopt(object.__new__(cls))
    init = next((vars(k)["__init__"] for k in bases if "__init__" in vars(k)), None)
    if init is None:
        if args or kwargs:
            raise TypeError(f"{cls.__name__}() takes no arguments")
    elif dataclasses.is_dataclass(cls) and init.__code__.co_filename.startswith("<"):
        if any("__post_init__" in vars(k) for k in bases):
            raise ConversionError(f"constructs a {cls.__qualname__} dataclass with __post_init__", permanent=True)
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
    tensor TensorFlow would make of them."""
    def fix(v: Any) -> Any:
        if isinstance(v, SymbolicShape):  # tf.zeros(x.shape) of a relaxed x
            v = v.as_list()
        if type(v) in (list, tuple) and v and any(isinstance(e, PyScalar) for e in v) \
                and all(type(e) is int or isinstance(e, PyScalar) and e.kind is int for e in v):
            return tf.stack([tf.convert_to_tensor(e) if isinstance(e, PyScalar) else tf.constant(e, tf.int32) for e in v])
        return v
    if isinstance(args, dict):
        return {k: fix(v) for k, v in args.items()} if args else args
    return tuple(fix(v) for v in args)


_RUN_TIME_PYTHON = (tf.py_function, tf.numpy_function, tf.compat.v1.py_func)


def _callbacks(args: Any, library: Any) -> Any:
    """Arguments of a library call, with the user's functions (and functions of converted
    code, such as a lambda in the step) made callbacks that run converted.

    Where the library calls one in a graph of its own (the body of ``tf.map_fn``, a branch
    of ``tf.cond``, a ``Dataset.map`` function), it runs a number of times only the graph
    knows: Python effects, random draws and variable writes there make the conversion
    fail rather than happen once at trace time.
    """
    def wrap(a: Any) -> Any:
        if not (is_user_function(a) or isinstance(a, types.MethodType) and is_user_function(a.__func__)
                or is_converted_code(a)):
            return a
        site, ctx = tf.compat.v1.get_default_graph(), current()
        return lambda *x, **kw: _callback(a, site, ctx, library, x, kw)

    if isinstance(args, dict):
        return {k: wrap(v) for k, v in args.items()} if args else args
    return tuple(wrap(a) for a in args)


def _callback(fn: Any, site: Any, ctx: Any, library: Any, args: tuple, kwargs: dict) -> Any:
    if current() is not ctx:  # a thread of the library's (tf.distribute runs a replica per thread)
        previous = active.swap(ctx)
        try:
            return _callback(fn, site, ctx, library, args, kwargs)
        finally:
            active.swap(previous)
    graph = tf.compat.v1.get_default_graph()
    if graph is site:  # called while the library builds the caller's graph: as often as it runs
        return call(fn, *args, **kwargs)
    what = f"a function passed to {_name(library)}"
    ctx.log.dynamic_depth += 1
    ctx.log.sinks.append(None)
    try:
        with ctx.seeds.forbidden(f"{what} draws random numbers"):
            out = call(fn, *args, **kwargs)
    finally:
        ctx.log.dynamic_depth -= 1
        ctx.log.sinks.pop()
    if atomicity.graph_writes_state(graph, ctx.checks.writer_constructs):
        raise ConversionError(f"{what} changes a variable in a graph of its own")
    return out


def _wrap(args: tuple) -> tuple:
    """User functions handed to builtins (``map``, ``sorted(key=...)``) are converted too."""
    return tuple(_wrap_one(a) for a in args)


def _wrap_kw(kwargs: dict) -> dict:
    return {k: _wrap_one(v) for k, v in kwargs.items()} if kwargs else kwargs


def _wrap_one(a: Any) -> Any:
    if is_user_function(a) or isinstance(a, types.MethodType) and is_user_function(a.__func__):
        return lambda *x, **kw: call(a, *x, **kw)
    return a


def _user_layer_call(layer: Any, args: tuple, kwargs: dict) -> Any:
    """Call a user-defined Keras layer through Keras's ``__call__`` with its ``call`` converted.

    Keras's ``__call__`` propagates ``training`` and builds the layer; the user's
    ``call`` must still be converted, so it is shadowed on the instance for the call.
    """
    method = type(layer).call
    if not is_user_function(method):
        return layer(*args, **kwargs)
    if not layer.built:
        raise ConversionError(f"{type(layer).__qualname__} is not built yet")
    conv = types.MethodType(converted(method), layer)
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


# -- builtins whose meaning on tensors needs care ----------------------------------
def print_(*args: Any, sep: str | None = " ", end: str | None = "\n", file: Any = None, flush: bool = False) -> None:
    """``print``: replayed after the graph ran, with the values it computed."""
    if file is not None and file is not sys.stdout:
        raise ConversionError("print to a file other than stdout", permanent=True)
    current().effect(Print(args, sep, end), "print")


def _range(*bounds: Any):
    if any(is_symbolic(b) or isinstance(b, PyScalar) for b in bounds):
        return loops.TensorRange(*bounds)
    return range(*bounds)


def _len(x: Any) -> Any:
    if is_symbolic(x):
        if x.shape.rank is None or x.shape.rank == 0:
            raise ConversionError("len() of a tensor whose rank the graph does not know")
        return x.shape[0] if x.shape[0] is not None else SymbolicShape.of(x)[0]
    return len(x)


def _enumerate(x: Any, start: int = 0) -> Any:
    if isinstance(x, tf.data.Dataset) and type(start) is int:
        return loops.EnumeratedDataset(x, start)
    return enumerate(_iterable(x), start)


def _iterable(x: Any) -> Any:
    if isinstance(x, (tf.data.Dataset, tf.data.Iterator)):
        raise ConversionError("a dataset iterated other than by a for loop (list(), zip(), ...)")
    if is_symbolic(x):
        if x.shape.rank is None or x.shape.rank == 0 or x.shape[0] is None:
            raise ConversionError("iteration over a tensor whose length the graph does not know")
        return tf.unstack(x)
    return x


def _scalar(kind: type):
    """``bool(t)``, ``int(t)``, ``float(t)`` of a graph value: a Python scalar the graph computes."""
    def convert(x: Any = 0, *rest: Any) -> Any:
        if isinstance(x, PyScalar):
            return PyScalar.of(truth.to_bool(x), bool) if kind is bool else PyScalar.of(x, kind)
        if not is_symbolic(x):
            return kind(x, *rest)
        if kind is bool:
            return PyScalar(truth.to_bool(x), bool)
        if x.shape.num_elements() != 1:
            raise ConversionError(f"{kind.__name__}() of a non-scalar tensor")
        t = tf.reshape(x, [])
        if kind is int and not x.dtype.is_integer:
            t = tf.cast(t, tf.float64)
        return PyScalar.of(t, kind)
    return convert


def _no_symbolic(fn):
    def check(*args: Any, **kwargs: Any) -> Any:
        if any(is_symbolic(a) or isinstance(a, PyScalar) for a in args):
            raise ConversionError(f"{fn.__name__}() of a tensor the graph has not computed yet")
        return fn(*args, **kwargs)
    return check


def _variable_value(v: Any) -> Any:
    return v.value() if type(v) is not NodeView and isinstance(v, tf.Variable) else v


def _constant(value: Any, dtype: Any = None, shape: Any = None, name: str = "Const") -> Any:
    """``tf.constant`` of Python numbers some of which the graph computes (a fed number,
    a node's field), possibly in nested lists: the tensor eager would make of them, built
    from the graph's values (a Python int is int32 and a float float32, as eager has them)."""
    if not _has_py_scalar(value):
        return tf.constant(value, dtype, shape, name)
    dtype = tf.as_dtype(dtype) if dtype is not None else _inferred_dtype(value)
    tensor = _stacked(value, dtype)
    if shape is None:
        return tensor
    return tf.fill(shape, tensor) if tensor.shape.rank == 0 else tf.reshape(tensor, shape)


def _has_py_scalar(value: Any) -> bool:
    if isinstance(value, PyScalar):
        return True
    return type(value) in (list, tuple) and any(_has_py_scalar(v) for v in value)


def _inferred_dtype(value: Any) -> tf.DType:
    kinds: set = set()

    def walk(v: Any) -> None:
        if type(v) in (list, tuple):
            for x in v:
                walk(x)
        else:
            kinds.add(v.kind if isinstance(v, PyScalar) else type(v))

    walk(value)
    if not kinds <= {bool, int, float}:
        raise ConversionError(f"tf.constant of {sorted(k.__name__ for k in kinds)} the graph computes")
    return tf.float32 if float in kinds else tf.int32 if int in kinds else tf.bool


def _stacked(value: Any, dtype: tf.DType) -> tf.Tensor:
    if type(value) in (list, tuple):
        return tf.stack([_stacked(v, dtype) for v in value]) if value else tf.constant(value, dtype)
    if isinstance(value, PyScalar):
        return value.__tf_tensor__(dtype)
    return tf.constant(value, dtype)


def _type(*args: Any) -> Any:
    if len(args) == 1 and type(args[0]) is NodeView:
        return args[0].__class__  # the node's class (now a test of its case)
    if len(args) == 1 and is_symbolic(args[0]):
        raise ConversionError("type() of a graph tensor differs from eager's EagerTensor")
    if len(args) == 1 and isinstance(args[0], PyScalar):
        return args[0].kind  # the Python number's type, as eager has it
    if len(args) == 1 and isinstance(args[0], PyOrTensor):
        raise ConversionError("type() of a value that is a Python number or a tensor, depending on the path")
    return type(*args)


def _isinstance(obj: Any, classes: Any) -> bool:
    """``isinstance`` seeing the Python number a PyScalar stands for."""
    if isinstance(obj, PyScalar):
        return issubclass(obj.kind, classes)
    if isinstance(obj, PyOrTensor):
        raise ConversionError("isinstance() of a value that is a Python number or a tensor, depending on the path")
    return isinstance(obj, classes)


def _getattr(obj: Any, name: str, *default: Any) -> Any:
    try:
        return state.ld_attr(obj, name)
    except AttributeError:
        if default:
            return default[0]
        raise


def _hasattr(obj: Any, name: str) -> bool:
    ctx = current()
    if ctx is not None and ctx.source_of(obj) is not None and not isinstance(obj, tf.Module):
        raise ConversionError("hasattr() on Python state")
    return hasattr(obj, name)


_VIEW_CALLS = {isinstance, type, getattr}  # what may be asked of a tree node (see _type, _getattr)

_SPECIAL = {
    tf.constant: _constant,
    tf.autograph.trace: print_,  # TensorFlow's own Python-level print of its arguments
    range: _range,
    len: _len,
    bool: _scalar(bool),
    int: _scalar(int),
    float: _scalar(float),
    str: _no_symbolic(str),
    repr: _no_symbolic(repr),
    format: _no_symbolic(format),
    type: _type,
    isinstance: _isinstance,
    getattr: _getattr,
    hasattr: _hasattr,
    setattr: state.st_attr,
    enumerate: _enumerate,
    zip: lambda *xs, **k: zip(*(_iterable(x) for x in xs), **k),
    list: lambda *x: list(_iterable(x[0])) if x else [],
    tuple: lambda *x: tuple(_iterable(x[0])) if x else (),
    iter: lambda x, *a: iter(x) if isinstance(x, tf.data.Dataset) and not a else iter(_iterable(x), *a),
    reversed: lambda x: reversed(_iterable(x)),
    id: _no_symbolic(id),
}


def mod(left: Any, right: Any) -> Any:
    """``left % right``: string formatting of a graph tensor is refused."""
    if isinstance(left, (str, bytes)) and (is_symbolic(right) or isinstance(right, tuple) and any(map(is_symbolic, right))):
        raise ConversionError("formats a tensor into a string inside the graph")
    return left % right


# -- container methods: mutations of Python state are deferred -----------------------
MUTATORS = {
    list: {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "__setitem__", "__delitem__"},
    dict: {"update", "pop", "popitem", "clear", "setdefault", "__setitem__", "__delitem__"},
    set: {"add", "discard", "remove", "pop", "clear", "update"},
}


def container_method(obj: Any, name: str, args: tuple, kwargs: dict) -> Any:
    """Call a method of a builtin container; mutations of heap containers are deferred."""
    method = getattr(obj, name)
    ctx = current()
    if name in MUTATORS.get(type(obj), ()) and is_tree_part(ctx, obj):
        raise ConversionError("changes a tree during the recursion over it")
    source = ctx.source_of(obj) if ctx is not None else None
    if source is None or name not in MUTATORS.get(type(obj), ()):
        if name in MUTATORS.get(type(obj), ()):
            state.no_mutation_in_dynamic_flow(ctx, f"{type(obj).__name__}.{name}")
        return method(*args, **kwargs)
    state.no_mutation_in_dynamic_flow(ctx, f"{source.label}.{name}(...)")
    if kwargs:
        raise ConversionError(f"{type(obj).__name__}.{name} with keyword arguments on Python state")
    ctx.effect(CallMethod(source, name, tuple(args)), f"{source.label}.{name}(...)")
    return method(*args)  # on the trace's own copy of the container


def mutate_attr(obj: Any, name: str, method: str, *args: Any) -> Any:
    """``obj.name.method(*args)`` for a container mutator, without reading the container.

    When ``obj`` is Python state and ``obj.name`` a list/dict/set not read so far in
    this trace, the call is recorded as a deferred effect and only the container's
    type is guarded.  Anything else takes the ordinary path.
    """
    ctx = current()
    if isinstance(obj, NodeView):
        raise ConversionError(f"changes {obj.path}.{name} during the recursion over the tree")
    source = ctx.source_of(obj) if ctx is not None else None
    d = state.instance_dict(obj) if source is not None else None
    if d is None or (id(obj), name) in ctx.heap.overlay or state.is_data_descriptor(type(obj), name) or name not in d:
        return _ordinary_mutation(state.ld_attr(obj, name), method, args)
    return _mutate(ctx, d[name], source.attr(name), method, args, lambda: state.ld_attr(obj, name))


def mutate_global(g: dict, name: str, method: str, *args: Any) -> Any:
    """``name.method(*args)`` on a module global container: like :func:`mutate_attr`."""
    ctx = state.active_trace()
    if name not in g or state.is_rebound(g, name):
        return _ordinary_mutation(state.ld_global(g, name), method, args)
    return _mutate(ctx, g[name], Global(ctx.const(g, "g"), name), method, args, lambda: state.ld_global(g, name))


def mutate_cell(cells: tuple, index: int, name: str, method: str, *args: Any) -> Any:
    """``name.method(*args)`` on a closure variable's container: like :func:`mutate_attr`."""
    ctx = state.active_trace()
    if state.is_rebound(cells[index]):
        return _ordinary_mutation(state.ld_cell(cells, index, name), method, args)
    try:
        target = cells[index].cell_contents
    except ValueError:
        raise ConversionError(f"free variable {name} is empty") from None
    return _mutate(ctx, target, Cell(ctx.const(cells[index], "c"), name), method, args,
                   lambda: state.ld_cell(cells, index, name))


def _mutate(ctx, target: Any, source: Source, method: str, args: tuple, read) -> Any:
    if type(target) not in MUTATORS or method not in MUTATORS[type(target)] or ctx.heap.was_read(target) \
            or method in ("pop", "popitem", "setdefault"):
        return _ordinary_mutation(read(), method, args)
    ctx.guard(f"type({source.expr}) is {type(target).__name__}", f"{source.what} is a {type(target).__name__}",
              GuardKind.TYPE, source)
    ctx.effect(CallMethod(source, method, tuple(args)), f"{source.label}.{method}(...)")
    ctx.heap.mutated_unread.add(id(target))
    return None


def _ordinary_mutation(container: Any, method: str, args: tuple) -> Any:
    return call(getattr(container, method), *args)
