"""Guards: the one builder of guard code, and the compiled guard and input functions of a cache entry.

A guard is a Python expression over ``a`` (positional arguments), ``k`` (keyword
arguments) and constants of the entry's namespace, with a readable description that
``janus.explain`` and guard-miss messages show.  :class:`GuardBuilder` is the only place
guard code is written: one method per kind of guard (type, identity, value, tensor
dtype and shape, length, ...), each recording its guard once.  The guards are compiled
once into a single function, so checking a cache entry costs one call and a chain of
comparisons, not a walk over generic structures.
"""
from __future__ import annotations

import array
import collections
import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import tensorflow as tf

from janus.trace.scalars import EAGER_TENSOR, encodes, fed_scalar
from janus.trace.sources import Source

if TYPE_CHECKING:
    from janus.lowering.trees.forest_plan import ForestPlan


class GuardKind(enum.Enum):
    """What a guard pins; ``janus.explain`` groups guards by kind."""

    TENSOR = "tensor dtype and shape"
    SPEC = "type spec (datasets, iterators, composite tensors)"
    VALUE = "Python value"
    TYPE = "type"
    STRUCTURE = "container structure"
    IDENTITY = "object identity"
    ALIAS = "aliasing"
    ABSENT = "name not rebound or attribute not set"
    FOREST = "recursive structures (each node fits a traced case)"
    LIBRARY_STATE = "TensorFlow and Keras objects' Python state"


@dataclass
class Guard:
    """A condition over ``a``, ``k`` and namespace constants that must hold to reuse a graph.

    ``source`` is the value it is about (None for conditions on a namespace, such as a
    builtin not being shadowed).  When a ``VALUE`` guard on a Python number fails, the
    next graph feeds the number; when a ``TENSOR`` guard fails, the shape is relaxed.
    """

    expr: str
    description: str
    kind: GuardKind
    source: Source | None = None
    # what the guard holds the source (or name) to, where a reader needs it without parsing
    # ``expr``: a scalar's value, a class, the name that must not be rebound or set
    expected: Any = field(default=None, compare=False)


class GuardBuilder:
    """The guards one trace records, and the namespace their code refers to.

    Each method below writes one kind of guard (its code and its description), records
    it unless the same code is recorded already, and returns it.  ``const`` puts an object
    in the namespace (the constants guard, feed and commit code of the entry is compiled
    against); the namespace starts with the helpers guard code calls.
    """

    def __init__(self) -> None:
        self.guards: list[Guard] = []
        self.namespace: dict[str, Any] = guard_namespace_base()
        self._recorded: dict[str, Guard] = {}
        self._const_ids: dict[int, str] = {}
        self._keep: list[Any] = []

    def const(self, obj: Any, hint: str = "o") -> str:
        """Name under which ``obj`` is reachable from generated guard/feed code."""
        name = self._const_ids.get(id(obj))
        if name is None:
            name = f"_{hint}{len(self.namespace)}"
            self.namespace[name] = obj
            self._const_ids[id(obj)] = name
            self._keep.append(obj)
        return name

    def add(self, expr: str, description: str, kind: GuardKind, source: Source | None = None,
            expected: Any = None) -> Guard:
        """Record a guard (once per expression); the methods below write its code."""
        recorded = self._recorded.get(expr)
        if recorded is None:
            recorded = self._recorded[expr] = Guard(expr, description, kind, source, expected)
            self.guards.append(recorded)
        return recorded

    # -- values ----------------------------------------------------------------------
    def is_constant(self, source: Source, value: bool | None) -> Guard:
        """``True``, ``False`` or ``None``: the very object."""
        return self.add(f"{source.expr} is {value!r}", f"{source.what} is {value!r}", GuardKind.VALUE, source, value)

    def equals(self, source: Source, value: Any) -> Guard:
        """A Python scalar (int, float, str, bytes, complex) of this type and value."""
        path = source.expr
        return self.add(f"type({path}) is {type(value).__name__} and {path} == {self._literal(value)}",
                        f"{source.what} == {value!r}", GuardKind.VALUE, source, value)

    def equals_sequence(self, source: Source, value: tuple | list) -> Guard:
        """A tuple, list or named tuple of Python scalars (nested), compared with a copy."""
        path, cls = source.expr, self._sequence_type(value)
        name = self.const(_frozen_copy(value), "v")
        return self.add(f"type({path}) is {cls} and {path} == {name}", f"{source.what} == {_short(value)}",
                        GuardKind.VALUE, source)

    def equals_numpy_scalar(self, source: Source, value: np.generic) -> Guard:
        """A NumPy scalar of this type and these bytes (so ``nan`` equals itself and ``-0.0``
        is not ``0.0``)."""
        path, cls = source.expr, self.const(type(value), "t")
        return self.add(f"type({path}) is {cls} and {path}.tobytes() == {value.tobytes()!r}",
                        f"{source.what} == {value!r}", GuardKind.VALUE, source)

    def equals_set(self, source: Source, value: set | frozenset) -> Guard:
        """A set or frozenset of Python scalars, compared with a frozen copy."""
        path, name = source.expr, self.const(frozenset(value), "v")
        return self.add(f"type({path}) is {type(value).__name__} and {path} == {name}",
                        f"{source.what} == {_short(value)}", GuardKind.VALUE, source)

    def equals_array(self, source: Source, value: np.ndarray, copied: bool = False) -> Guard:
        """A NumPy array equal (dtype, shape, elements) to a copy of this one (``copied``:
        ``value`` is that copy already, the heap's read-only one)."""
        name = self.const(value if copied else value.copy(), "arr")
        return self.add(f"_np_equal({source.expr}, {name})",
                        f"{source.what} equals the array seen ({value.dtype}{list(value.shape)})", GuardKind.VALUE, source)

    # -- types and structure -----------------------------------------------------------
    def type_is(self, source: Source, cls: type) -> Guard:
        """Exactly of class ``cls`` (a builtin class by its name, any other through the namespace)."""
        ref = cls.__name__ if cls.__module__ == "builtins" else self.const(cls, "t")
        return self.add(f"type({source.expr}) is {ref}", f"{source.what} is a {cls.__qualname__}", GuardKind.TYPE,
                        source, cls)

    def fed_number(self, source: Source, kind: type) -> Guard:
        """A Python int (within int64), float or str (with UTF-8 bytes) of any value: the graph
        is fed it."""
        path = source.expr
        if not isinstance(kind, type):  # a list of numbers: its kind checks it
            return self.add(f"{self.const(kind, 'k')}.fits({path})", f"{source.what} is {kind.describe()} (fed to the graph)",
                            GuardKind.TYPE, source)
        bounds = f" and {-2 ** 63} <= {path} < {2 ** 63}" if kind is int else \
            f" and ({path}.isascii() or {self.const(encodes, 'u')}({path}))" if kind is str else ""
        article = "an" if kind is int else "a"
        return self.add(f"type({path}) is {kind.__name__}{bounds}",
                        f"{source.what} is {article} {kind.__name__} (fed to the graph)", GuardKind.TYPE, source)

    def length(self, source: Source, value: tuple | list) -> Guard:
        """A tuple, list or named tuple of this type and length (its items are guarded each)."""
        path, cls = source.expr, self._sequence_type(value)
        return self.add(f"type({path}) is {cls} and len({path}) == {len(value)}",
                        f"{source.what} is a {type(value).__name__} of {len(value)}", GuardKind.STRUCTURE, source)

    def mapping_keys(self, source: Source, value: Any) -> Guard:
        """A dict (``OrderedDict``, ``defaultdict``, ``Counter``, a dict subclass, a
        ``mappingproxy``) of this type with these keys, in this order (its values are guarded
        each); a ``defaultdict`` with this ``default_factory`` too."""
        path, keys, cls = source.expr, list(value), type(value)
        ref = cls.__name__ if cls is dict else self.const(cls, "t")
        factory = getattr(value, "default_factory", None) if isinstance(value, collections.defaultdict) else None
        also = f" and {path}.default_factory is {self.const(factory, 'f')}" if factory is not None else ""
        made = f", default_factory {_name(factory)}" if factory is not None else ""
        return self.add(f"type({path}) is {ref} and list({path}) == {keys!r}{also}",
                        f"{source.what} is {_a(cls)} with keys {_short(keys)}{made}", GuardKind.STRUCTURE, source)

    def deque_length(self, source: Source, value: collections.deque) -> Guard:
        """A deque of this maxlen and length (its items are guarded each)."""
        path, cls = source.expr, self.const(collections.deque, "t")
        return self.add(f"type({path}) is {cls} and {path}.maxlen == {value.maxlen!r} and len({path}) == {len(value)}",
                        f"{source.what} is a deque (maxlen {value.maxlen}) of {len(value)}", GuardKind.STRUCTURE,
                        source)

    def deque_items(self, source: Source, value: collections.deque) -> Guard:
        """A deque of this maxlen holding these Python scalars, in this order."""
        path, cls, name = source.expr, self.const(collections.deque, "t"), self.const(_frozen_copy(list(value)), "v")
        return self.add(f"type({path}) is {cls} and {path}.maxlen == {value.maxlen!r} and list({path}) == {name}",
                        f"{source.what} is a deque (maxlen {value.maxlen}) of items {_short(list(value))}",
                        GuardKind.VALUE, source)

    def equals_typed_array(self, source: Source, value: array.array) -> Guard:
        """An ``array.array`` of this typecode and these elements."""
        path, cls, name = source.expr, self.const(array.array, "t"), self.const(array.array(value.typecode, value), "v")
        return self.add(f"type({path}) is {cls} and {path}.typecode == {value.typecode!r} and {path} == {name}",
                        f"{source.what} is an array('{value.typecode}') equal to {_short(value.tolist())}",
                        GuardKind.VALUE, source)

    def environment_variable(self, source: Source, key: str, value: str | None) -> Guard:
        """Variable ``key`` of ``os.environ`` is ``value`` (None: not set)."""
        seen = "is not set" if value is None else f"== {value!r}"
        return self.add(f"{source.expr}.get({key!r}) == {value!r}", f"{source.label}[{key!r}] {seen}",
                        GuardKind.VALUE, source)

    def equals_mapping(self, source: Source, value: dict) -> Guard:
        """A mapping whose items (in order) equal those of ``value`` (all of ``os.environ``,
        when the trace iterates it)."""
        name = self.const(list(value.items()), "v")
        return self.add(f"list({source.expr}.items()) == {name}", f"{source.what} has the {len(value)} items seen",
                        GuardKind.VALUE, source)

    # -- tensors -----------------------------------------------------------------------
    def tensor(self, source: Source, dtype: tf.DType, dims: tuple) -> Guard:
        """An eager tensor of ``dtype`` and shape ``dims`` (a None dimension: any size)."""
        path, dname = source.expr, self.const(dtype, "dt")
        shape_check = f"_shape_ok({path}.shape, {dims!r})" if None in dims else f"{path}.shape == {dims!r}"
        return self.add(f"type({path}) is _EagerTensor and {path}.dtype == {dname} and {shape_check}",
                        f"{source.what} is a {dtype.name} tensor of shape {dims}", GuardKind.TENSOR, source)

    def equals_tensor(self, source: Source, value: tf.Tensor) -> Guard:
        """An eager tensor of ``value``'s dtype, shape and elements (a small integer or
        boolean tensor specialized by value: ``janus.trace.known_values``)."""
        path, dname, name = source.expr, self.const(value.dtype, "dt"), self.const(np.asarray(value.numpy()), "arr")
        equal = self.const(_tensor_equal, "eq")
        return self.add(f"type({path}) is _EagerTensor and {path}.dtype == {dname} and {equal}({path}, {name})",
                        f"{source.what} equals the tensor seen ({value.dtype.name}{value.shape.as_list()})",
                        GuardKind.VALUE, source)

    def array(self, source: Source, value: np.ndarray | np.generic, dims: tuple) -> Guard:
        """A NumPy array of ``value``'s dtype and shape ``dims`` (a None dimension: any size),
        or a NumPy scalar of ``value``'s type, fed to the graph."""
        if type(value) is not np.ndarray:
            return self.add(f"type({source.expr}) is {self.const(type(value), 't')}",
                            f"{source.what} is a NumPy {type(value).__name__} (fed to the graph)", GuardKind.TENSOR, source)
        dtype = value.dtype
        path, dname, cls = source.expr, self.const(dtype, "dt"), self.const(np.ndarray, "t")
        shape_check = f"{path}.shape == {dims!r}" if None not in dims else f"len({path}.shape) == {len(dims)}" + \
            "".join(f" and {path}.shape[{i}] == {d}" for i, d in enumerate(dims) if d is not None)
        return self.add(f"type({path}) is {cls} and {path}.dtype == {dname} and {shape_check}",
                        f"{source.what} is a {dtype.name} NumPy array of shape {dims} (fed to the graph)",
                        GuardKind.TENSOR, source)

    def composite(self, source: Source, value: Any, spec: tf.TypeSpec) -> Guard:
        """A composite tensor (``RaggedTensor``, ``SparseTensor``, ``ExtensionType``) of ``spec``."""
        name = self.const(spec, "ts")
        return self.add(f"_fits({source.expr}, {name})", f"{source.what} is a {type(value).__name__} of {_short(spec)}",
                        GuardKind.SPEC, source)

    def dataset(self, source: Source, element_spec: Any) -> Guard:
        """A ``tf.data.Dataset`` of this element structure."""
        path, name = source.expr, self.const(element_spec, "es")
        return self.add(f"isinstance({path}, _Dataset) and {path}.element_spec == {name}",
                        f"{source.what} is a dataset of {_short(element_spec)}", GuardKind.SPEC, source)

    def iterator(self, source: Source, value: Any) -> Guard:
        """A ``tf.data`` iterator of this type and element structure."""
        path, cls, name = source.expr, self.const(type(value), "t"), self.const(value.element_spec, "es")
        return self.add(f"type({path}) is {cls} and {path}.element_spec == {name}",
                        f"{source.what} is a tf.data iterator of {_short(value.element_spec)}", GuardKind.SPEC, source)

    # -- identity and aliasing ---------------------------------------------------------------
    def identity(self, source: Source, obj: Any, named: bool = False) -> Guard:
        """This very object; described by its qualified name when ``named`` (functions,
        modules, classes), else as the same object of its type."""
        what = f"{source.what} is {_name(obj)}" if named else f"{source.what} is the same {type(obj).__name__} object"
        return self.add(f"{source.expr} is {self.const(obj)}", what, GuardKind.IDENTITY, source)

    def same_object(self, source: Source, first: Source) -> Guard:
        """The object at ``source`` is the one first read at ``first``."""
        return self.add(f"{source.expr} is {first.expr}", f"{source.what} is the same object as {first.label}",
                        GuardKind.ALIAS, source)

    def distinct(self, source: Source, other: Source) -> Guard:
        """The object at ``source`` is not the one at ``other``."""
        return self.add(f"{source.expr} is not {other.expr}", f"{source.what} is not the same object as {other.label}",
                        GuardKind.ALIAS, source)

    # -- absence -----------------------------------------------------------------------
    def builtin_not_shadowed(self, module: str, name: str) -> Guard:
        """Builtin ``name`` is not rebound in the globals held as namespace entry ``module``."""
        return self.add(f"{name!r} not in {module}", f"global {name} is not rebound (builtin {name})", GuardKind.ABSENT,
                        expected=name)

    def not_on_instance(self, source: Source, name: str) -> Guard:
        """Attribute ``name`` is not set on the instance at ``source`` (its class's is read)."""
        return self.add(f"{name!r} not in {source.expr}.__dict__", f"{source.label}.{name} is not set on the instance",
                        GuardKind.ABSENT, source, name)

    # -- recursive structures ------------------------------------------------------------
    def forest(self, plan: ForestPlan) -> Guard:
        """The call's trees fit the node cases of ``plan`` (``janus.lowering.trees.forest_plan``)."""
        return self.add(f"{self.const(plan, 'forest')}.fits(a, k)",
                        f"{', '.join(plan.root_labels)} fit the {len(plan.cases)} node cases of {plan.label} traced "
                        f"(below {plan.levels} levels)", GuardKind.FOREST)

    # -- the recorded set ------------------------------------------------------------------
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
            for g in dropped:
                del self._recorded[g.expr]

    def getter(self, source: Source) -> Callable[[tuple, dict], Any]:
        """``lambda a, k: <source>``: reads the source on the arguments of a later call."""
        return eval(f"lambda a, k: {source.expr}", self.namespace)  # noqa: S307 - generated access path

    def _literal(self, value: Any) -> str:
        if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
            return self.const(value, "f")
        return repr(value)

    def _sequence_type(self, value: tuple | list) -> str:
        """How guard code names the class of a tuple, list or named tuple."""
        return type(value).__name__ if type(value) in (tuple, list) else self.const(type(value), "t")


def compile_guard(guards: list[Guard], n_args: int, kw_names: tuple[str, ...], namespace: dict[str, Any]) -> tuple[Callable, str]:
    """``check(a, k) -> bool`` and its source."""
    conditions = [f"len(a) == {n_args}", f"k.keys() == {set(kw_names)!r}" if kw_names else "not k"]
    conditions += [f"({g.expr})" for g in guards]
    body = "\n            and ".join(conditions)
    source = f"def check(a, k):\n    try:\n        return ({body})\n    except Exception:\n        return False\n"
    scope = dict(namespace)
    exec(compile(source, "<janus guard>", "exec"), scope)  # noqa: S102 - generated from recorded guards
    return scope.pop("check"), source  # not left in its own globals: a cycle waits for the collector


def compile_inputs(sources: list[Source], fed_scalars: dict[Source, type], namespace: dict[str, Any],
                   arrays: frozenset[Source] = frozenset()) -> Callable:
    """``inputs(a, k) -> list`` of the argument tensors the graph takes, in order.

    Python values fed to the graph (``fed_scalars``: source -> int, float, str or a list's
    ``ListKind``) and NumPy arrays (``arrays``) are converted here: an array by one
    ``tf.constant`` of its own dtype.
    """
    scope = dict(namespace)
    kinds = {s: f"_fed{i}" for i, s in enumerate(sources) if s in fed_scalars}
    scope.update((name, fed_scalars[s]) for s, name in kinds.items())
    items = [f"_scalar({s.expr}, {kinds[s]})" if s in kinds
             else f"_array({s.expr})" if s in arrays else s.expr for s in sources]
    source = f"def inputs(a, k):\n    return [{', '.join(items)}]\n"
    scope["_scalar"] = fed_scalar
    scope["_array"] = tf.constant
    exec(compile(source, "<janus inputs>", "exec"), scope)  # noqa: S102
    return scope.pop("inputs")  # not left in its own globals (as ``check``)


def guard_namespace_base() -> dict[str, Any]:
    """Helpers every generated guard function may use."""
    return {"_EagerTensor": EAGER_TENSOR, "_Dataset": tf.data.Dataset, "_fits": fits_spec, "_np_equal": _np_equal,
            "_shape_ok": _shape_ok}


def _shape_ok(shape, dims: tuple) -> bool:
    actual = shape.as_list()
    return len(actual) == len(dims) and all(d is None or d == s for d, s in zip(dims, actual))


def fits_spec(value: Any, spec: tf.TypeSpec) -> bool:
    """``value`` is a composite tensor of ``spec`` (whose sizes may be relaxed)."""
    return type(value) is spec.value_type and spec.is_compatible_with(value)


def _np_equal(a, b) -> bool:
    return isinstance(a, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


def _tensor_equal(t, b) -> bool:
    a = np.asarray(t.numpy())
    return a.shape == b.shape and np.array_equal(a, b)


def _frozen_copy(value):
    """A deep copy of a nested list/tuple of scalars (the value a guard compares against)."""
    items = [_frozen_copy(v) if type(v) in (tuple, list) else v for v in value]
    return tuple(items) if type(value) is tuple else items


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _a(cls: type) -> str:
    name = cls.__qualname__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _name(value: Any) -> str:
    mod = getattr(value, "__module__", None)
    qual = getattr(value, "__qualname__", None) or getattr(value, "__name__", None) or type(value).__name__
    return f"{mod}.{qual}" if mod else str(qual)
