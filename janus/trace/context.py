"""The trace context: what one trace of converted code depended on.

It is composed of five parts: the :class:`GuardSet` (guards and the namespace their
expressions use), the :class:`HeapModel` (what was read and how converted code sees
it), the :class:`Checks` (assertions and the assumptions they check), the
:class:`EffectLog` (deferred effects) and the :class:`~janus.trace.seeds.SeedStream`
(the seeds of random draws); ``checkpoint``/``restore`` let each side of a
tensor conditional be traced from the same state.

While converted code runs inside a ``FuncGraph``, every value it reads from outside
(arguments, globals, closure cells, object attributes) passes through
:meth:`HeapModel.read`.  That method decides how the graph may use the value and
records the *guard* that makes the decision safe to reuse:

* an eager tensor becomes a graph input fed at every call (never a stale constant),
  guarded on dtype and shape; so do a ``tf.data.Dataset`` (guarded on its element spec)
  and a ``RaggedTensor``, ``SparseTensor`` or ``ExtensionType`` (on its ``TypeSpec``);
* a Python scalar, string or ``None`` is specialized as a constant, guarded by value;
* functions, modules, classes, variables and framework objects (Keras layers,
  optimizers, ``tf.Module``) are used as they are, guarded by identity;
* a user object is guarded by its class and *tracked*: reads of its attributes are
  recorded in turn, relative to the access path it was reached by;
* tuples, lists and dicts are rebuilt element by element (lists and dicts read from
  the heap become shadow copies; mutating them is the state module's business).

Where a value came from is a typed :mod:`source <janus.trace.sources>`; it renders
the Python expression (over ``a``, ``k`` and constants of the guard namespace) from
which the guard and feed code of a cache entry is generated once and compiled.
"""
from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import tensorflow as tf

from janus import _tf_private
from janus.errors import ConversionError
from janus.trace import active
from janus.trace.active import CALL
from janus.trace.guards import Guard, GuardKind, fits_spec
from janus.trace.seeds import DATASET_RANDOM_OPS, STATEFUL_RANDOM_OPS, SeedStream
from janus.trace.sources import Arg, KwArg, Source
from janus.trace.speculation import Speculator
from janus.trace.scalars import DTYPES, PyScalar, fed_scalar
from janus.trace.values import (
    SCALARS, is_eager_composite, is_eager_tensor, is_framework_object, is_plain_callable, is_user_class,
)


@dataclass
class HeapInput:
    """A tensor, a fed Python number or a dataset read from Python state, fed into the graph at every call."""

    source: Source
    spec: tf.TypeSpec
    placeholder: Any = None


@dataclass
class GuardSet:
    """The guards a trace recorded, and the namespace their expressions refer to (the
    constants guard, feed and commit code of the cache entry is compiled against)."""

    guards: list[Guard] = field(default_factory=list)
    namespace: dict[str, Any] = field(default_factory=dict)
    _exprs: set[str] = field(default_factory=set)
    _const_ids: dict[int, str] = field(default_factory=dict)
    _keep: list[Any] = field(default_factory=list)

    def const(self, obj: Any, hint: str = "o") -> str:
        """Name under which ``obj`` is reachable from generated guard/feed code."""
        name = self._const_ids.get(id(obj))
        if name is None:
            name = f"_{hint}{len(self.namespace)}"
            self.namespace[name] = obj
            self._const_ids[id(obj)] = name
            self._keep.append(obj)
        return name

    def guard(self, expr: str, description: str, kind: GuardKind, source: Source | None = None) -> None:
        if expr not in self._exprs:
            self._exprs.add(expr)
            self.guards.append(Guard(expr, description, kind, source))

    def subsume_type(self, source: Source) -> None:
        """Drop the type guard on ``source`` (a root of a recursion over trees, whose class
        the recursion's own guard tests), unless the trace read something through it."""
        def within(s: Any) -> bool:
            while s is not None:
                if s == source:
                    return True
                s = getattr(s, "parent", None)
            return False

        if not any(g.source != source and within(g.source) for g in self.guards):
            dropped = [g for g in self.guards if g.source == source and g.kind is GuardKind.TYPE]
            self.guards = [g for g in self.guards if g not in dropped]
            self._exprs -= {g.expr for g in dropped}

    def getter(self, source: Source) -> Callable[[tuple, dict], Any]:
        """``lambda a, k: <source>``: reads the source on the arguments of a later call."""
        return eval(f"lambda a, k: {source.expr}", self.namespace)  # noqa: S307 - generated access path


@dataclass
class HeapModel:
    """What the trace read from outside (arguments, globals, cells, attributes), how
    converted code sees each value, and which of them are graph inputs."""

    guard_set: GuardSet
    relaxed: bool = False
    fed_scalars: dict[Source, type] = field(default_factory=dict)
    heap_shapes: dict[Source, tf.TensorShape] = field(default_factory=dict)
    outer_graph: Any = None
    arg_inputs: dict[Source, Any] = field(default_factory=dict)
    arg_specs: dict[Source, tf.TensorSpec] = field(default_factory=dict)
    heap_inputs: dict[Source, HeapInput] = field(default_factory=dict)
    composite_specs: dict[Source, tf.TypeSpec] = field(default_factory=dict)
    overlay: dict[tuple, Any] = field(default_factory=dict)
    mutated_unread: set = field(default_factory=set)
    _sources: dict[int, Source] = field(default_factory=dict)
    _by_id: dict[int, tuple] = field(default_factory=dict)
    _read_from: dict[int, Source] = field(default_factory=dict)
    _distinct: list[tuple] = field(default_factory=list)
    _created: set[int] = field(default_factory=set)
    created_classes: set[type] = field(default_factory=set)
    random_datasets: list[str] = field(default_factory=list)
    _keep: list[Any] = field(default_factory=list)

    def const(self, obj: Any, hint: str = "o") -> str:
        return self.guard_set.const(obj, hint)

    def guard(self, expr: str, description: str, kind: GuardKind, source: Source | None = None) -> None:
        self.guard_set.guard(expr, description, kind, source)

    def getter(self, source: Source) -> Callable[[tuple, dict], Any]:
        return self.guard_set.getter(source)

    def was_read(self, obj: Any) -> bool:
        return id(obj) in self._by_id

    def source_of(self, obj: Any) -> Source | None:
        """The source of a Python-state object the trace tracks (its writes are deferred)."""
        return self._sources.get(id(obj))

    def label_of(self, obj: Any) -> str | None:
        """How the user's code named ``obj`` (or the graph value made of it) when the trace read it."""
        source = self._read_from.get(id(obj))
        return source.label if source is not None else None

    def adopt(self, obj: Any) -> Any:
        """Mark ``obj`` as built by this trace (its attributes are the trace's own to change)."""
        self._created.add(id(obj))
        self._keep.append(obj)
        return obj

    def is_created(self, obj: Any) -> bool:
        return id(obj) in self._created

    def track(self, obj: Any, source: Source) -> None:
        if id(obj) not in self._sources:
            self._sources[id(obj)] = source
            self._keep.append(obj)

    # -- reads ------------------------------------------------------------------
    def read(self, value: Any, source: Source) -> Any:
        """Return the value converted code should see for ``value`` read from ``source``.

        The same object reached by two sources is one value in the trace too (aliasing
        is guarded with ``is``); distinct arguments and distinct mutable containers
        are guarded with ``is not``, since converted code may depend on either.
        """
        if type(value) in SCALARS or is_plain_callable(value):
            return self._read(value, source)
        if id(value) in self.mutated_unread:
            raise ConversionError(f"{source.what} is read after a deferred change to it")
        seen = self._by_id.get(id(value))
        if seen is not None:
            first, result = seen
            if first != source:
                self.guard(f"{source.expr} is {first.expr}", f"{source.what} is the same object as {first.label}",
                           GuardKind.ALIAS, source)
            return result
        if (isinstance(source, (Arg, KwArg)) and (is_eager_tensor(value) or is_user_class(type(value))
                                                  and not is_framework_object(value))) \
                or type(value) in (list, dict, set):
            for other_source, other in self._distinct:
                if type(other) is type(value) or is_eager_tensor(other) and is_eager_tensor(value):
                    self.guard(f"{source.expr} is not {other_source.expr}",
                               f"{source.what} is not the same object as {other_source.label}", GuardKind.ALIAS, source)
            self._distinct.append((source, value))
        result = self._read(value, source)
        self._by_id[id(value)] = (source, result)
        self._read_from[id(value)] = self._read_from[id(result)] = source
        self._keep += [value, result]
        return result

    def _read(self, value: Any, source: Source) -> Any:
        path, what = source.expr, source.what
        if is_eager_tensor(value):
            return self._tensor_input(value, source)
        if is_eager_composite(value):
            return self._composite_input(value, source)
        if source in self.fed_scalars and type(value) is self.fed_scalars[source]:
            return self._fed_scalar(source)
        if isinstance(value, bool) or value is None:
            self.guard(f"{path} is {value!r}", f"{what} is {value!r}", GuardKind.VALUE, source)
            return value
        if type(value) in SCALARS:
            self.guard(f"type({path}) is {type(value).__name__} and {path} == {self._literal(value)}",
                       f"{what} == {value!r}", GuardKind.VALUE, source)
            return value
        if type(value) in (tuple, list) or isinstance(value, tuple) and hasattr(type(value), "_fields"):
            return self._sequence(value, source)
        if type(value) is dict:
            return self._dict(value, source)
        if type(value) in (set, frozenset):
            return self._set(value, source)
        if isinstance(value, tf.data.Dataset):
            return self._dataset_input(value, source)
        if hasattr(type(value), "__next__"):
            # Iterating it while tracing would consume the caller's iterator (or generator)
            # before the run is known to succeed.
            raise ConversionError(f"{what} is an iterator ({type(value).__name__}): a trace would consume it")
        if isinstance(value, np.ndarray):
            name = self.const(value.copy(), "arr")
            self.guard(f"_np_equal({path}, {name})", f"{what} equals the array seen ({value.dtype}{list(value.shape)})",
                       GuardKind.VALUE, source)
            return value
        if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, types.ModuleType, type,
                              types.MethodType, types.BuiltinMethodType)) or callable(value) and not hasattr(value, "__dict__"):
            self.guard(f"{path} is {self.const(value)}", f"{what} is {_name(value)}", GuardKind.IDENTITY, source)
            return value
        if is_framework_object(value):
            self.guard(f"{path} is {self.const(value)}", f"{what} is the same {type(value).__name__} object",
                       GuardKind.IDENTITY, source)
            self.track(value, source)
            return value
        if hasattr(value, "__dict__") and is_user_class(type(value)):
            self.guard(f"type({path}) is {self.const(type(value), 't')}", f"{what} is a {type(value).__qualname__}",
                       GuardKind.TYPE, source)
            self.track(value, source)
            return value
        self.guard(f"{path} is {self.const(value)}", f"{what} is the same {type(value).__name__} object",
                   GuardKind.IDENTITY, source)
        self.track(value, source)
        return value

    def _fed_scalar(self, source: Source):
        """A Python int/float that changes from call to call: a graph input, as a PyScalar."""
        kind = self.fed_scalars[source]
        path = source.expr
        bounds = f" and {-2 ** 63} <= {path} < {2 ** 63}" if kind is int else ""
        article = "an" if kind is int else "a"
        self.guard(f"type({path}) is {kind.__name__}{bounds}", f"{source.what} is {article} {kind.__name__} (fed to the graph)",
                   GuardKind.TYPE, source)
        if source in self.arg_inputs:
            return PyScalar(self.arg_inputs[source], kind)
        getter = self.getter(source)
        dtype = DTYPES[kind]

        def closure():
            return fed_scalar(getter(*CALL.args), kind)

        placeholder = _tf_private.call_time_input(self.outer_graph, closure, tf.TensorSpec([], dtype), key=path)
        self.heap_inputs[source] = HeapInput(source, tf.TensorSpec([], dtype), placeholder)
        return PyScalar(placeholder, kind)

    def _literal(self, value: Any) -> str:
        if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
            return self.const(value, "f")
        return repr(value)

    def _sequence(self, value, source: Source):
        """A tuple, list or named tuple, read item by item."""
        kind, path, what = type(value).__name__, source.expr, source.what
        named = type(value) not in (tuple, list)
        cls = self.const(type(value), "t") if named else kind
        if len(value) > 256:
            raise ConversionError(f"{what} is a {kind} of {len(value)} items: too long to specialize")
        if _only_scalars(value):
            name = self.const(_frozen_copy(value), "v")
            self.guard(f"type({path}) is {cls} and {path} == {name}", f"{what} == {_short(value)}",
                       GuardKind.VALUE, source)
            out = value if isinstance(value, tuple) else list(value)
        else:
            self.guard(f"type({path}) is {cls} and len({path}) == {len(value)}", f"{what} is a {kind} of {len(value)}",
                       GuardKind.STRUCTURE, source)
            items = [self.read(v, source.item(i)) for i, v in enumerate(value)]
            out = type(value)(*items) if named else tuple(items) if isinstance(value, tuple) else items
        if isinstance(out, list):
            self.track(out, source)
        return out

    def _dict(self, value: dict, source: Source):
        path, what = source.expr, source.what
        if len(value) > 256:
            raise ConversionError(f"{what} is a dict of {len(value)} items: too long to specialize")
        if not all(type(k) in SCALARS for k in value):
            raise ConversionError(f"{what} is a dict with non-scalar keys")
        self.guard(f"type({path}) is dict and list({path}) == {list(value)!r}", f"{what} has keys {list(value)!r}",
                   GuardKind.STRUCTURE, source)
        out = {k: self.read(v, source.item(k)) for k, v in value.items()}
        self.track(out, source)
        return out

    def _set(self, value, source: Source):
        """A set of Python scalars, guarded by value; converted code gets a copy (mutations
        of a set from Python state are deferred like a list's, never made while tracing)."""
        path, what = source.expr, source.what
        if not all(type(v) in SCALARS for v in value):
            raise ConversionError(f"{what} is a {type(value).__name__} of objects other than Python scalars")
        name = self.const(frozenset(value), "v")
        self.guard(f"type({path}) is {type(value).__name__} and {path} == {name}", f"{what} == {_short(value)}",
                   GuardKind.VALUE, source)
        out = type(value)(value)
        if type(out) is set:
            self.track(out, source)
        return out

    def _tensor_input(self, value, source: Source):
        spec = self.arg_specs.get(source) or tf.TensorSpec(self.heap_shapes.get(source, value.shape), value.dtype)
        path = source.expr
        dname = self.const(value.dtype, "dt")
        dims = tuple(spec.shape.as_list())
        if None in dims:
            shape_check = f"_shape_ok({path}.shape, {dims!r})"
        else:
            shape_check = f"{path}.shape == {dims!r}"
        self.guard(f"type({path}) is _EagerTensor and {path}.dtype == {dname} and {shape_check}",
                   f"{source.what} is a {value.dtype.name} tensor of shape {dims}", GuardKind.TENSOR, source)
        if source in self.arg_inputs:
            return self.arg_inputs[source]
        return self._call_time_input(source, spec)

    def _composite_input(self, value: Any, source: Source):
        """A ``RaggedTensor``, ``SparseTensor`` or ``ExtensionType``: fed through its
        ``TypeSpec`` at every call (the spec widened where sizes changed, as a tensor's
        shape is relaxed), never captured as a constant."""
        spec = self.composite_specs.get(source)
        if spec is None or not fits_spec(value, spec):
            spec = tf.type_spec_from_value(value)
        name = self.const(spec, "ts")
        self.guard(f"_fits({source.expr}, {name})", f"{source.what} is a {type(value).__name__} of {_short(spec)}",
                   GuardKind.SPEC, source)
        return self._call_time_input(source, spec)

    def _call_time_input(self, source: Source, spec: tf.TypeSpec):
        """The graph's placeholder for the value at ``source``, fed at every call."""
        existing = self.heap_inputs.get(source)
        if existing is not None:
            return existing.placeholder
        hi = HeapInput(source, spec)
        hi.placeholder = _capture_at_call_time(self, hi)
        self.heap_inputs[source] = hi
        return hi.placeholder

    def _dataset_input(self, value: tf.data.Dataset, source: Source):
        """A dataset: fed to the graph through its ``DatasetSpec`` at every call, so any
        dataset with the same element structure runs the same graph (iterating it in the
        graph starts a new iterator, as eager's ``for`` does)."""
        spec = tf.data.DatasetSpec(value.element_spec)
        if _tf_private.dataset_op_types(value) & (DATASET_RANDOM_OPS | STATEFUL_RANDOM_OPS):
            self.random_datasets.append(source.label)
        path = source.expr
        name = self.const(value.element_spec, "es")
        self.guard(f"isinstance({path}, _Dataset) and {path}.element_spec == {name}",
                   f"{source.what} is a dataset of {_short(value.element_spec)}", GuardKind.SPEC, source)
        return self._call_time_input(source, spec)

    # -- one side of a tensor conditional ---------------------------------------------
    def snapshot(self) -> tuple:
        return (dict(self._by_id), dict(self._read_from), dict(self.overlay), set(self.mutated_unread),
                list(self._distinct))

    def restore(self, snap: tuple) -> None:
        by_id, read_from, overlay, mutated_unread, distinct = snap
        self._by_id, self._read_from, self.overlay = dict(by_id), dict(read_from), dict(overlay)
        self.mutated_unread, self._distinct = set(mutated_unread), list(distinct)

    def merge(self, snap: tuple) -> None:
        by_id, read_from, _, mutated_unread, distinct = snap
        for key, value in by_id.items():
            self._by_id.setdefault(key, value)
        for key, value in read_from.items():
            self._read_from.setdefault(key, value)
        self.mutated_unread |= mutated_unread
        known = {source for source, _ in self._distinct}
        self._distinct += [(source, value) for source, value in distinct if source not in known]


@dataclass
class Checks:
    """The assertions a graph run must pass, the assumptions they check, and the TF
    constructs (conds, loops) whose bodies change state or cannot fail (for all-or-nothing
    ordering, ``janus.commit.atomicity``)."""

    speculator: Any = None
    assertions: list[tuple[Any, Any]] = field(default_factory=list)
    assumptions: list[Any] = field(default_factory=list)
    writer_constructs: set = field(default_factory=set)
    # ops that cannot fail as eager's would: conds/loops whose bodies cannot fail, and ops a
    # library builds that eager never runs (tf.vectorized_map's template of the loop body)
    safe_ops: set = field(default_factory=set)
    late_failures: list = field(default_factory=list)  # ops that may fail after a state update, described

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


@dataclass
class EffectLog:
    """Python side effects recorded for the commit, in program order; while a tensor
    construct is traced (``dynamic_depth``), a ``tf.cond`` side's effects go to its sink."""

    effects: list[Any] = field(default_factory=list)
    sinks: list = field(default_factory=list)
    dynamic_depth: int = 0

    def record(self, effect: Any, where: str) -> None:
        """Record a Python side effect (a ``janus.commit.effects.Effect``) to commit after
        the graph ran successfully.

        Inside a tensor loop it cannot be replayed (its count is dynamic); inside a
        ``tf.cond`` side it goes to that side's list (see ``janus.commit.branch_effects``).
        """
        if self.dynamic_depth:
            if not self.sinks or self.sinks[-1] is None:
                raise ConversionError(f"{where} inside a tensor-dependent loop")
            self.sinks[-1].append(effect)
            return
        self.effects.append(effect)



class TraceContext:
    """Everything one trace depends on and produces besides its outputs, in five parts:
    the guard set, the heap model (reads), the checks (assertions, assumptions), the
    effect log and the seed stream (random draws).  Converted code reaches it through
    :func:`janus.trace.active.current`."""

    def __init__(self, *, relaxed: bool = False, speculator: Any = None, fed_scalars: dict | None = None,
                 heap_shapes: dict | None = None, convert: Callable[[Any], Callable] | None = None):
        self.guard_set = GuardSet()
        self.heap = HeapModel(self.guard_set, relaxed=relaxed, fed_scalars=dict(fed_scalars or {}),
                              heap_shapes=dict(heap_shapes or {}))
        self.checks = Checks(speculator)
        self.log = EffectLog()
        self.seeds = SeedStream()
        self.convert = convert  # user function -> its converted code (the runtime's inliner)
        self.on_collective: Callable[[Any], None] | None = None  # told when a multi-worker strategy is used
        self.collective: Any = None
        self.recursion: Any = None  # recursion over trees in this trace (janus.runtime.recursion)

    def uses_collective(self, strategy: Any) -> None:
        """The trace calls a multi-worker ``tf.distribute`` strategy: its graphs run only when
        every worker runs its own (``janus.driver.function``), and may carry no assertion."""
        self.collective = strategy
        if self.on_collective is not None:
            self.on_collective(strategy)

    # -- activation -------------------------------------------------------------
    def __enter__(self) -> "TraceContext":
        self._prev = active.swap(self)
        return self

    def __exit__(self, *exc) -> None:
        active.swap(self._prev)

    # -- the operations converted code needs most, by part ----------------------
    def read(self, value: Any, source: Source) -> Any:
        return self.heap.read(value, source)

    def source_of(self, obj: Any) -> Source | None:
        return self.heap.source_of(obj)

    def const(self, obj: Any, hint: str = "o") -> str:
        return self.guard_set.const(obj, hint)

    def guard(self, expr: str, description: str, kind: GuardKind, source: Source | None = None) -> None:
        self.guard_set.guard(expr, description, kind, source)

    def getter(self, source: Source) -> Callable[[tuple, dict], Any]:
        return self.guard_set.getter(source)

    def effect(self, effect: Any, where: str) -> None:
        self.log.record(effect, where)

    def assert_that(self, pred: tf.Tensor, message: str, assumption: Any = None) -> Any:
        return self.checks.assert_that(pred, message, assumption)

    # -- branches: checkpoint / restore -----------------------------------------
    def checkpoint(self) -> "Checkpoint":
        """What tracing one side of a tensor conditional may change in this context.

        Guards, heap inputs and namespace constants a side records are kept whatever
        happens (they hold for both sides); everything else is captured here, so the
        other side can be traced from the same state (:meth:`restore`).  Sides cannot
        write the attribute overlay (``st_attr`` refuses under ``dynamic_depth``); it is
        captured anyway, so a side never sees another's writes.
        """
        return Checkpoint(self.heap.snapshot(), len(self.checks.assertions), len(self.checks.assumptions),
                          len(self.log.sinks), self.seeds.position)

    def restore(self, cp: "Checkpoint") -> None:
        """Return to the state of ``cp`` (which stays usable) that a side's code can observe:
        what was read (and how it was named), the overlay, deferred mutations.  Assertions
        and assumptions made since stay (they belong to the side's graph); so do guards and
        heap inputs."""
        self.heap.restore(cp.heap)
        del self.log.sinks[cp.effect_sinks:]
        self.seeds.position = cp.seed_position

    def rollback(self, cp: "Checkpoint") -> None:
        """:meth:`restore`, and also forget the assertions and assumptions made since ``cp``:
        a side that is thrown away (it raised while tracing) checks and assumes nothing."""
        self.restore(cp)
        del self.checks.assertions[cp.assertions:]
        del self.checks.assumptions[cp.assumptions:]

    def merge(self, other: "Checkpoint") -> None:
        """After both sides of a conditional: also know what the other side (state ``other``)
        read, and that containers it changed by a deferred mutation must not be read."""
        self.heap.merge(other.heap)


@dataclass(frozen=True)
class Checkpoint:
    """A snapshot of a :class:`TraceContext` (see :meth:`TraceContext.checkpoint`)."""

    heap: tuple
    assertions: int
    assumptions: int
    effect_sinks: int
    seed_position: Any


_CHECK_FAILED = {
    "not_raising": "a side of a tensor-dependent branch raises, and it was taken",
    "int32": "a Python int the graph computes did not fit int32 where TensorFlow converts it",
}


def _no_profile() -> Speculator:
    return Speculator(None)


def _capture_at_call_time(ctx: "HeapModel", hi: HeapInput):
    getter = ctx.getter(hi.source)

    def closure():
        return getter(*CALL.args)

    return _tf_private.call_time_input(ctx.outer_graph, closure, hi.spec, key=hi.source.expr)


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
