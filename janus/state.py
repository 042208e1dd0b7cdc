"""Reads and writes of Python state from converted code (the paper's PyGetAttr /
PySetAttr / PyGetSubscr / PySetSubscr operations).

Reads go through the trace context, which turns heap tensors into graph inputs fed
at every call and guards every Python value the trace depended on.  Writes to state
that existed before the call are *deferred*: converted code sees the new value at
once (a local copy), but the heap is only changed when the whole graph ran and every
assertion held; the write is replayed then as an effect (see ``janus.effects``).
"""
from __future__ import annotations

import builtins
import inspect
import types
from typing import Any

from janus.errors import ConversionError
from janus.tracing import current, is_framework_object, is_symbolic, is_user_class

_MISSING = object()


def _ctx():
    ctx = current()
    if ctx is None:
        raise ConversionError("converted code ran outside a Janus trace")
    return ctx


def ld_global(g: dict, name: str) -> Any:
    """Read global ``name`` of the module whose globals are ``g``."""
    ctx = _ctx()
    gname = ctx.const(g, "g")
    if name in g:
        return ctx.read(g[name], f"{gname}[{name!r}]", f"global {name}")
    b = g.get("__builtins__", builtins)
    b = b if isinstance(b, dict) else vars(b)
    if name not in b:
        raise NameError(f"name '{name}' is not defined")
    ctx.guard(f"{name!r} not in {gname}", f"global {name} is not rebound (builtin {name})")
    return b[name]


def ld_cell(cells: tuple, index: int, name: str) -> Any:
    """Read free variable ``name`` from closure cell ``index`` of the converted function."""
    ctx = _ctx()
    cell = cells[index]
    try:
        value = cell.cell_contents
    except ValueError:
        raise ConversionError(f"free variable {name} is empty") from None
    return ctx.read(value, f"{ctx.const(cell, 'c')}.cell_contents", f"closure variable {name}")


def ld_attr(obj: Any, name: str) -> Any:
    """``obj.name`` as converted code sees it."""
    if is_symbolic(obj):
        value = getattr(obj, name)
        if name == "shape" and not value.is_fully_defined():
            raise ConversionError("reads a static shape that the graph does not know (eager knows it)")
        return value
    ctx = current()
    if ctx is None:
        return getattr(obj, name)
    if isinstance(obj, type) and is_user_class(obj):
        return _class_attr(ctx, obj, obj, name)
    path = ctx.path_of(obj)
    if path is None:
        return getattr(obj, name)
    overlay = ctx.overlay.get((id(obj), name), _MISSING)
    if overlay is not _MISSING:
        return overlay
    d = _instance_dict(obj)
    cls = type(obj)
    if d is not None and name in d and not _is_data_descriptor(cls, name):
        return ctx.read(d[name], f"{path}.__dict__[{name!r}]", f"{_label(ctx, obj, path)}.{name}")
    if not is_user_class(cls):
        return getattr(obj, name)
    if d is not None:
        ctx.guard(f"{name!r} not in {path}.__dict__", f"{_label(ctx, obj, path)}.{name} is not set on the instance")
    if _is_data_descriptor(cls, name) and _defined_by_user(cls, name):
        prop = inspect.getattr_static(obj, name)
        if isinstance(prop, property) and prop.fget is not None:
            from janus.calls import call  # a property getter is user code: convert and inline it

            return call(prop.fget, obj)
        raise ConversionError(f"{cls.__qualname__}.{name} is a data descriptor")
    if not _defined_by_user(cls, name):
        if inspect.getattr_static(obj, name, _MISSING) is _MISSING:
            raise ConversionError(f"{cls.__qualname__}.{name}: attribute comes from __getattr__")
        return getattr(obj, name)
    return _class_attr(ctx, cls, obj, name)


def _class_attr(ctx, cls: type, obj: Any, name: str) -> Any:
    """An attribute found on a user class: read (and guarded) where the class defines it."""
    for klass in cls.__mro__:
        if name in vars(klass):
            break
    else:
        return getattr(obj, name)
    raw = vars(klass)[name]
    if not is_user_class(klass):
        return getattr(obj, name)
    value = ctx.read(raw, f"{ctx.const(klass, 'cls')}.__dict__[{name!r}]", f"{klass.__qualname__}.{name}")
    if isinstance(raw, (staticmethod, classmethod, property)) or not isinstance(raw, types.FunctionType):
        return getattr(obj, name) if isinstance(raw, (staticmethod, classmethod, property)) else value
    return value if obj is cls else types.MethodType(value, obj)


def st_attr(obj: Any, name: str, value: Any) -> None:
    """``obj.name = value``: immediate on objects the call created, deferred on the heap."""
    ctx = current()
    path = ctx.path_of(obj) if ctx is not None else None
    if path is None:
        _no_mutation_in_dynamic_flow(ctx, f"attribute .{name} set")
        setattr(obj, name, value)
        return
    _no_mutation_in_dynamic_flow(ctx, f"write of {_label(ctx, obj, path)}.{name}")
    cls = type(obj)
    if getattr(cls, "__setattr__", object.__setattr__) is not object.__setattr__ and not is_framework_object(obj):
        raise ConversionError(f"{cls.__qualname__} defines __setattr__")
    if _is_data_descriptor(cls, name):
        raise ConversionError(f"{cls.__qualname__}.{name} is a property or descriptor")
    if _instance_dict(obj) is None:
        raise ConversionError(f"{cls.__qualname__} instances have no __dict__")
    ctx.effect("setattr", (path, name, value), f"write of {_label(ctx, obj, path)}.{name}")
    ctx.overlay[(id(obj), name)] = value


def st_subscr(obj: Any, key: Any, value: Any) -> None:
    """``obj[key] = value``: immediate on containers the call created, deferred on the heap."""
    ctx = current()
    path = ctx.path_of(obj) if ctx is not None else None
    if path is None:
        _no_mutation_in_dynamic_flow(ctx, "item assignment")
        obj[key] = value
        return
    _no_mutation_in_dynamic_flow(ctx, f"write of {_label(ctx, obj, path)}[...]")
    if type(obj) not in (list, dict):
        raise ConversionError(f"item assignment on a {type(obj).__name__} from Python state")
    ctx.effect("call", (path, "__setitem__", (key, value)), f"write of {_label(ctx, obj, path)}[{key!r}]")
    obj[key] = value


MUTATORS = {
    list: {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "__setitem__", "__delitem__"},
    dict: {"update", "pop", "popitem", "clear", "setdefault", "__setitem__", "__delitem__"},
    set: {"add", "discard", "remove", "pop", "clear", "update"},
}


def container_method(obj: Any, name: str, args: tuple, kwargs: dict) -> Any:
    """Call a method of a builtin container; mutations of heap containers are deferred."""
    method = getattr(obj, name)
    ctx = current()
    path = ctx.path_of(obj) if ctx is not None else None
    if path is None or name not in MUTATORS.get(type(obj), ()):
        if name in MUTATORS.get(type(obj), ()):
            _no_mutation_in_dynamic_flow(ctx, f"{type(obj).__name__}.{name}")
        return method(*args, **kwargs)
    _no_mutation_in_dynamic_flow(ctx, f"{_label(ctx, obj, path)}.{name}(...)")
    if kwargs:
        raise ConversionError(f"{type(obj).__name__}.{name} with keyword arguments on Python state")
    ctx.effect("call", (path, name, args), f"{_label(ctx, obj, path)}.{name}(...)")
    return method(*args)


def mutate_attr(obj: Any, name: str, method: str, *args: Any) -> Any:
    """``obj.name.method(*args)`` for a container mutator, without reading the container.

    When ``obj`` is Python state and ``obj.name`` a list/dict/set not read so far in
    this trace, the call is recorded as a deferred effect and only the container's
    type is guarded.  Anything else takes the ordinary path.
    """
    ctx = current()
    path = ctx.path_of(obj) if ctx is not None else None
    d = _instance_dict(obj) if path is not None else None
    if d is None or (id(obj), name) in ctx.overlay or _is_data_descriptor(type(obj), name) or name not in d:
        return _ordinary_mutation(ld_attr(obj, name), method, args)
    return _mutate(ctx, d[name], f"{path}.__dict__[{name!r}]", f"{_label(ctx, obj, path)}.{name}", method, args,
                   lambda: ld_attr(obj, name))


def mutate_global(g: dict, name: str, method: str, *args: Any) -> Any:
    """``name.method(*args)`` on a module global container: like :func:`mutate_attr`."""
    ctx = _ctx()
    if name not in g:
        return _ordinary_mutation(ld_global(g, name), method, args)
    return _mutate(ctx, g[name], f"{ctx.const(g, 'g')}[{name!r}]", f"global {name}", method, args,
                   lambda: ld_global(g, name))


def mutate_cell(cells: tuple, index: int, name: str, method: str, *args: Any) -> Any:
    """``name.method(*args)`` on a closure variable's container: like :func:`mutate_attr`."""
    ctx = _ctx()
    try:
        target = cells[index].cell_contents
    except ValueError:
        raise ConversionError(f"free variable {name} is empty") from None
    return _mutate(ctx, target, f"{ctx.const(cells[index], 'c')}.cell_contents", f"closure variable {name}",
                   method, args, lambda: ld_cell(cells, index, name))


def _mutate(ctx, target: Any, where: str, what: str, method: str, args: tuple, read) -> Any:
    if type(target) not in MUTATORS or method not in MUTATORS[type(target)] or ctx.was_read(target) \
            or method in ("pop", "popitem", "setdefault"):
        return _ordinary_mutation(read(), method, args)
    ctx.guard(f"type({where}) is {type(target).__name__}", f"{what} is a {type(target).__name__}")
    ctx.effect("call", (where, method, args), f"{what}.{method}(...)")
    ctx.mutated_unread.add(id(target))
    return None


def _ordinary_mutation(container: Any, method: str, args: tuple) -> Any:
    from janus.calls import call

    return call(getattr(container, method), *args)


def _no_mutation_in_dynamic_flow(ctx, what: str) -> None:
    """Both sides of a tensor branch are traced: a Python mutation there would happen twice."""
    if ctx is not None and ctx.dynamic_depth:
        raise ConversionError(f"{what} inside tensor-dependent control flow")


def _instance_dict(obj: Any) -> dict | None:
    try:
        d = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return None
    return d if isinstance(d, dict) else None


def _is_data_descriptor(cls: type, name: str) -> bool:
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


def _label(ctx, obj: Any, path: str) -> str:
    """A readable name for ``obj`` in guard and reason texts (``self.cell`` rather than its path)."""
    return ctx.label_of(obj) or path.replace(".__dict__[", "[")
