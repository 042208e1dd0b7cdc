"""The heap model: what one trace read from outside, how converted code sees it, and
which of those values are graph inputs.

While converted code runs inside a ``FuncGraph``, every value it reads from outside
(arguments, globals, closure cells, object attributes) passes through
:meth:`HeapModel.read`.  That method decides how the graph may use the value and
records the *guard* that makes the decision safe to reuse (through the trace's
:class:`~janus.trace.guards.GuardBuilder`), by the value's kind
(:func:`janus.trace.kinds.classify`; ``_READERS`` maps each kind to its reader):

* an eager tensor becomes a graph input fed at every call (never a stale constant),
  guarded on dtype and shape; so do a ``tf.data.Dataset`` and a ``tf.data`` iterator
  (guarded on its element spec: its ``get_next`` in the graph advances the caller's
  iterator) and a ``RaggedTensor``, ``SparseTensor`` or ``ExtensionType`` (on its
  ``TypeSpec``); any other iterator or generator fails the trace (it would consume it);
* a numeric NumPy array the trace feeds (an argument, or Python state the policy does not
  keep as a value) is a graph input too, guarded on dtype and shape, seen as a
  :class:`~janus.trace.arrays.FedArray` (``janus.trace.arrays``); any other NumPy array is
  a Python value, guarded by value, and the trace sees a read-only copy (a write into it,
  which eager makes in the caller's array, fails the conversion);
* a Python scalar, string or ``None`` is specialized as a constant, guarded by value;
* functions, modules, classes, variables and framework objects (Keras layers,
  optimizers, ``tf.Module``) are used as they are, guarded by identity;
* a user object is guarded by its class and *tracked*: reads of its attributes are
  recorded in turn, relative to the access path it was reached by;
* tuples, lists, dicts and the standard containers (``OrderedDict``, ``defaultdict``,
  ``Counter``, ``deque``, ``ChainMap`` ...) are rebuilt element by element, guarded on
  what was read (type, keys in order, length; ``os.environ`` per variable), into shadow
  copies of their type (mutating them is the state module's business);
* a value whose contents Janus does not model fails the trace: it is read in Python.

Where a value came from is a typed :mod:`source <janus.trace.sources>`; it renders
the Python expression (over ``a``, ``k`` and constants of the guard namespace) from
which the guard and feed code of a cache entry is generated once and compiled.
"""
from __future__ import annotations

import array
import collections
import types
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tensorflow as tf

from janus import _tf_private, config
from janus.errors import ConversionError
from janus.reporting.codes import Code
from janus.trace.active import CALL
from janus.trace import kinds, mappings
from janus.trace.arrays import is_fed_array
from janus.trace.graph_inputs import GraphInputs, HeapInput
from janus.trace.guards import GuardBuilder
from janus.trace.number_lists import FedList, ListKind
from janus.trace.scalars import PyScalar, fed_scalar, fed_spec, fits
from janus.trace.sources import Arg, Entry, Item, KwArg, Source
from janus.trace.values import (
    SCALARS, UNDEF, is_dataset_iterator, is_eager_tensor, is_framework_object, is_plain_callable, is_user_class,
)


@dataclass
class HeapModel(GraphInputs):
    """What the trace read from outside (arguments, globals, cells, attributes), how
    converted code sees each value, and which of them are graph inputs."""

    guard_set: GuardBuilder
    relaxed: bool = False
    fed_scalars: dict[Source, type] = field(default_factory=dict)
    heap_shapes: dict[Source, tf.TensorShape] = field(default_factory=dict)
    outer_graph: tf.Graph | None = None
    arg_inputs: dict[Source, tf.Tensor] = field(default_factory=dict)
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
    fed_iterators: list[Source] = field(default_factory=list)  # tf.data iterators the graph advances
    arrays_read: dict[Source, str] = field(default_factory=dict)  # fed arrays used as NumPy arrays, and how
    # NumPy arrays of Python state kept as values (read as NumPy by an earlier trace: the
    # trace plan's), None: none is fed; and those this trace feeds
    numpy_values: set[Source] | None = None
    state_arrays: set[Source] = field(default_factory=set)
    # tensors specialized by value (janus.trace.known_values: the trace plan's); and the
    # fed tensor inputs whose values this trace needed, with what needed them
    tensor_values: set[Source] = field(default_factory=set)
    values_wanted: dict[Source, str] = field(default_factory=dict)
    graph_lists: int = 0  # own lists the trace carried as lists whose length the graph computes
    # the objects of Python islands the trace made, by id (janus.lowering.islands)
    islands: dict[int, Any] = field(default_factory=dict)
    islands_misused: dict[Any, str] = field(default_factory=dict)  # their methods whose arrays were read as NumPy
    # uses as NumPy of arrays the graph computes (janus.trace.arrays.TensorValues): sticky, so
    # that library code catching the error cannot hide one
    computed_arrays_read: list[str] = field(default_factory=list)
    # TensorFlow and Keras objects the trace read, with their sources: where the walk over the
    # Python state their code reads while tracing starts (janus.trace.library_state)
    framework_objects: list[tuple[Source, Any]] = field(default_factory=list)
    _keep: list[Any] = field(default_factory=list)
    _pinned: set[int] = field(default_factory=set)

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
            raise ConversionError(f"{source.what} is read after a deferred change to it", code=Code.UNMODELED_VALUE)
        seen = self._by_id.get(id(value))
        if seen is not None:
            first, result = seen
            if first != source:
                self.guard_set.same_object(source, first)
            return result
        if (isinstance(source, (Arg, KwArg)) and (is_eager_tensor(value) or is_user_class(type(value))
                                                  and not is_framework_object(value))) \
                or kinds.is_mutable_container(value) or isinstance(value, np.ndarray) and source in self.arg_inputs \
                or is_dataset_iterator(value):
            for other_source, other in self._distinct:
                if type(other) is type(value) or is_eager_tensor(other) and is_eager_tensor(value):
                    self.guard_set.distinct(source, other_source)
            self._distinct.append((source, value))
        return self._remember(value, source, self._read(value, source))

    def _remember(self, value: Any, source: Source, result: Any) -> Any:
        """``result`` is what converted code sees of ``value`` (read from ``source``) from now on."""
        self._by_id[id(value)] = (source, result)
        self._read_from[id(value)] = self._read_from[id(result)] = source
        self._keep += [value, result]
        return result

    def _read(self, value: Any, source: Source) -> Any:
        if source in self.fed_scalars and fits(value, self.fed_scalars[source]):
            return self._fed_scalar(source)
        kind = kinds.classify(value)
        return _READERS[kind](self, value, source)

    def _constant(self, value: Any, source: Source) -> Any:
        """``True``, ``False``, ``None``, or a segment's input not bound yet (``UNDEF``:
        any use fails the trace)."""
        if value is UNDEF:
            self.guard_set.identity(source, value)
        else:
            self.guard_set.is_constant(source, value)
        return value

    def _scalar(self, value: Any, source: Source) -> Any:
        self.guard_set.equals(source, value)
        return value

    def _named(self, value: Any, source: Source) -> Any:
        self.guard_set.identity(source, value, named=True)
        return value

    def _same_object(self, value: Any, source: Source) -> Any:
        """An object that cannot change (an immutable library object), or whose state the
        trace reads through guarded paths only (its attributes, a framework object's variables)."""
        self.guard_set.identity(source, value)
        self.track(value, source)
        return value

    def _framework(self, value: Any, source: Source) -> Any:
        """A TensorFlow or Keras object: this very object (its state in variables), noted so
        that the Python state its code reads while tracing is guarded too
        (``janus.trace.library_state``)."""
        self.framework_objects.append((source, value))
        return self._same_object(value, source)

    def _user_object(self, value: Any, source: Source) -> Any:
        """A user object: its class guarded, its attributes read in turn (``janus.lowering.state``)."""
        if hasattr(value, "__dict__"):
            self.guard_set.type_is(source, type(value))
        else:
            self.guard_set.identity(source, value)
        self.track(value, source)
        return value

    def _tensor_array(self, value: tf.TensorArray, source: Source) -> Any:
        raise ConversionError(f"{source.what} is an eager TensorArray, which its write changes in place (a trace "
                              "would write graph tensors into the caller's array)", permanent=True,
                              code=Code.GRAPH_LIST)

    def _unknown(self, value: Any, source: Source) -> Any:
        raise ConversionError(f"{source.what} is a {type(value).__qualname__}, whose contents Janus does not model "
                              "(it is read in Python)", code=Code.UNMODELED_VALUE)

    def _py_iterator(self, value: Any, source: Source) -> Any:
        # Iterating it while tracing would consume the caller's iterator (or generator)
        # before the run is known to succeed.
        raise ConversionError(f"{source.what} is an iterator ({type(value).__name__}): a trace would consume it",
                              code=Code.DATASET)

    def _numpy(self, value: np.ndarray | np.generic, source: Source) -> Any:
        if source in self.arg_inputs:
            return self._array_input(value, source)
        if self.numpy_values is not None and source not in self.numpy_values and is_fed_array(value):
            return self._state_array_input(value, source)
        if not isinstance(value, np.ndarray):  # a NumPy scalar kept a value
            self.guard_set.equals_numpy_scalar(source, value)
            return value
        # The trace sees a read-only copy: a write into the array (eager changes the
        # caller's) raises, and the function runs eagerly.
        frozen = value.copy()
        frozen.flags.writeable = False
        self.guard_set.equals_array(source, frozen, copied=True)
        return frozen

    def _fed_scalar(self, source: Source) -> PyScalar:
        """A Python int, float or str (a PyScalar), or a list of numbers (a FedList), that changes
        from call to call: a graph input."""
        kind = self.fed_scalars[source]
        self.guard_set.fed_number(source, kind)
        seen = FedList if isinstance(kind, ListKind) else PyScalar
        if source in self.arg_inputs:
            return seen(self.arg_inputs[source], kind)
        getter = self.guard_set.getter(source)
        spec = fed_spec(kind)

        def closure():
            return fed_scalar(getter(*CALL.args), kind)

        placeholder = _tf_private.call_time_input(self.outer_graph, closure, spec, key=source.expr)
        self.heap_inputs[source] = HeapInput(source, spec, placeholder)
        return seen(placeholder, kind)

    def _sequence(self, value: tuple | list, source: Source) -> tuple | list:
        """A tuple, list or named tuple, read item by item."""
        _check_size(value, source)
        if _only_scalars(value):
            self.guard_set.equals_sequence(source, value)
            return self._scalars_copy(value, source)
        self.guard_set.length(source, value)
        items = [self.read(v, source.item(i)) for i, v in enumerate(value)]
        named = type(value) not in (tuple, list)
        out = type(value)(*items) if named else tuple(items) if isinstance(value, tuple) else items
        if isinstance(out, list):
            self.track(out, source)
        return out

    def _scalars_copy(self, value: tuple | list, source: Source) -> tuple | list:
        """The trace's copy of a (nested) tuple or list of scalars its guard compares by value:
        every list in it a copy tracked at its own source (``rows[0].append(v)`` is a deferred
        change of the caller's inner list, never made while tracing); a tuple of scalars is itself."""
        if type(value) is not list and not any(type(v) in (tuple, list) for v in value):
            return value
        items = [self._nested_copy(v, source.item(i)) if type(v) in (tuple, list) else v for i, v in enumerate(value)]
        if type(value) is list:
            self.track(items, source)
            return items
        return tuple(items) if type(value) is tuple else type(value)(*items)

    def _nested_copy(self, value: tuple | list, source: Source) -> tuple | list:
        """A list or tuple inside one read by value: one copy however it is reached."""
        seen = self._by_id.get(id(value))
        if seen is not None:
            return seen[1]
        return self._remember(value, source, self._scalars_copy(value, source))

    def _mapping(self, value: dict, source: Source) -> dict:
        """A dict, ``OrderedDict``, ``defaultdict``, ``Counter`` or plain dict subclass: its
        type and keys (in order) guarded, its values read in turn, into a copy of its type
        (``janus.trace.mappings``) that converted code reads and changes."""
        _check_size(value, source)
        if not all(type(k) in SCALARS for k in value):
            raise ConversionError(f"{source.what} is a {type(value).__name__} with non-scalar keys",
                                  code=Code.UNMODELED_VALUE)
        self.guard_set.mapping_keys(source, value)
        entry = Entry if hasattr(type(value), "__missing__") else Item  # never insert a key while checking
        out = mappings.mapping_copy(value, ((k, self.read(v, entry(source, k))) for k, v in value.items()), source.what)
        self.track(out, source)
        return out

    def _deque(self, value: collections.deque, source: Source) -> collections.deque:
        """A deque: its maxlen and length (or, of Python scalars, its items) guarded, its items
        read in turn into a copy; its methods on the copy are deferred like a list's, so the
        caller's deque evicts on commit as it does eagerly."""
        _check_size(value, source)
        if _only_scalars(value):
            self.guard_set.deque_items(source, value)
            items = list(value)
        else:
            self.guard_set.deque_length(source, value)
            items = [self.read(v, source.item(i)) for i, v in enumerate(value)]
        out = collections.deque(items, value.maxlen)
        self.track(out, source)
        return out

    def _typed_array(self, value: array.array, source: Source) -> array.array:
        """An ``array.array``: guarded on typecode and elements; the trace reads a copy (an
        item assignment on it, which eager makes in the caller's, fails the trace)."""
        _check_size(value, source)
        self.guard_set.equals_typed_array(source, value)
        out = array.array(value.typecode, value)
        self.track(out, source)
        return out

    def _mapping_proxy(self, value: types.MappingProxyType, source: Source) -> types.MappingProxyType:
        """A read-only view of a dict the caller may change: keys guarded, values read in turn."""
        _check_size(value, source)
        if not all(type(k) in SCALARS for k in value):
            raise ConversionError(f"{source.what} is a mappingproxy with non-scalar keys", code=Code.UNMODELED_VALUE)
        self.guard_set.mapping_keys(source, value)
        out = types.MappingProxyType({k: self.read(v, source.item(k)) for k, v in value.items()})
        self.track(out, source)
        return out

    def _wrapper(self, value: Any, source: Source) -> Any:
        """A ``UserDict``, ``UserList``, ``UserString`` or ``ChainMap``: its class guarded, its
        attributes (``.data``, ``.maps``) read in turn into a copy of its class, so its own
        methods, run as they are, read only what the trace read and guarded.  A change to the
        copy (an item store, a mutating method) fails the trace (not a modeled container)."""
        self.guard_set.type_is(source, type(value))
        out = object.__new__(type(value))
        vars(out).update({name: self.read(item, source.attr(name)) for name, item in vars(value).items()})
        self.track(out, source)
        return out

    def _environ(self, value: Any, source: Source) -> mappings.EnvironView:
        """``os.environ``: a view whose reads guard each variable read (its value or absence)."""
        self.guard_set.type_is(source, type(value))
        out = mappings.EnvironView(value, source, self.guard_set)
        self.track(out, source)
        return out

    def _set(self, value: set | frozenset, source: Source) -> set | frozenset:
        """A set of Python scalars, guarded by value; converted code gets a copy (mutations
        of a set from Python state are deferred like a list's, never made while tracing)."""
        if not all(type(v) in SCALARS for v in value):
            raise ConversionError(f"{source.what} is a {type(value).__name__} of objects other than Python scalars",
                                  code=Code.UNMODELED_VALUE)
        self.guard_set.equals_set(source, value)
        out = type(value)(value)
        if type(out) is set:
            self.track(out, source)
        return out

    # -- one side of a tensor conditional ---------------------------------------------
    def snapshot(self) -> tuple:
        return (dict(self._by_id), dict(self._read_from), dict(self.overlay), set(self.mutated_unread),
                list(self._distinct))

    def restore(self, snap: tuple) -> None:
        by_id, read_from, overlay, mutated_unread, distinct = snap
        kept = {key: self._by_id[key] for key in self._pinned if key in self._by_id}
        kept_from = {key: self._read_from[key] for key in self._pinned if key in self._read_from}
        self._by_id, self._read_from, self.overlay = {**by_id, **kept}, {**read_from, **kept_from}, dict(overlay)
        self.mutated_unread, self._distinct = set(mutated_unread), list(distinct)

    def pin(self, copy: Any) -> None:
        """Keep ``copy``, the trace's copy of a container of Python state, the one reads see
        after :meth:`restore`: a side of a conditional writes its items (undone when the side
        ends), and the other side and the code after the conditional must see the same copy."""
        for key, (_, result) in self._by_id.items():
            if result is copy:
                self._pinned |= {key, id(copy)}

    def merge(self, snap: tuple) -> None:
        by_id, read_from, _, mutated_unread, distinct = snap
        for key, value in by_id.items():
            self._by_id.setdefault(key, value)
        for key, value in read_from.items():
            self._read_from.setdefault(key, value)
        self.mutated_unread |= mutated_unread
        known = {source for source, _ in self._distinct}
        self._distinct += [(source, value) for source, value in distinct if source not in known]


def _check_size(value: Any, source: Source) -> None:
    if len(value) > config.LIMITS.max_specialized_items:
        raise ConversionError(f"{source.what} is a {type(value).__name__} of {len(value)} items: too long to specialize",
                              code=Code.UNMODELED_VALUE)


def _only_scalars(value: Any) -> bool:
    return all(type(v) in SCALARS or (type(v) in (tuple, list) and _only_scalars(v)) for v in value)


Kind = kinds.Kind
_READERS = {
    Kind.TENSOR: HeapModel._tensor_input, Kind.COMPOSITE: HeapModel._composite_input,
    Kind.CONSTANT: HeapModel._constant, Kind.UNDEF: HeapModel._constant, Kind.SCALAR: HeapModel._scalar,
    Kind.SEQUENCE: HeapModel._sequence, Kind.MAPPING: HeapModel._mapping, Kind.DEQUE: HeapModel._deque,
    Kind.SET: HeapModel._set, Kind.TYPED_ARRAY: HeapModel._typed_array, Kind.MAPPING_PROXY: HeapModel._mapping_proxy,
    Kind.ENVIRON: HeapModel._environ, Kind.WRAPPER: HeapModel._wrapper, Kind.DATASET: HeapModel._dataset_input,
    Kind.DATA_ITERATOR: HeapModel._iterator_input, Kind.PY_ITERATOR: HeapModel._py_iterator,
    Kind.NUMPY: HeapModel._numpy, Kind.NAMED: HeapModel._named, Kind.IMMUTABLE: HeapModel._same_object,
    Kind.FRAMEWORK: HeapModel._framework, Kind.TRACKED_OBJECT: HeapModel._same_object,
    Kind.USER_OBJECT: HeapModel._user_object, Kind.TENSOR_ARRAY: HeapModel._tensor_array,
    Kind.UNKNOWN: HeapModel._unknown,
}
assert _READERS.keys() == set(Kind), "every kind of value has its reader"
