"""The trace context: what one trace of converted code depended on.

While converted code runs inside a ``FuncGraph``, every value it reads from outside
(arguments, globals, closure cells, object attributes) passes through
:meth:`TraceContext.read`.  That method decides how the graph may use the value and
records the *guard* that makes the decision safe to reuse:

* an eager tensor becomes a graph input fed at every call (never a stale constant),
  guarded on dtype and shape;
* a Python scalar, string or ``None`` is specialized as a constant, guarded by value;
* functions, modules, classes, variables and framework objects (Keras layers,
  optimizers, ``tf.Module``) are used as they are, guarded by identity;
* a user object is guarded by its class and *tracked*: reads of its attributes are
  recorded in turn, relative to the access path it was reached by;
* tuples, lists and dicts are rebuilt element by element (lists and dicts read from
  the heap become shadow copies; mutating them is the state module's business).

Access paths are Python expressions over ``a`` (positional arguments), ``k``
(keyword arguments) and constants of the guard namespace, so the guard and feed
code of a cache entry can be generated once and compiled.
"""
from __future__ import annotations

import re
import types
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import tensorflow as tf

from janus import _tf_private
from janus.errors import ConversionError
from janus.trace import active
from janus.trace.active import CALL
from janus.trace.guards import Guard
from janus.trace.speculation import Speculator
from janus.trace.values import (
    DTYPES, SCALARS, PyScalar, is_eager_tensor, is_framework_object, is_user_class,
)

_LABEL_PREFIX = re.compile(r"^(argument|global|closure variable|default of) ")


@dataclass
class HeapInput:
    """A tensor read from Python state, fed into the graph at every call."""

    path: str
    spec: tf.TensorSpec
    placeholder: Any = None
    what: str = ""


@dataclass
class TraceContext:
    """Everything one trace depends on and produces besides its outputs."""

    relaxed: bool = False
    guards: list[Guard] = field(default_factory=list)
    namespace: dict[str, Any] = field(default_factory=dict)
    heap_inputs: dict[str, HeapInput] = field(default_factory=dict)
    effects: list[tuple] = field(default_factory=list)
    dynamic_depth: int = 0
    outer_graph: Any = None
    arg_inputs: dict[str, Any] = field(default_factory=dict)
    arg_specs: dict[str, tf.TensorSpec] = field(default_factory=dict)
    overlay: dict[tuple, Any] = field(default_factory=dict)
    assertions: list[tuple[Any, Any]] = field(default_factory=list)
    speculator: Any = None
    convert: Callable[[Any], Callable] | None = None  # user function -> its converted code
    fed_scalars: dict[str, type] = field(default_factory=dict)
    heap_shapes: dict[str, tf.TensorShape] = field(default_factory=dict)
    writer_constructs: set = field(default_factory=set)
    effect_sinks: list = field(default_factory=list)
    assumptions: list[Any] = field(default_factory=list)
    _paths: dict[int, str] = field(default_factory=dict)
    _keep: list[Any] = field(default_factory=list)
    _guard_exprs: set[str] = field(default_factory=set)
    _const_ids: dict[int, str] = field(default_factory=dict)
    _by_id: dict[int, tuple] = field(default_factory=dict)
    _labels: dict[int, str] = field(default_factory=dict)
    mutated_unread: set = field(default_factory=set)
    _distinct: list[tuple] = field(default_factory=list)

    # -- activation -------------------------------------------------------------
    def __enter__(self) -> "TraceContext":
        self._prev = active.swap(self)
        return self

    def __exit__(self, *exc) -> None:
        active.swap(self._prev)

    # -- namespace and guards ---------------------------------------------------
    def const(self, obj: Any, hint: str = "o") -> str:
        """Name under which ``obj`` is reachable from generated guard/feed code."""
        name = self._const_ids.get(id(obj))
        if name is None:
            name = f"_{hint}{len(self.namespace)}"
            self.namespace[name] = obj
            self._const_ids[id(obj)] = name
            self._keep.append(obj)
        return name

    def guard(self, expr: str, description: str, path: str | None = None, kind: str | None = None) -> None:
        if expr not in self._guard_exprs:
            self._guard_exprs.add(expr)
            self.guards.append(Guard(expr, description, path, kind))

    def was_read(self, obj: Any) -> bool:
        return id(obj) in self._by_id

    def path_of(self, obj: Any) -> str | None:
        return self._paths.get(id(obj))

    def getter(self, path: str) -> Callable[[tuple, dict], Any]:
        """``lambda a, k: <path>``: reads an access path on the arguments of a later call."""
        return eval(f"lambda a, k: {path}", self.namespace)  # noqa: S307 - generated access path

    def label_of(self, obj: Any) -> str | None:
        """How the user's code named ``obj`` when the trace first read it (``self.cell``)."""
        return self._labels.get(id(obj))

    def track(self, obj: Any, path: str) -> None:
        if id(obj) not in self._paths:
            self._paths[id(obj)] = path
            self._keep.append(obj)

    # -- reads ------------------------------------------------------------------
    def read(self, value: Any, path: str, what: str) -> Any:
        """Return the value converted code should see for ``value`` read at ``path``.

        The same object reached by two paths is one value in the trace too (aliasing
        is guarded with ``is``); distinct arguments and distinct mutable containers
        are guarded with ``is not``, since converted code may depend on either.
        """
        if type(value) in SCALARS or isinstance(value, (types.FunctionType, types.ModuleType, type)):
            return self._read(value, path, what)
        if id(value) in self.mutated_unread:
            raise ConversionError(f"{what} is read after a deferred change to it")
        seen = self._by_id.get(id(value))
        if seen is not None:
            first_path, result = seen
            if first_path != path:
                self.guard(f"{path} is {first_path}", f"{what} is the same object as {first_path}")
            return result
        if (path.startswith(("a[", "k[")) and (is_eager_tensor(value) or is_user_class(type(value))
                                                and not is_framework_object(value))) or type(value) in (list, dict, set):
            for other_path, other in self._distinct:
                if type(other) is type(value) or is_eager_tensor(other) and is_eager_tensor(value):
                    self.guard(f"{path} is not {other_path}", f"{what} is not the same object as {other_path}")
            self._distinct.append((path, value))
        result = self._read(value, path, what)
        self._by_id[id(value)] = (path, result)
        self._labels[id(value)] = self._labels[id(result)] = _LABEL_PREFIX.sub("", what)
        self._keep += [value, result]
        return result

    def _read(self, value: Any, path: str, what: str) -> Any:
        if is_eager_tensor(value):
            return self._tensor_input(value, path, what)
        if path in self.fed_scalars and type(value) is self.fed_scalars[path]:
            return self._fed_scalar(path, what)
        if isinstance(value, bool) or value is None:
            self.guard(f"{path} is {value!r}", f"{what} is {value!r}")
            return value
        if type(value) in SCALARS:
            self.guard(f"type({path}) is {type(value).__name__} and {path} == {self._literal(value)}",
                       f"{what} == {value!r}", path, "scalar" if type(value) in (int, float) else None)
            return value
        if isinstance(value, tuple) and type(value) is tuple or isinstance(value, list) and type(value) in (list,):
            return self._sequence(value, path, what)
        if type(value) is dict:
            return self._dict(value, path, what)
        if type(value) in (set, frozenset):
            return self._set(value, path, what)
        if hasattr(type(value), "__next__"):
            # Iterating it while tracing would consume the caller's iterator (or generator)
            # before the run is known to succeed.
            raise ConversionError(f"{what} is an iterator ({type(value).__name__}): a trace would consume it")
        if isinstance(value, np.ndarray):
            name = self.const(value.copy(), "arr")
            self.guard(f"_np_equal({path}, {name})", f"{what} equals the array seen ({value.dtype}{list(value.shape)})")
            return value
        if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, types.ModuleType, type,
                              types.MethodType, types.BuiltinMethodType)) or callable(value) and not hasattr(value, "__dict__"):
            self.guard(f"{path} is {self.const(value)}", f"{what} is {_name(value)}")
            return value
        if is_framework_object(value):
            self.guard(f"{path} is {self.const(value)}", f"{what} is the same {type(value).__name__} object")
            self.track(value, path)
            return value
        if hasattr(value, "__dict__") and is_user_class(type(value)):
            self.guard(f"type({path}) is {self.const(type(value), 't')}", f"{what} is a {type(value).__qualname__}")
            self.track(value, path)
            return value
        self.guard(f"{path} is {self.const(value)}", f"{what} is the same {type(value).__name__} object")
        self.track(value, path)
        return value

    def _fed_scalar(self, path: str, what: str):
        """A Python int/float that changes from call to call: a graph input, as a PyScalar."""
        kind = self.fed_scalars[path]
        bounds = f" and {-2 ** 63} <= {path} < {2 ** 63}" if kind is int else ""
        self.guard(f"type({path}) is {kind.__name__}{bounds}", f"{what} is an {kind.__name__} (fed to the graph)"
                   if kind is int else f"{what} is a {kind.__name__} (fed to the graph)")
        if path in self.arg_inputs:
            return PyScalar(self.arg_inputs[path], kind)
        getter = self.getter(path)
        dtype = DTYPES[kind]

        def closure():
            return tf.constant(getter(*CALL.args), dtype)

        placeholder = _tf_private.call_time_input(self.outer_graph, closure, tf.TensorSpec([], dtype), key=path)
        self.heap_inputs[path] = HeapInput(path, tf.TensorSpec([], dtype), placeholder, what)
        return PyScalar(placeholder, kind)

    def _literal(self, value: Any) -> str:
        if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
            return self.const(value, "f")
        return repr(value)

    def _sequence(self, value, path: str, what: str):
        kind = type(value).__name__
        if len(value) > 256:
            raise ConversionError(f"{what} is a {kind} of {len(value)} items: too long to specialize")
        if _only_scalars(value):
            name = self.const(_frozen_copy(value), "v")
            self.guard(f"type({path}) is {kind} and {path} == {name}", f"{what} == {_short(value)}")
            out = value if isinstance(value, tuple) else list(value)
        else:
            self.guard(f"type({path}) is {kind} and len({path}) == {len(value)}", f"{what} is a {kind} of {len(value)}")
            items = [self.read(v, f"{path}[{i}]", f"{what}[{i}]") for i, v in enumerate(value)]
            out = tuple(items) if isinstance(value, tuple) else items
        if isinstance(out, list):
            self.track(out, path)
        return out

    def _dict(self, value: dict, path: str, what: str):
        if len(value) > 256:
            raise ConversionError(f"{what} is a dict of {len(value)} items: too long to specialize")
        if not all(type(k) in SCALARS for k in value):
            raise ConversionError(f"{what} is a dict with non-scalar keys")
        self.guard(f"type({path}) is dict and list({path}) == {list(value)!r}", f"{what} has keys {list(value)!r}")
        out = {k: self.read(v, f"{path}[{k!r}]", f"{what}[{k!r}]") for k, v in value.items()}
        self.track(out, path)
        return out

    def _set(self, value, path: str, what: str):
        """A set of Python scalars, guarded by value; converted code gets a copy (mutations
        of a set from Python state are deferred like a list's, never made while tracing)."""
        if not all(type(v) in SCALARS for v in value):
            raise ConversionError(f"{what} is a {type(value).__name__} of objects other than Python scalars")
        name = self.const(frozenset(value), "v")
        self.guard(f"type({path}) is {type(value).__name__} and {path} == {name}", f"{what} == {_short(value)}")
        out = type(value)(value)
        if type(out) is set:
            self.track(out, path)
        return out

    def _tensor_input(self, value, path: str, what: str):
        spec = self.arg_specs.get(path) or tf.TensorSpec(self.heap_shapes.get(path, value.shape), value.dtype)
        dname = self.const(value.dtype, "dt")
        dims = tuple(spec.shape.as_list())
        if None in dims:
            shape_check = f"_shape_ok({path}.shape, {dims!r})"
        else:
            shape_check = f"{path}.shape == {dims!r}"
        self.guard(f"type({path}) is _EagerTensor and {path}.dtype == {dname} and {shape_check}",
                   f"{what} is a {value.dtype.name} tensor of shape {dims}", path, "tensor")
        if path in self.arg_inputs:
            return self.arg_inputs[path]
        existing = self.heap_inputs.get(path)
        if existing is not None:
            return existing.placeholder
        hi = HeapInput(path, spec, what=what)
        hi.placeholder = _capture_at_call_time(self, hi)
        self.heap_inputs[path] = hi
        return hi.placeholder

    # -- speculation ----------------------------------------------------------
    def assume(self, site: Any, kind: str, value: Any) -> Any:
        """Register that this trace assumes ``value`` at ``site`` (see ``janus.trace.speculation``)."""
        assumption = self.speculator.assumption(site, kind, value)
        if assumption not in self.assumptions:
            self.assumptions.append(assumption)
        return assumption

    def assert_that(self, pred: tf.Tensor, message: str, assumption: Any = None) -> Any:
        """An assertion op the graph run must pass (returned); its failure makes Janus re-run eagerly.

        ``assumption`` is the speculation it checks (None for the user's own ``assert``).
        """
        op = tf.debugging.Assert(pred, [tf.constant(message)])
        if op is not None:
            self.assertions.append((op, [assumption]))
        return op

    def nested_assertions(self, start: int, outer_op: Callable[[], Any]) -> None:
        """Assertions created inside a cond/loop body since ``start`` are checked by ``outer_op()``."""
        if len(self.assertions) > start:
            inner = self.assertions[start:]
            del self.assertions[start:]
            self.assertions.append((outer_op(), [a for _, group in inner for a in group]))

    # -- branches: checkpoint / restore, run-time checks ---------------------------
    def checkpoint(self) -> "Checkpoint":
        """What tracing one side of a tensor conditional may change in this context.

        Guards, heap inputs and namespace constants a side records are kept whatever
        happens (they hold for both sides); everything else is captured here, so the
        other side can be traced from the same state (:meth:`restore`).  Sides cannot
        write the attribute overlay (``st_attr`` refuses under ``dynamic_depth``); it is
        captured anyway, so a side never sees another's writes.
        """
        return Checkpoint(dict(self._by_id), dict(self._labels), dict(self.overlay), set(self.mutated_unread),
                          list(self._distinct), len(self.assertions), len(self.assumptions),
                          len(self.effect_sinks))

    def restore(self, cp: "Checkpoint") -> None:
        """Return to the state of ``cp`` (which stays usable) that a side's code can observe:
        what was read (and how it was named), the overlay, deferred mutations.  Assertions
        and assumptions made since stay (they belong to the side's graph); so do guards and
        heap inputs."""
        self._by_id, self._labels, self.overlay = dict(cp.by_id), dict(cp.labels), dict(cp.overlay)
        self.mutated_unread, self._distinct = set(cp.mutated_unread), list(cp.distinct)
        del self.effect_sinks[cp.effect_sinks:]

    def rollback(self, cp: "Checkpoint") -> None:
        """:meth:`restore`, and also forget the assertions and assumptions made since ``cp``:
        a side that is thrown away (it raised while tracing) checks and assumes nothing."""
        self.restore(cp)
        del self.assertions[cp.assertions:]
        del self.assumptions[cp.assumptions:]

    def merge(self, other: "Checkpoint") -> None:
        """After both sides of a conditional: also know what the other side (state ``other``)
        read, and that containers it changed by a deferred mutation must not be read."""
        for key, value in other.by_id.items():
            self._by_id.setdefault(key, value)
        for key, value in other.labels.items():
            self._labels.setdefault(key, value)
        self.mutated_unread |= other.mutated_unread
        known = {path for path, _ in self._distinct}
        self._distinct += [(path, value) for path, value in other.distinct if path not in known]

    def check(self, kind: str, site: Any, value: Any, where: str = "", detail: str = "") -> Any:
        """Register the assumption of a run-time check (see ``janus.trace.speculation``) that
        an assertion of this trace makes; ConversionError when it failed before."""
        speculator = self.speculator if self.speculator is not None else _no_profile()
        assumption = speculator.check(kind, site, value, where, detail)
        if assumption is None:
            raise ConversionError(f"{_CHECK_FAILED[kind]} (this failed in a graph before)")
        if assumption not in self.assumptions:
            self.assumptions.append(assumption)
        return assumption

    # -- effects ----------------------------------------------------------------
    def effect(self, kind: str, payload: Any, where: str) -> None:
        """Record a Python side effect to replay after the graph ran successfully.

        Inside a tensor loop it cannot be replayed (its count is dynamic); inside a
        ``tf.cond`` side it goes to that side's list (see ``janus.commit.branch_effects``).
        """
        if self.dynamic_depth:
            if not self.effect_sinks or self.effect_sinks[-1] is None:
                raise ConversionError(f"{where} inside a tensor-dependent loop")
            self.effect_sinks[-1].append((kind, payload))
            return
        self.effects.append((kind, payload))


@dataclass(frozen=True)
class Checkpoint:
    """A snapshot of a :class:`TraceContext` (see :meth:`TraceContext.checkpoint`)."""

    by_id: dict
    labels: dict
    overlay: dict
    mutated_unread: set
    distinct: list
    assertions: int
    assumptions: int
    effect_sinks: int


_CHECK_FAILED = {
    "not_raising": "a side of a tensor-dependent branch raises, and it was taken",
    "int32": "a Python int the graph computes did not fit int32 where TensorFlow converts it",
}


def _no_profile() -> Speculator:
    return Speculator(None)


def _capture_at_call_time(ctx: TraceContext, hi: HeapInput):
    getter = ctx.getter(hi.path)

    def closure():
        return getter(*CALL.args)

    return _tf_private.call_time_input(ctx.outer_graph, closure, hi.spec, key=hi.path)


def _only_scalars(value) -> bool:
    return all(type(v) in SCALARS or (type(v) in (tuple, list) and _only_scalars(v)) for v in value)


def _frozen_copy(value):
    """A deep copy of a nested list/tuple of scalars (the value a guard compares against)."""
    items = [_frozen_copy(v) if type(v) in (tuple, list) else v for v in value]
    return tuple(items) if type(value) is tuple else items


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _name(value: Any) -> str:
    mod = getattr(value, "__module__", None)
    qual = getattr(value, "__qualname__", None) or getattr(value, "__name__", None) or type(value).__name__
    return f"{mod}.{qual}" if mod else str(qual)
