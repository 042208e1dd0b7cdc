"""Methods of Python lists, dicts and sets in converted code: mutations of state are deferred.

A mutation of a container that is Python state (read from an argument, an attribute, a
global, a closure cell) is recorded as an effect, committed after the run succeeds, and
done at once on the trace's own copy.  ``obj.attr.append(v)`` and its kind (the
converter's ``_jn.mutate_attr`` / ``mutate_global`` / ``mutate_cell``) are deferred
without reading the container at all when it was not read so far: only its type is
guarded.  The entry points that fall back to an ordinary call are in
``janus.lowering.calls``, which dispatches container methods here.
"""
from __future__ import annotations

import collections
from typing import Any

from janus.commit.effects import CallMethod
from janus.errors import ConversionError
from janus.reporting.codes import Code
from janus.lowering import state
from janus.trace import kinds
from janus.trace.active import current
from janus.lowering.trees.forest_plan import NodeView, is_tree_part
from janus.trace.sources import Cell, Global, Source

_DICT = frozenset({"update", "pop", "popitem", "clear", "setdefault", "__setitem__", "__delitem__"})
# Most derived first: an OrderedDict is a dict too.
MUTATORS = {
    collections.deque: frozenset({"append", "appendleft", "extend", "extendleft", "insert", "pop", "popleft",
                                  "remove", "clear", "rotate", "reverse", "__setitem__", "__delitem__"}),
    collections.OrderedDict: _DICT | {"move_to_end"},
    dict: _DICT,
    list: frozenset({"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "__setitem__",
                     "__delitem__"}),
    set: frozenset({"add", "discard", "remove", "pop", "clear", "update"}),
}


def mutators(obj: Any) -> frozenset:
    """The methods of container ``obj`` that change it."""
    return next((names for base, names in MUTATORS.items() if isinstance(obj, base)), frozenset())


def container_method(obj: Any, name: str, args: tuple, kwargs: dict) -> Any:
    """Call a method of a builtin container; mutations of heap containers are deferred."""
    method = getattr(obj, name)
    ctx = current()
    changes = name in mutators(obj)
    if changes and is_tree_part(ctx, obj):
        raise ConversionError("changes a tree during the recursion over it", code=Code.TREE_RECURSION)
    source = ctx.source_of(obj) if ctx is not None else None
    if source is None or not changes:
        if changes:
            state.no_mutation_in_dynamic_flow(ctx, f"{type(obj).__name__}.{name}", obj)
        return method(*args, **kwargs)
    state.no_mutation_in_dynamic_flow(ctx, f"{source.label}.{name}(...)")
    if kwargs:
        raise ConversionError(f"{type(obj).__name__}.{name} with keyword arguments on Python state",
                              code=Code.UNMODELED_VALUE)
    ctx.effect(CallMethod(source, name, tuple(args)), f"{source.label}.{name}(...)")
    return method(*args)  # on the trace's own copy of the container


def defer_attr(obj: Any, name: str, method: str, args: tuple) -> bool:
    """Record ``obj.name.method(*args)`` as a deferred effect, without reading the container,
    when ``obj`` is Python state and ``obj.name`` a list/dict/set not read so far in this
    trace; False when the caller must make the ordinary call."""
    ctx = current()
    if isinstance(obj, NodeView):
        raise ConversionError(f"changes {obj.path}.{name} during the recursion over the tree", code=Code.TREE_RECURSION)
    source = ctx.source_of(obj) if ctx is not None else None
    d = state.instance_dict(obj) if source is not None else None
    if d is None or (id(obj), name) in ctx.heap.overlay or state.is_data_descriptor(type(obj), name) or name not in d:
        return False
    return _defer(ctx, d[name], source.attr(name), method, args)


def defer_global(g: dict, name: str, method: str, args: tuple) -> bool:
    """``name.method(*args)`` on a module global container: like :func:`defer_attr`."""
    ctx = state.active_trace()
    if name not in g or state.is_rebound(g, name):
        return False
    return _defer(ctx, g[name], Global(ctx.const(g, "g"), name), method, args)


def defer_cell(cells: tuple, index: int, name: str, method: str, args: tuple) -> bool:
    """``name.method(*args)`` on a closure variable's container: like :func:`defer_attr`."""
    ctx = state.active_trace()
    if state.is_rebound(cells[index]):
        return False
    try:
        target = cells[index].cell_contents
    except ValueError:
        raise ConversionError(f"free variable {name} is empty", code=Code.UNDEFINED) from None
    return _defer(ctx, target, Cell(ctx.const(cells[index], "c"), name), method, args)


def _defer(ctx: Any, target: Any, source: Source, method: str, args: tuple) -> bool:
    if not kinds.is_container(target) or method not in mutators(target) or ctx.heap.was_read(target) \
            or method in ("pop", "popitem", "setdefault"):
        return False
    ctx.guard_set.type_is(source, type(target))
    ctx.effect(CallMethod(source, method, tuple(args)), f"{source.label}.{method}(...)")
    ctx.heap.mutated_unread.add(id(target))
    return True
