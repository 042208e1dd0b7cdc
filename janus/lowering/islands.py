"""Python islands: a method of Python state that draws from a NumPy random generator, run
inside the graph, in Python, on a copy of its object.

A Python environment stepped inside a tape (``s, reward = env.step(action)``) cannot become
graph ops: it draws from NumPy's generators, whose numbers no TensorFlow op reproduces.
As a graph break it costs a graph call per segment at every step.  As an *island*, the
graph calls it through ``tf.numpy_function`` where the step stood, and the whole function
stays one graph.  Three things keep that all-or-nothing:

* **Confinement.**  The method may change nothing but its own object
  (:mod:`janus.convert.analysis.confined`); here, on the objects its names stand for, its
  callees are checked to be pure (builtins, NumPy's and ``math``'s functions, methods of
  values), its object to hold only plain values and random generators, the names it reads
  to be modules, functions or immutable values.
* **A copy.**  It runs on a copy of its object made before each run and committed after
  every assertion passed (:mod:`janus.commit.island_copies`); a run that aborts drops it.
  The trace refuses to read the object's attributes after the island (the graph was fed
  their values of before the run) and to write them at all (the island would not see it).
* **Types from the profile.**  The graph must know what the island returns: the profile's
  one return type of the method (``ProfileData.return_types``).  The island checks every
  result against it and raises, aborting the run, when one differs; a NumPy array it returns
  is a tensor that only TensorFlow may use (:class:`IslandArray`), since eager's array is
  the object's own.

Islands run where the function's graph holds them, inside tensor conditionals and loops
too (an episode that ends when the environment says ``done``): a copy a branch or loop did
not use commits nothing new.  Not in a graph a library builds around the user's code, nor
during a recursion over trees; their arguments are Python numbers or plain constants.
"""
from __future__ import annotations

import builtins
import inspect
import math
import types
from dataclasses import dataclass
from typing import Any

import numpy as np
import tensorflow as tf

from janus.commit.effects import SetGlobal
from janus.commit.island_copies import RANDOM_GENERATORS, CommitIsland, IslandCopy, generator_attributes, plain
from janus.convert.analysis.confined import Confined, confinement_of
from janus.convert.libraries import is_user_function, qualified_name
from janus.errors import ConversionError, IslandsRefused
from janus.reporting.codes import Code
from janus.lowering.island_specs import ArraySpec, IslandSpec, NoneSpec, ScalarSpec, SequenceSpec
from janus.lowering.state import instance_dict, is_data_descriptor
from janus.trace.active import current
from janus.trace.arrays import FED_DTYPES, FedArray
from janus.trace.scalars import PyScalar
from janus.trace.values import is_user_class

NOT_AN_ISLAND = object()

# Draws of NumPy's generators (RandomState and Generator): they change only the generator.
DRAWS = frozenset({
    "normal", "uniform", "randint", "integers", "rand", "randn", "random", "random_sample", "standard_normal",
    "choice", "binomial", "poisson", "exponential", "beta", "gamma", "permutation", "laplace", "logistic",
})
# Methods of values (NumPy arrays and scalars, numbers, strings, tuples) that change nothing.
_VALUE_METHODS = frozenset({
    "astype", "copy", "item", "tolist", "sum", "mean", "min", "max", "std", "var", "prod", "dot", "reshape",
    "ravel", "flatten", "transpose", "squeeze", "any", "all", "argmax", "argmin", "clip", "round", "cumsum",
    "conjugate", "is_integer", "bit_length", "count", "index", "format", "lower", "upper", "strip", "split",
    "startswith", "endswith", "join", "replace",
})
_BUILTINS = frozenset({
    abs, all, any, bool, complex, divmod, enumerate, float, int, isinstance, len, max, min, pow, range, reversed,
    round, sorted, str, sum, tuple, zip, list, dict, set, frozenset,
})
# NumPy functions besides its ufuncs that only compute (np.empty is not: its values are garbage).
_NUMPY = frozenset({
    np.array, np.asarray, np.zeros, np.ones, np.full, np.zeros_like, np.ones_like, np.full_like, np.arange,
    np.linspace, np.clip, np.concatenate, np.stack, np.hstack, np.vstack, np.sum, np.mean, np.std, np.var, np.min,
    np.max, np.amin, np.amax, np.argmax, np.argmin, np.where, np.dot, np.round, np.around, np.isclose, np.allclose,
    np.any, np.all, np.cumsum, np.prod, np.reshape, np.transpose, np.squeeze, np.expand_dims, np.outer,
})


def refuse_misused(heap: Any, speculator: Any, error: Exception) -> None:
    """After a trace failed with ``error``: if it used an island's array as NumPy, raise
    :class:`IslandsRefused` with the island's methods (the next trace makes no island of them)."""
    misused = {fn: what for fn, what in heap.islands_misused.items() if fn not in speculator.no_islands}
    if misused and isinstance(error, ConversionError) and not error.permanent:
        raise IslandsRefused(misused, ", ".join(f"{qualified_name(fn)} ({what})" for fn, what in misused.items())) from None


def island(f: types.MethodType, args: tuple, kwargs: dict) -> Any:
    """``f(*args, **kwargs)`` for a user method ``f``, as a Python island if it draws from a
    NumPy generator its object holds; :data:`NOT_AN_ISLAND` if it does not (it is inlined)."""
    fn, obj = f.__func__, f.__self__
    d = instance_dict(obj)
    if d is None or not any(isinstance(v, RANDOM_GENERATORS) for v in d.values()):
        return NOT_AN_ISLAND  # no generator to draw from: nothing to parse
    summaries, why = _with_helpers(fn, type(obj), d)
    rng_draws = any(isinstance(d.get(attr), RANDOM_GENERATORS) for _, s in summaries for attr, _ in s.draws)
    ctx = current()
    if not rng_draws or ctx.checks.speculator is not None and fn in ctx.checks.speculator.no_islands:
        return NOT_AN_ISLAND
    why = why or _refusal(ctx, obj, summaries, args, kwargs)
    if why is not None:
        raise ConversionError(f"{qualified_name(fn)} draws from a NumPy generator and cannot run as a Python "
                              f"island: {why}", code=Code.ISLAND)
    spec = _result_spec(ctx, fn)
    if isinstance(spec, str):
        raise ConversionError(f"{qualified_name(fn)} cannot run as a Python island: {spec}", code=Code.ISLAND)
    record = ctx.heap.islands.get(id(obj))
    if record is None:
        source = ctx.source_of(obj)
        record = ctx.heap.islands[id(obj)] = Island(IslandCopy(source.label, ctx.getter(source)), frozenset())
        # committed whether or not a branch or loop around it ran it (an unused copy changes
        # nothing): the function's own effects, not a side's or a loop's
        ctx.log.effects.append(CommitIsland(record.copy))
    if fn.__qualname__ not in record.copy.methods:
        record.copy.methods.append(fn.__qualname__)
    record.writes = record.writes.union(*(s.writes for _, s in summaries))
    return record.call(fn, summaries, args, kwargs, spec, ctx.heap.islands_misused)


@dataclass
class Island:
    """The islands of one object in a trace: its copy and the attributes they rebind."""

    copy: IslandCopy
    writes: frozenset[str]

    def call(self, fn: types.FunctionType, summaries: list, args: tuple, kwargs: dict, spec: Any,
             misused: dict) -> Any:
        """The island's op in the graph, and its results as converted code sees them
        (``summaries``: ``fn``'s and its helpers' confinement; ``misused``: where its arrays
        mark ``fn`` when used as NumPy)."""
        copy, names = self.copy, [(f, n) for f, s in summaries for n in sorted(s.globals)]

        def run(*python_args: Any, **python_kwargs: Any) -> Any:
            if copy.copy is None:
                raise IslandRunFailed(f"no copy of {copy.label} for this run")
            changed = next((n for f, n in names if not _readable(_resolve(f, (n,)))), None)
            if changed is not None:  # checked while tracing; a global may have been rebound since
                raise IslandRunFailed(f"{changed}, which a Python island reads, is no longer plain")
            return fn(copy.copy, *python_args, **python_kwargs)

        return island_op(run, args, kwargs, spec, f"janus_island_{fn.__name__}", fn, misused)


def island_op(run: Any, args: tuple, kwargs: dict, spec: IslandSpec, name: str, marks: Any, misused: dict) -> Any:
    """The ``tf.numpy_function`` op that calls ``run(*args, **kwargs)`` in Python while the
    graph runs (the numbers the graph carries given as Python numbers, the arrays as new
    arrays of their dtype and shape, as eager's code would hand them), its result checked
    against ``spec``; its results as converted code sees them (an array used as NumPy marks
    ``marks`` in ``misused``)."""
    computed = [v for v in (*args, *kwargs.values()) if isinstance(v, (PyScalar, FedArray))]

    def call(*values: np.ndarray) -> list:
        given = iter(values)

        def as_python(v: Any) -> Any:  # what eager's code hands the call
            if isinstance(v, PyScalar):
                return v.kind(next(given))
            if isinstance(v, FedArray):  # a new array (or NumPy scalar) of the graph's values
                value = np.array(next(given), dtype=v.dtype, copy=True)
                return value if v.scalar_type is None else v.scalar_type(value)
            return v
        result = run(*(as_python(v) for v in args), **{n: as_python(v) for n, v in kwargs.items()})
        flat: list = []
        if not spec.flatten(result, flat):
            raise IslandRunFailed(f"a Python island returned a {type(result).__name__} where its profile showed {spec}")
        return flat

    # a stateful op: TensorFlow's automatic control dependencies run it after the stateful
    # ops before it (other islands, and the conditionals and loops holding them)
    inputs = [tf.stop_gradient(v.tensor if isinstance(v, PyScalar) else tf.convert_to_tensor(v)) for v in computed]
    outs = tf.numpy_function(call, inputs, spec.dtypes(), stateful=True, name=name)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    return spec.rebuild(iter(outs), marks, misused)


class IslandRunFailed(ConversionError):
    """An island cannot run as traced — a name it reads is no longer plain, or it returned
    what the profile did not show: raised inside the graph run, which aborts (the call
    re-runs eagerly)."""

    code = Code.ISLAND


def _result_spec(ctx: Any, fn: types.FunctionType) -> Any:
    """What the profile says ``fn`` returns, as a spec (``janus.lowering.island_specs``); or why
    there is none."""
    profile = ctx.checks.speculator.profile if ctx.checks.speculator is not None else None
    seen = {_without_value(t) for t in profile.return_types(fn)} if profile is not None else set()
    if len(seen) != 1:
        return "the profile saw no result of it" if not seen else "the profile saw results of several types"
    return _spec(next(iter(seen)))


def _without_value(info: Any) -> Any:
    items = tuple(_without_value(i) for i in info.items) if info.items is not None else None
    return info._replace(value=None, has_value=info.type == "NoneType", items=items)


def _spec(info: Any) -> IslandSpec | str:
    if info.type in ("float", "int", "bool"):
        return ScalarSpec({"float": float, "int": int, "bool": bool}[info.type])
    if info.type == "NoneType":
        return NoneSpec()
    if info.type == "np.ndarray" and info.shape is not None and None not in info.shape \
            and np.dtype(info.dtype) in FED_DTYPES:
        return ArraySpec(np.dtype(info.dtype), tuple(info.shape))
    if info.type in ("tuple", "list") and info.items is not None and len(info.items) == info.shape[0]:
        parts = [_spec(i) for i in info.items]
        bad = next((p for p in parts if isinstance(p, str)), None)
        return bad if bad is not None else SequenceSpec({"tuple": tuple, "list": list}[info.type], tuple(parts))
    return f"it returns a {info.type}, which the graph cannot carry"


def _with_helpers(fn: types.FunctionType, cls: type, attrs: dict) -> tuple[list[tuple[Any, Confined]], str | None]:
    """``fn``'s confinement and those of the methods of its own it calls, transitively (as
    many as were confined), and why one is not (None: all are)."""
    found: list[tuple[Any, Confined]] = []
    pending, seen = [fn], {fn}
    while pending:
        method = pending.pop(0)
        summary = confinement_of(method)
        if isinstance(summary, str):
            return found, summary if method is fn else f"{method.__qualname__} {summary}"
        found.append((method, summary))
        for name in sorted(summary.helpers):
            helper = inspect.getattr_static(cls, name, None)
            if name in attrs or not isinstance(helper, types.FunctionType) or not is_user_function(helper):
                return found, f"it calls self.{name}, which is not a plain method of {cls.__qualname__}"
            if helper not in seen:
                seen.add(helper)
                pending.append(helper)
    return found, None


def where_refused(ctx: Any) -> str | None:
    """Why no island can be made where this trace is now: inside a recursion over trees, or in
    a graph a library builds around the user's function (None: one can)."""
    if ctx.recursion is not None and ctx.recursion.active is not None:
        return "it is called during a recursion over trees"
    if ctx.log.dynamic_depth and (not ctx.log.sinks or ctx.log.sinks[-1] is None):
        return "it is called inside a graph a library builds around the user's function"
    return None


def _refusal(ctx: Any, obj: Any, summaries: list[tuple[Any, Confined]], args: tuple, kwargs: dict) -> str | None:
    """Why the island of ``summaries`` (its method and their helpers) on ``obj`` cannot be
    made in this trace (None: it can)."""
    why = where_refused(ctx)
    if why is not None:
        return why
    if ctx.source_of(obj) is None:
        return "its object is not Python state the function reads"
    why = _class_refusal(type(obj))
    if why is not None:
        return why
    generators = generator_attributes(instance_dict(obj))
    if generators is None:
        return f"{ctx.source_of(obj).label} holds more than plain values and random generators"
    for i, (fn, summary) in enumerate(summaries):
        why = _callee_refusal(ctx, fn, summary, generators)
        if why is not None:
            return why if i == 0 else f"in {fn.__qualname__}, {why}"
    if any(key[0] == id(obj) for key in ctx.heap.overlay):
        return f"the function writes {ctx.source_of(obj).label} before it"
    if not all(isinstance(v, PyScalar) or plain(v) for v in (*args, *kwargs.values())):
        return "an argument is neither a Python number nor a plain constant"
    return None


def _class_refusal(cls: type) -> str | None:
    """Why an object of ``cls`` cannot hold an island's state: a class not all the user's, or
    one that customizes its attributes (None: its attributes are its ``__dict__``)."""
    user = [k for k in cls.__mro__ if k is not object]
    if not all(is_user_class(k) for k in user) or any(
            special in vars(k) for k in user for special in
            ("__setattr__", "__getattr__", "__getattribute__", "__delattr__", "__slots__")):
        return f"{cls.__qualname__} customizes its attributes"
    if any(is_data_descriptor(cls, name) for k in user for name in vars(k) if not name.startswith("__")):
        return f"{cls.__qualname__} has properties or descriptors"
    return None


def _callee_refusal(ctx: Any, fn: types.FunctionType, summary: Confined, generators: dict[str, Any]) -> str | None:
    """Why what ``fn`` calls and reads, as its names stand now, is not pure (None: it is)."""
    for attr, method in summary.draws:
        allowed = DRAWS if attr in generators else _VALUE_METHODS
        if method not in allowed:
            return f"it calls self.{attr}.{method}"
    bad = next((m for m in summary.methods if m not in _VALUE_METHODS), None)
    if bad is not None:
        return f"it calls a method .{bad}"
    for name in summary.calls:
        if not _pure_callee(_resolve(fn, name)):
            return f"it calls {'.'.join(name)}"
    for name in summary.globals:
        if not _readable(_resolve(fn, (name,))):
            return f"it reads {name}, which is neither NumPy, math, a pure function nor a plain value"
        if any(isinstance(e, SetGlobal) and e.name == name for e in ctx.log.effects):
            return f"the function writes global {name} before it"
    return None


def _resolve(fn: types.FunctionType, name: tuple[str, ...]) -> Any:
    """What dotted ``name`` stands for in ``fn`` now (its closure, globals, or builtins)."""
    head = name[0]
    free = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    if head in free:
        value = free[head].cell_contents
    elif head in fn.__globals__:
        value = fn.__globals__[head]
    else:
        value = getattr(builtins, head, None)
    for part in name[1:]:
        if not isinstance(value, types.ModuleType) or value not in (np, math):
            return None  # an attribute of anything else could be computed by a property
        value = inspect.getattr_static(value, part, None)
    return value


def _readable(value: Any) -> bool:
    """A value a global or closure name of an island may stand for."""
    return isinstance(value, types.ModuleType) and value in (np, math) or _pure_callee(value) or plain(value)


def _pure_callee(value: Any) -> bool:
    if value is None:
        return False
    if isinstance(value, type):
        return issubclass(value, (BaseException, np.generic)) or value in _BUILTINS
    if isinstance(value, np.ufunc) or value in _NUMPY or value in _BUILTINS:
        return True
    return isinstance(value, types.BuiltinFunctionType) and getattr(value, "__module__", None) == "math"
