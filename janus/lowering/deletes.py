"""The ``del`` statement in converted code (``janus.convert.passes.lower_deletes`` lowers it here).

``del x`` unbinds a local (a later read is eager's ``UnboundLocalError``: the trace fails and
the call runs eagerly); ``del obj[key]`` is the container's ``__delitem__``, deferred on
Python state as any container change (``janus.lowering.containers``), the user's own
``__delitem__`` converted; ``del obj.name`` deletes at once on an object the call made and is
a deferred effect (``DelAttr``) on Python state, after which the trace does not read it.
"""
from __future__ import annotations

from typing import Any

from janus.commit.effects import DelAttr
from janus.errors import ConversionError, UndefinedValueError
from janus.reporting.codes import Code
from janus.lowering import branch_stores, containers, state
from janus.lowering.calls import call
from janus.trace import kinds
from janus.trace.active import current
from janus.trace.values import UNDEF, is_symbolic, is_user_class


def unbind(value: Any, name: str) -> Any:
    """``del name`` of a local holding ``value``: UNDEF from now on (eager raises if unbound)."""
    if value is UNDEF:
        raise UndefinedValueError(f"del {name} of a local that is not bound")
    return UNDEF


def declared(name: str) -> None:
    """``del name`` of a name the function declared ``global`` or ``nonlocal``."""
    raise ConversionError(f"del {name} of a global or closure variable", code=Code.STATEMENT)


def del_subscr(obj: Any, key: Any) -> None:
    """``del obj[key]``."""
    if is_symbolic(key):
        raise ConversionError("del of an item at an index the graph computes", code=Code.TENSOR_VALUE)
    if kinds.is_container(obj):
        containers.container_method(obj, "__delitem__", (key,), {})
    elif is_user_class(type(obj)):
        call(state.ld_attr(obj, "__delitem__"), key)
    else:
        raise ConversionError(f"del of an item of a {type(obj).__name__}", code=Code.UNMODELED_VALUE)


def del_attr(obj: Any, name: str) -> None:
    """``del obj.name``: at once on an object the call made, deferred on Python state."""
    ctx = current()
    source = ctx.source_of(obj)
    if source is None:
        if not ctx.heap.is_created(obj):
            raise ConversionError(f"deletes attribute .{name} of a {type(obj).__name__} Janus does not track",
                                  code=Code.UNMODELED_VALUE)
        state.no_mutation_in_dynamic_flow(ctx, f"del of attribute .{name}", obj)
        delattr(obj, name)
        return
    state.refuse_undeferrable_attribute(ctx, obj, source, name, "__delattr__", "deletes")
    state.ld_attr(obj, name)  # guarded as read: eager's AttributeError when it is missing
    what = f"del {source.label}.{name}"
    state.no_mutation_in_dynamic_flow(ctx, what)
    ctx.heap.overlay[(id(obj), name)] = branch_stores.Unjoined(f"reads {source.label}.{name} after {what}",
                                                               Code.STATEMENT)
    ctx.effect(DelAttr(source, name), what)
