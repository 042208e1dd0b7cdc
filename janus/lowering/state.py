"""Reads and writes of Python state from converted code (the paper's PyGetAttr /
PySetAttr / PyGetSubscr / PySetSubscr operations).

Reads go through the trace context, which turns heap tensors into graph inputs fed
at every call and guards every Python value the trace depended on.  Writes to state
that existed before the call are *deferred*: converted code sees the new value at
once (a local copy), but the heap is only changed when the whole graph ran and every
assertion held; the write is replayed then as an effect (see ``janus.commit.effects``).
Inside a side of a tensor conditional the new value is seen only while that side is traced,
and becomes an output of the conditional (``janus.lowering.branch_stores``).
"""
from __future__ import annotations

import builtins
import collections
import inspect
import types
from typing import Any

from janus.commit.effects import SetAttr, SetCell, SetGlobal, SetItem
from janus.convert import libraries
from janus.errors import ConversionError
from janus.reporting.codes import Code
from janus.lowering import branch_stores
from janus.trace import kinds, known_values, library_state
from janus.trace.active import current
from janus.lowering.trees.forest_plan import NodeView, is_tree_part
from janus.trace.sources import Cell, ClassAttr, Global, ModuleAttr
from janus.trace.values import SymbolicShape, is_framework_object, is_graph_composite, is_symbolic, is_user_class
from janus_profiler import usercode

_MISSING = object()
_CELL = "<cell contents>"  # the overlay key of a closure cell's rebound value


def active_trace():
    ctx = current()
    if ctx is None:
        raise ConversionError("converted code ran outside a Janus trace", code=Code.JANUS_BUG)
    return ctx


def ld_global(g: dict, name: str) -> Any:
    """Read global ``name`` of the module whose globals are ``g`` (as this call last set it)."""
    ctx = active_trace()
    rebound = ctx.heap.overlay.get((id(g), name), _MISSING)
    if rebound is not _MISSING:
        return branch_stores.readable(rebound)
    gname = ctx.const(g, "g")
    if name in g:
        return ctx.read(g[name], Global(gname, name))
    b = g.get("__builtins__", builtins)
    b = b if isinstance(b, dict) else vars(b)
    if name not in b:
        raise NameError(f"name '{name}' is not defined")
    ctx.guard_set.builtin_not_shadowed(gname, name)
    return b[name]


def ld_cell(cells: tuple, index: int, name: str) -> Any:
    """Read free variable ``name`` from closure cell ``index`` of the converted function."""
    ctx = active_trace()
    cell = cells[index]
    rebound = ctx.heap.overlay.get((id(cell), _CELL), _MISSING)
    if rebound is not _MISSING:
        return branch_stores.readable(rebound)
    try:
        value = cell.cell_contents
    except ValueError:
        raise ConversionError(f"free variable {name} is empty", code=Code.UNDEFINED) from None
    return ctx.read(value, Cell(ctx.const(cell, "c"), name))


def _numpy_of(t: Any) -> Any:
    """``t.numpy`` of a graph tensor: for a value the trace knows, a method returning what
    eager's returns; else the trace fails, noting the inputs the value is made of
    (``janus.trace.known_values``)."""
    value = known_values.needed_value(t, ".numpy() of it") if is_symbolic(t) else None
    if value is None:
        raise ConversionError(".numpy() of a tensor the graph computes", code=Code.TENSOR_VALUE)
    return known_values.KnownValue(value).numpy


def ld_attr(obj: Any, name: str) -> Any:
    """``obj.name`` as converted code sees it."""
    if isinstance(obj, NodeView):
        return obj.read(name)  # a node of a recursion run over whole trees (janus.lowering.trees.recursion)
    if is_symbolic(obj) or is_graph_composite(obj):
        if name == "numpy":
            return _numpy_of(obj)
        value = getattr(obj, name)
        if name == "shape" and not value.is_fully_defined():
            return SymbolicShape.of(obj)
        return value
    ctx = current()
    if ctx is None:
        return getattr(obj, name)
    if isinstance(obj, type) and is_user_class(obj):
        return class_attribute(ctx, obj, obj, name)
    if isinstance(obj, types.ModuleType):
        return module_attribute(ctx, obj, name)
    source = ctx.source_of(obj)
    if source is None:
        return _created_attr(ctx, obj, name) if ctx.heap.is_created(obj) else getattr(obj, name)
    return _state_attr(ctx, obj, source, name)


def _state_attr(ctx, obj: Any, source: Any, name: str) -> Any:
    """``obj.name`` of an object of Python state the trace tracks (read from ``source``)."""
    overlay = ctx.heap.overlay.get((id(obj), name), _MISSING)
    if overlay is not _MISSING:
        return branch_stores.readable(overlay)
    d = instance_dict(obj)
    island = ctx.heap.islands.get(id(obj))
    if island is not None and (d is not None and name in d or name in island.writes):
        raise ConversionError(f"reads {source.label}.{name} after a Python island changed {source.label} "
                              "(the graph has its value of before the run)", code=Code.ISLAND)
    cls = type(obj)
    if d is not None and name in d and not is_data_descriptor(cls, name):
        return ctx.read(d[name], source.attr(name))
    if not is_user_class(cls):
        return _library_attribute(obj, source, name)
    if d is not None:
        ctx.guard_set.not_on_instance(source, name)
    if is_data_descriptor(cls, name) and _defined_by_user(cls, name):
        prop = inspect.getattr_static(obj, name)
        if isinstance(prop, property) and prop.fget is not None:
            return ctx.convert(prop.fget)(obj)  # a property getter is user code: convert and inline it
        raise ConversionError(f"{cls.__qualname__}.{name} is a data descriptor", code=Code.ATTRIBUTE_HOOK)
    if not _defined_by_user(cls, name):
        if inspect.getattr_static(obj, name, _MISSING) is _MISSING:
            raise ConversionError(f"{cls.__qualname__}.{name}: attribute comes from __getattr__",
                                  code=Code.ATTRIBUTE_HOOK)
        return getattr(obj, name)
    return class_attribute(ctx, cls, obj, name)


def _library_attribute(obj: Any, source: Any, name: str) -> Any:
    """An attribute of a library object its instance dict does not hold: a method or a
    constant of its class, as it is; for an object not TensorFlow's, a value its class's code
    computes (a property, ``__getattr__``) fails the trace, which could not guard it."""
    if is_framework_object(obj):
        return getattr(obj, name)  # TensorFlow's and Keras's objects keep their state in variables
    found = inspect.getattr_static(obj, name, _MISSING)
    if found is _MISSING or is_data_descriptor(type(obj), name):
        raise ConversionError(f"reads {source.label}.{name}, which {type(obj).__qualname__}'s own code computes "
                              "(Janus could not guard it)", code=Code.ATTRIBUTE_HOOK)
    return getattr(obj, name)


def module_attribute(ctx, module: types.ModuleType, name: str) -> Any:
    """``module.name``: read from the module's globals like a global of the user's, so it is
    guarded by what it holds (``cfg.LR``, ``os.environ``); a library's functions, classes,
    modules and framework objects are its API, read as they are."""
    g = vars(module)
    rebound = ctx.heap.overlay.get((id(g), name), _MISSING)
    if rebound is not _MISSING:
        return branch_stores.readable(rebound)
    if name not in g:
        if is_user_module(module):
            raise ConversionError(f"{module.__name__}.{name}: attribute comes from the module's __getattr__",
                                  code=Code.ATTRIBUTE_HOOK)
        return getattr(module, name)
    value = g[name]
    if not is_user_module(module) and kinds.classify(value) in _LIBRARY_API:
        return value
    return ctx.read(value, ModuleAttr(ctx.const(g, "g"), name, module.__name__))


_LIBRARY_API = frozenset({kinds.Kind.NAMED, kinds.Kind.FRAMEWORK, kinds.Kind.IMMUTABLE})


def is_user_module(module: types.ModuleType) -> bool:
    """A module of the user's program (or one ``janus.allow`` lets Janus convert)."""
    return usercode.is_user_file(getattr(module, "__file__", None)) or libraries.is_allowed_module(module.__name__)


def _created_attr(ctx, obj: Any, name: str) -> Any:
    """``obj.name`` of a user object the trace built: its own attributes as the trace set
    them; methods and properties of its class converted like any user code."""
    cls = type(obj)
    d = instance_dict(obj)
    if d is not None and name in d and not is_data_descriptor(cls, name):
        return d[name]
    if is_data_descriptor(cls, name) and _defined_by_user(cls, name):
        prop = inspect.getattr_static(obj, name)
        if isinstance(prop, property) and prop.fget is not None:
            return ctx.convert(prop.fget)(obj)
        raise ConversionError(f"{cls.__qualname__}.{name} is a data descriptor", code=Code.ATTRIBUTE_HOOK)
    if _defined_by_user(cls, name):
        return class_attribute(ctx, cls, obj, name)
    if inspect.getattr_static(obj, name, _MISSING) is _MISSING:
        raise ConversionError(f"{cls.__qualname__}.{name}: attribute comes from __getattr__", code=Code.ATTRIBUTE_HOOK)
    return getattr(obj, name)


def class_attribute(ctx, cls: type, obj: Any, name: str) -> Any:
    """An attribute found on a user class: read (and guarded) where the class defines it."""
    for klass in cls.__mro__:
        if name in vars(klass):
            break
    else:
        return getattr(obj, name)
    raw = vars(klass)[name]
    if not is_user_class(klass):
        return getattr(obj, name)
    value = ctx.read(raw, ClassAttr(ctx.const(klass, "cls"), klass.__qualname__, name))
    if hasattr(raw, "__janus_function__") and hasattr(type(raw), "__get__"):
        return value.__get__(None if obj is cls else obj, cls)  # a Janus method: bound, as Python binds it
    if isinstance(raw, (staticmethod, classmethod, property)) or not isinstance(raw, types.FunctionType):
        return getattr(obj, name) if isinstance(raw, (staticmethod, classmethod, property)) else value
    return value if obj is cls else types.MethodType(value, obj)


def st_attr(obj: Any, name: str, value: Any) -> None:
    """``obj.name = value``: immediate on objects the call created, deferred on the heap."""
    ctx = current()
    if isinstance(obj, NodeView):
        raise ConversionError(f"sets .{name} of a tree node during the recursion over it", code=Code.TREE_RECURSION)
    source = ctx.source_of(obj) if ctx is not None else None
    if source is None:
        if ctx is not None and not ctx.heap.is_created(obj):
            # A class, module or function: a write now would outlive a failed run.
            raise ConversionError(f"sets attribute .{name} of a {type(obj).__name__} Janus does not track",
                                  code=Code.UNMODELED_VALUE)
        no_mutation_in_dynamic_flow(ctx, f"attribute .{name} set")
        setattr(obj, name, value)
        return
    refuse_undeferrable_attribute(ctx, obj, source, name, "__setattr__", "writes")
    what = f"write of {source.label}.{name}"
    place = branch_stores.Overlaid(ctx.heap, (id(obj), name), f"{source.label}.{name}", lambda: ld_attr(obj, name),
                                   lambda v: SetAttr(source, name, v))
    branch_stores.write(ctx, place, value, what)
    ctx.effect(place.effect(value), what)


def refuse_undeferrable_attribute(ctx, obj: Any, source: Any, name: str, hook: str, verb: str) -> None:
    """A ConversionError when a change of ``obj.name`` on Python state (a write: ``hook``
    ``__setattr__``; a ``del``: ``__delattr__``) cannot be a deferred effect: a Python island
    changes the object, its class hooks the change, the attribute is a property or descriptor,
    or the object has no ``__dict__``."""
    if id(obj) in ctx.heap.islands:
        raise ConversionError(f"{verb} {source.label}.{name}, which a Python island changes", code=Code.ISLAND)
    cls = type(obj)
    if getattr(cls, hook, getattr(object, hook)) is not getattr(object, hook) and not is_framework_object(obj):
        raise ConversionError(f"{cls.__qualname__} defines {hook}", code=Code.ATTRIBUTE_HOOK)
    if is_data_descriptor(cls, name):
        raise ConversionError(f"{cls.__qualname__}.{name} is a property or descriptor", code=Code.ATTRIBUTE_HOOK)
    if is_framework_object(obj) and name in library_state.library_reads(cls):
        raise ConversionError(f"{verb} {source.label}.{name}, which {cls.__qualname__}'s own code reads in Python "
                              "(it would not see a deferred change while tracing)", code=Code.ATTRIBUTE_HOOK)
    if instance_dict(obj) is None:
        raise ConversionError(f"{cls.__qualname__} instances have no __dict__", code=Code.ATTRIBUTE_HOOK)


def st_global(g: dict, name: str, value: Any) -> None:
    """``name = value`` under a ``global name`` statement: deferred like an attribute write."""
    ctx = active_trace()
    module = ctx.const(g, "g")
    place = branch_stores.Overlaid(ctx.heap, (id(g), name), f"global {name}", lambda: ld_global(g, name),
                                   lambda v: SetGlobal(module, name, v))
    branch_stores.write(ctx, place, value, f"write of global {name}")
    ctx.effect(place.effect(value), f"write of global {name}")


def st_cell(cells: tuple, index: int, name: str, value: Any) -> None:
    """``name = value`` under a ``nonlocal name`` statement: deferred like an attribute write."""
    ctx = active_trace()
    cell = cells[index]
    target = Cell(ctx.const(cell, "c"), name)
    place = branch_stores.Overlaid(ctx.heap, (id(cell), _CELL), name, lambda: ld_cell(cells, index, name),
                                   lambda v: SetCell(target, v))
    branch_stores.write(ctx, place, value, f"write of closure variable {name}")
    ctx.effect(place.effect(value), f"write of closure variable {name}")


def is_rebound(g_or_cell: Any, name: str | None = None) -> bool:
    """Whether this trace wrote a global (``name`` of globals ``g_or_cell``) or a closure cell."""
    return (id(g_or_cell), name if name is not None else _CELL) in active_trace().heap.overlay


def aug_operand(value: Any, name: str) -> Any:
    """The current value of a global or closure variable in ``name op= v``: a value whose
    in-place operator rebinds (a number, string, tuple, tensor), never a container it would
    mutate in place."""
    if isinstance(value, (list, dict, set, bytearray)) or (hasattr(value, "__dict__") and not is_symbolic(value)
                                                            and not is_framework_object(value)):
        raise ConversionError(f"augmented assignment to {name}, a {type(value).__name__} it would change in place",
                              code=Code.UNMODELED_VALUE)
    return value


def st_subscr(obj: Any, key: Any, value: Any) -> None:
    """``obj[key] = value``: immediate on containers the call created, deferred on the heap."""
    ctx = current()
    if is_tree_part(ctx, obj):
        raise ConversionError("changes a tree during the recursion over it", code=Code.TREE_RECURSION)
    source = ctx.source_of(obj) if ctx is not None else None
    if source is None:
        no_mutation_in_dynamic_flow(ctx, "item assignment", obj)
        obj[key] = value
        return
    if type(obj) not in (list, collections.deque) and not kinds.is_modeled_mapping(obj):
        raise ConversionError(f"item assignment on a {type(obj).__name__} from Python state", code=Code.UNMODELED_VALUE)
    what = f"write of {source.label}[{key!r}]"
    if branch_stores.side_stores(ctx, what) is not None:
        place = branch_stores.item(ctx.heap, obj, key, source.label, lambda v: SetItem(source, key, v))
        branch_stores.write(ctx, place, value, what)
    else:
        obj[key] = value  # on the trace's own copy of the container
    ctx.effect(SetItem(source, key, value), what)


def no_mutation_in_dynamic_flow(ctx, what: str, obj: Any = None) -> None:
    """Both sides of a tensor branch are traced: a mutation of an object the call built (or a
    container method) there would happen twice, unless the side made ``obj`` itself (a copy of
    an own list, ``janus.lowering.graph_lists``)."""
    if ctx is not None and not ctx.log.may_change(obj):
        raise ConversionError(f"{what} inside tensor-dependent control flow", code=Code.STATE_IN_TENSOR_FLOW)


def instance_dict(obj: Any) -> dict | None:
    try:
        d = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return None
    return d if isinstance(d, dict) else None


def is_data_descriptor(cls: type, name: str) -> bool:
    for klass in cls.__mro__:
        if name in vars(klass):
            attr = vars(klass)[name]
            return hasattr(type(attr), "__set__") or hasattr(type(attr), "__delete__")
    return False


def _defined_by_user(cls: type, name: str) -> bool:
    for klass in cls.__mro__:
        if name in vars(klass):
            return is_user_class(klass)
    return False
