"""Split values produced by a trace into graph outputs and a recipe to rebuild them.

A graph returns only tensors.  The Python value a converted function returns (and
the arguments of its deferred effects) is *packed* at trace time: graph tensors
become outputs, immutable Python values become constants, objects that live in
Python state are re-read at call time through their source, and containers
are rebuilt fresh at every call (eager would build new ones too).
"""
from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tensorflow as tf

from janus.errors import ConversionError
from janus.trace.context import TraceContext
from janus.trace.scalars import PyOrTensor, PyScalar, to_python
from janus.trace.values import SCALARS, DeferredStr, Undefined, is_framework_object, is_symbolic

Recipe = tuple


class Packer:
    """Collects the graph outputs of one trace."""

    def __init__(self, ctx: TraceContext):
        self.ctx = ctx
        self.tensors: list[tf.Tensor] = []
        self._objects: dict[int, int] = {}  # id of an object the trace built -> its slot
        self._built: list = []  # slot -> (class, attribute names, attribute recipes), shared by recipes

    def pack(self, value: Any, what: str = "the result") -> Recipe:
        if isinstance(value, Undefined):
            raise ConversionError(f"{what} may be unassigned")
        if is_symbolic(value):
            self.tensors.append(value)
            return ("t", len(self.tensors) - 1, None)
        if isinstance(value, PyScalar):
            self.tensors.append(value.tensor)
            return ("t", len(self.tensors) - 1, value.kind)
        if isinstance(value, PyOrTensor):
            first = len(self.tensors)
            self.tensors += value.parts()
            return ("union", first, value.kind)
        if isinstance(value, DeferredStr):
            fields = [p.value for p in value.parts if not isinstance(p, str)]
            return ("fstr", value, [self.pack(v, what) for v in fields])
        if type(value) in SCALARS or isinstance(value, np.generic):
            return ("c", value)
        source = self.ctx.source_of(value)
        if source is not None:
            return ("p", self.ctx.getter(source))
        made_here = self.ctx.heap.created_classes
        if type(value) in made_here or isinstance(value, type) and value in made_here:
            raise ConversionError(f"{what} is a class made inside the function, or an instance of one "
                                  "(eager makes a new class at every call)")
        if self.ctx.heap.is_created(value):
            return self._created(value, what)
        if type(value) is list:
            return ("list", [self.pack(v, what) for v in value])
        if type(value) is tuple:
            return ("tuple", [self.pack(v, what) for v in value])
        if isinstance(value, tuple) and hasattr(value, "_fields"):
            return ("named", type(value), [self.pack(v, what) for v in value])
        if type(value) in (set, frozenset) and all(type(v) in SCALARS for v in value):
            return ("set", type(value), list(value))
        if type(value) is dict:
            return ("dict", list(value.keys()), [self.pack(v, what) for v in value.values()])
        if isinstance(value, np.ndarray):
            return ("array", value.copy())
        components = composite_components(value)
        if components is not None and any(is_symbolic(t) for t in components):
            first = len(self.tensors)
            self.tensors += components
            return ("composite", tf.type_spec_from_value(value), first, len(components))
        if isinstance(value, (tf.Tensor, tf.Variable, types.FunctionType, types.BuiltinFunctionType,
                              types.ModuleType, type, types.MethodType)) or is_framework_object(value):
            return ("c", value)
        raise ConversionError(f"{what} holds a {type(value).__name__} object created during the call")


    def _created(self, value: Any, what: str) -> Recipe:
        """A user object the trace built: rebuilt after the run from its attributes, once
        per run however often it is reached (``slot`` names it)."""
        slot = self._objects.get(id(value))
        if slot is None:
            slot = self._objects[id(value)] = len(self._objects)
            self._built.append(None)
            attrs = vars(value)
            self._built[slot] = (type(value), list(attrs), [self.pack(v, what) for v in attrs.values()])
        return ("obj", slot, self._built)


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


@dataclass
class Run:
    """What one successful graph run hands to the commit: the graph's outputs, the call's
    arguments (sources are read on them), and the objects rebuilt so far (an object the
    trace built is rebuilt once, however many places it reaches)."""

    outputs: list
    a: tuple
    k: dict
    objects: dict = field(default_factory=dict)


def unpack(recipe: Recipe, run: Run) -> Any:
    """Rebuild the value described by ``recipe`` from a graph run."""
    kind = recipe[0]
    if kind == "t":
        value = run.outputs[recipe[1]]
        return value if recipe[2] is None else to_python(value, recipe[2])
    if kind == "c":
        return recipe[1]
    if kind == "union":  # the Python number or the tensor, as the run went
        _, first, number_kind = recipe
        number, tensor, is_number = run.outputs[first:first + 3]
        return to_python(number, number_kind) if bool(is_number) else tensor
    if kind == "composite":
        _, spec, first, n = recipe
        return tf.nest.pack_sequence_as(spec, run.outputs[first:first + n], expand_composites=True)
    if kind == "p":
        return recipe[1](run.a, run.k)
    if kind == "list":
        return [unpack(r, run) for r in recipe[1]]
    if kind == "tuple":
        return tuple(unpack(r, run) for r in recipe[1])
    if kind == "named":
        return recipe[1](*(unpack(r, run) for r in recipe[2]))
    if kind == "dict":
        return dict(zip(recipe[1], (unpack(r, run) for r in recipe[2])))
    if kind == "fstr":
        return recipe[1].render([unpack(r, run) for r in recipe[2]])
    if kind == "obj":
        _, slot, built = recipe
        obj = run.objects.get(slot)
        if obj is None:
            cls, names, values = built[slot]
            obj = run.objects[slot] = object.__new__(cls)
            vars(obj).update(zip(names, (unpack(r, run) for r in values)))
        return obj
    if kind == "set":
        return recipe[1](recipe[2])
    if kind == "array":
        return recipe[1].copy()
    raise AssertionError(f"unknown recipe {kind}")
