"""Split values produced by a trace into graph outputs and a recipe to rebuild them.

A graph returns only tensors.  The Python value a converted function returns (and
the arguments of its deferred effects) is *packed* at trace time: graph tensors
become outputs, immutable Python values become constants, objects that live in
Python state are re-read at call time through their source, and containers
are rebuilt fresh at every call (eager would build new ones too).

A recipe is a tree of small frozen records, one class per kind of value (as JAX's
partial evaluation records how to rebuild each value); each record rebuilds its value
from a :class:`Run` with :meth:`Recipe.unpack`.
"""
from __future__ import annotations

import dataclasses

import types
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import tensorflow as tf

from janus.errors import ConversionError
from janus.reporting.codes import Code
from janus.trace.arrays import FedArray, LoweredArray
from janus.trace.number_lists import FedList
from janus.trace.scalars import PyOrTensor, PyScalar, to_python
from janus.trace.tensor_array_state import TensorArrayMade, eager_tensor_array, reads_items, settings_of
from janus.trace.values import SCALARS, DeferredStr, Undefined, is_framework_object, is_symbolic

if TYPE_CHECKING:
    from janus.trace.context import TraceContext


@dataclass
class Run:
    """What one successful graph run hands to the commit: the graph's outputs, the call's
    arguments (sources are read on them), and the objects rebuilt so far (an object the
    trace built is rebuilt once, however many places it reaches)."""

    outputs: list
    a: tuple
    k: dict
    objects: dict = field(default_factory=dict)


class Recipe:
    """How to rebuild one value after a graph run (the base of the records below)."""

    __slots__ = ()

    def unpack(self, run: Run) -> Any:
        raise NotImplementedError


def _record(cls: type) -> type:
    """A recipe record: frozen, with slots; equal only to itself (a constant it holds may
    be an array, whose ``==`` is not a truth value)."""
    return dataclass(frozen=True, slots=True, eq=False)(cls)


@_record
class Output(Recipe):
    """Graph output ``index``: the tensor, or the Python number of ``kind`` it holds."""

    index: int
    kind: type | None = None

    def unpack(self, run: Run) -> Any:
        value = run.outputs[self.index]
        return value if self.kind is None else to_python(value, self.kind)


@_record
class ArrayOutput(Recipe):
    """Graph output ``index`` as the NumPy array (or NumPy scalar, ``cls``) eager computed
    (a :class:`~janus.trace.arrays.LoweredArray`): a new array of the run's values."""

    index: int
    cls: type

    def unpack(self, run: Run) -> Any:
        value = np.array(run.outputs[self.index].numpy(), copy=True)
        return value if self.cls is np.ndarray else self.cls(value)


@_record
class NumberOrTensor(Recipe):
    """A :class:`~janus.trace.scalars.PyOrTensor`: outputs ``first`` (the number),
    ``first + 1`` (the tensor) and ``first + 2`` (which one it is); the Python number or
    the tensor, as the run went."""

    first: int
    kind: type

    def unpack(self, run: Run) -> Any:
        number, tensor, is_number = run.outputs[self.first:self.first + 3]
        return to_python(number, self.kind) if bool(is_number) else tensor


@_record
class Composite(Recipe):
    """A composite tensor of ``spec`` rebuilt from ``count`` outputs from ``first`` on."""

    spec: tf.TypeSpec
    first: int
    count: int

    def unpack(self, run: Run) -> Any:
        return tf.nest.pack_sequence_as(self.spec, run.outputs[self.first:self.first + self.count],
                                        expand_composites=True)


@_record
class EagerTensorArray(Recipe):
    """A ``TensorArray`` the graph built: an eager one of settings ``made`` holding the items
    of the ``TensorList`` output ``index``, made once per run (eager has one object)."""

    index: int
    made: TensorArrayMade
    shape_known: bool = False  # made.element_shape is eager's, as the trace followed it (no merging)

    def unpack(self, run: Run) -> tf.TensorArray:
        key = ("tensor array", self.index)
        array = run.objects.get(key)
        if array is None:
            array = run.objects[key] = eager_tensor_array(run.outputs[self.index], self.made, self.shape_known)
        return array


@_record
class Constant(Recipe):
    """A value the trace knew: an immutable Python value, a function, a variable ..."""

    value: Any

    def unpack(self, run: Run) -> Any:
        return self.value


@_record
class FromState(Recipe):
    """An object of Python state, read again at call time through its source."""

    read: Callable[[tuple, dict], Any]

    def unpack(self, run: Run) -> Any:
        return self.read(run.a, run.k)


@_record
class ListOf(Recipe):
    """A new list of the items' values."""

    items: tuple[Recipe, ...]

    def unpack(self, run: Run) -> list:
        return [r.unpack(run) for r in self.items]


@_record
class TupleOf(Recipe):
    """A tuple of the items' values."""

    items: tuple[Recipe, ...]

    def unpack(self, run: Run) -> tuple:
        return tuple(r.unpack(run) for r in self.items)


@_record
class NamedTupleOf(Recipe):
    """A named tuple of class ``cls`` of the items' values."""

    cls: type
    items: tuple[Recipe, ...]

    def unpack(self, run: Run) -> tuple:
        return self.cls(*(r.unpack(run) for r in self.items))


@_record
class DictOf(Recipe):
    """A new dict: ``keys`` (in order) to the values' values."""

    keys: tuple
    values: tuple[Recipe, ...]

    def unpack(self, run: Run) -> dict:
        return dict(zip(self.keys, (r.unpack(run) for r in self.values)))


@_record
class SetOf(Recipe):
    """A new set (or frozenset, ``cls``) of Python scalars."""

    cls: type
    items: tuple

    def unpack(self, run: Run) -> set | frozenset:
        return self.cls(self.items)


@_record
class ArrayCopy(Recipe):
    """A fresh copy of a NumPy array the trace built."""

    array: np.ndarray

    def unpack(self, run: Run) -> np.ndarray:
        return self.array.copy()


@_record
class Formatted(Recipe):
    """An f-string formatted after the run from its fields' values."""

    text: DeferredStr
    fields: tuple[Recipe, ...]

    def unpack(self, run: Run) -> str:
        return self.text.render([r.unpack(run) for r in self.fields])


@_record
class Built(Recipe):
    """A user object the trace built: made once per run (``slot`` in ``table``, which holds
    its class, attribute names and their recipes) without calling its ``__init__``."""

    slot: int
    table: list

    def unpack(self, run: Run) -> Any:
        obj = run.objects.get(self.slot)
        if obj is None:
            cls, names, values = self.table[self.slot]
            obj = run.objects[self.slot] = object.__new__(cls)
            vars(obj).update(zip(names, (r.unpack(run) for r in values)))
        return obj


def unpack(recipe: Recipe, run: Run) -> Any:
    """Rebuild the value described by ``recipe`` from a graph run."""
    return recipe.unpack(run)


def _constant(value: Any, what: str) -> Recipe | None:
    """An immutable Python value: a scalar, a NumPy scalar, a slice of Python numbers (``del lst[:1]``)."""
    if type(value) in SCALARS or isinstance(value, np.generic):
        return Constant(value)
    if type(value) is slice and all(type(p) in SCALARS for p in (value.start, value.stop, value.step)):
        return Constant(value)
    return None


class Packer:
    """Collects the graph outputs of one trace."""

    def __init__(self, ctx: TraceContext):
        self.ctx = ctx
        self.tensors: list[tf.Tensor] = []
        self._objects: dict[int, int] = {}  # id of an object the trace built -> its slot
        self._built: list = []  # slot -> (class, attribute names, attribute recipes), shared by recipes
        self._arrays: dict[int, tuple] = {}  # id of a TensorArray the graph built -> (it, its recipe)

    def pack(self, value: Any, what: str = "the result") -> Recipe:
        """The recipe that rebuilds ``value`` after a run: the graph's outputs it needs are
        appended to :attr:`tensors`.  Tried in order: a value of the graph, a constant, Python
        state (read again after the run), an object the trace built, a container, a
        TensorFlow value; anything else cannot leave the graph (a ConversionError)."""
        for stage in (self._graph_value, _constant, self._state_or_built, self._container, self._tensorflow_value):
            recipe = stage(value, what)
            if recipe is not None:
                return recipe
        raise ConversionError(f"{what} holds a {type(value).__name__} object created during the call",
                              code=Code.LEAVES_GRAPH)

    def _output(self, tensor: tf.Tensor) -> int:
        self.tensors.append(tensor)
        return len(self.tensors) - 1

    def _graph_value(self, value: Any, what: str) -> Recipe | None:
        """A value the graph computes: a tensor, a Python number or string it carries, a NumPy
        array or scalar it computed or was fed."""
        if isinstance(value, Undefined):
            raise ConversionError(f"{what} may be unassigned", code=Code.UNDEFINED)
        if is_symbolic(value):
            return Output(self._output(value))
        if isinstance(value, PyScalar):
            return Output(self._output(value.tensor), value.kind)
        if isinstance(value, FedList):  # the caller's list object, or a copy? Python's values decide
            value.needed("returned or stored")
        if isinstance(value, PyOrTensor):
            first = len(self.tensors)
            self.tensors += value.parts()
            return NumberOrTensor(first, value.kind)
        if isinstance(value, DeferredStr):
            fields = [p.value for p in value.parts if not isinstance(p, str)]
            return Formatted(value, tuple(self.pack(v, what) for v in fields))
        if isinstance(value, LoweredArray):  # NumPy's result, computed by the graph: a new array
            return ArrayOutput(self._output(value.tensor), value.scalar_type or np.ndarray)
        if isinstance(value, FedArray) and value.scalar_type is not None:  # a fed NumPy scalar: its value
            return Output(self._output(tf.convert_to_tensor(value)), value.scalar_type)
        return None

    def _state_or_built(self, value: Any, what: str) -> Recipe | None:
        """Python state (read again after the run), or a user object the trace built."""
        source = self.ctx.source_of(value)
        if source is not None:
            return FromState(self.ctx.getter(source))
        made_here = self.ctx.heap.created_classes
        if type(value) in made_here or isinstance(value, type) and value in made_here:
            raise ConversionError(f"{what} is a class made inside the function, or an instance of one "
                                  "(eager makes a new class at every call)", code=Code.LEAVES_GRAPH)
        if self.ctx.heap.is_created(value):
            return self._created(value, what)
        return None

    def _container(self, value: Any, what: str) -> Recipe | None:
        """A list, tuple, named tuple, set of scalars, dict or NumPy array: its items packed."""
        if type(value) is list:
            return ListOf(tuple(self.pack(v, what) for v in value))
        if type(value) is tuple:
            return TupleOf(tuple(self.pack(v, what) for v in value))
        if isinstance(value, tuple) and hasattr(value, "_fields"):
            return NamedTupleOf(type(value), tuple(self.pack(v, what) for v in value))
        if type(value) in (set, frozenset) and all(type(v) in SCALARS for v in value):
            return SetOf(type(value), tuple(value))
        if type(value) is dict:
            return DictOf(tuple(value.keys()), tuple(self.pack(v, what) for v in value.values()))
        if isinstance(value, np.ndarray):
            if value.dtype == object and not all(type(v) in SCALARS for v in value.flat):
                raise ConversionError(f"{what} holds a NumPy object array of values the trace made",
                                      code=Code.LEAVES_GRAPH)
            return ArrayCopy(value.copy())
        return None

    def _tensorflow_value(self, value: Any, what: str) -> Recipe | None:
        """A TensorFlow value leaves the graph in eager's form: a ``TensorArray`` as an eager
        one, a composite tensor through its ``TypeSpec``; one whose eager form the graph
        cannot give (a dataset, an operation) is refused; functions, variables and other
        framework objects are used as they are.  None: not such a value."""
        if isinstance(value, tf.TensorArray) and is_symbolic(value.flow):
            return self._tensor_array(value, what)
        if isinstance(value, tf.Operation):
            raise ConversionError(f"{what} holds a graph operation ({value.type}), which eager does not have",
                                  permanent=True, code=Code.LEAVES_GRAPH)
        components = composite_components(value)
        if components is not None and any(is_symbolic(t) for t in components):
            if isinstance(value, tf.data.Dataset):
                raise ConversionError(f"{what} holds a tf.data.Dataset built in the graph: eager's is a "
                                      f"{type(value).__name__} of its own, the graph's only its variant tensor",
                                      permanent=True, code=Code.LEAVES_GRAPH)
            first = len(self.tensors)
            self.tensors += components
            return Composite(tf.type_spec_from_value(value), first, len(components))
        if isinstance(value, (tf.Tensor, tf.Variable, types.FunctionType, types.BuiltinFunctionType,
                              types.ModuleType, type, types.MethodType)) or is_framework_object(value):
            if _holds_graph_tensors(value):
                raise ConversionError(f"{what} holds a {type(value).__name__} holding tensors of the graph",
                                      permanent=True, code=Code.LEAVES_GRAPH)
            return Constant(value)
        return None

    def _tensor_array(self, value: tf.TensorArray, what: str) -> Recipe:
        """A ``TensorArray`` the graph built: its ``TensorList`` an output, an eager
        ``TensorArray`` of the settings it was made with rebuilt from it after the run.

        Refused when eager's would differ: the trace cannot tell its settings; an item was
        read in the graph (eager's ``clear_after_read`` cleared it); two arrays leave the
        graph (eager's ``write`` changes its one object in place, and the graph's handles
        of one array before and after a write cannot be told apart from two arrays)."""
        seen = self._arrays.get(id(value))
        if seen is not None:
            return seen[1]
        if self._arrays:
            raise ConversionError(f"{what} holds a second TensorArray leaving the graph (eager's write changes "
                                  "its array in place: which handles are one array is unknown)", permanent=True,
                                  code=Code.GRAPH_LIST)
        made = settings_of(value, self.ctx.tensor_arrays, what)
        if made.clear_after_read and reads_items(tf.compat.v1.get_default_graph()):
            raise ConversionError(f"{what} holds a TensorArray after the graph read items of a TensorList "
                                  "(eager's clear_after_read clears what it reads)", permanent=True,
                                  code=Code.GRAPH_LIST)
        lineage = self.ctx.arrays.lineage(value)
        exact = lineage.shape is not None and not lineage.merged  # eager's element shape: no write merged it
        if exact:
            made = dataclasses.replace(made, element_shape=tuple(lineage.shape.as_list())
                                       if lineage.shape.rank is not None else None)
        self.tensors.append(value.flow)
        recipe = EagerTensorArray(len(self.tensors) - 1, made, exact)
        self._arrays[id(value)] = (value, recipe)
        return recipe

    def _created(self, value: Any, what: str) -> Built:
        """A user object the trace built: rebuilt after the run from its attributes, once
        per run however often it is reached (``slot`` names it)."""
        slot = self._objects.get(id(value))
        if slot is None:
            slot = self._objects[id(value)] = len(self._objects)
            self._built.append(None)
            attrs = vars(value)
            self._built[slot] = (type(value), list(attrs), [self.pack(v, what) for v in attrs.values()])
        return Built(slot, self._built)


def _holds_graph_tensors(value: Any) -> bool:
    """A framework object whose attributes hold graph tensors (which must not reach Python)."""
    if isinstance(value, (tf.Variable, tf.Module, type, types.ModuleType)) or not hasattr(value, "__dict__"):
        return False
    return any(is_symbolic(v) for v in vars(value).values())


def composite_components(value: Any) -> list | None:
    """The component tensors of a composite tensor (``SparseTensor``, ``RaggedTensor``,
    ``TensorArray``, an ``ExtensionType`` ...), or None for anything else.

    A composite holding graph tensors must leave the graph as its components and be
    rebuilt from its ``TypeSpec`` after the run, never as the object built while tracing.
    """
    if isinstance(value, (tf.Tensor, tf.Variable)) or type(value) in SCALARS:
        return None
    flat = tf.nest.flatten(value, expand_composites=True)
    if len(flat) == 1 and flat[0] is value:
        return None
    try:
        tf.type_spec_from_value(value)
    except (TypeError, ValueError):
        return None
    return flat
