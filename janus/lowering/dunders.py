"""Python's implicit protocols in converted code: ``obj[k]``, ``k in obj``, ``len``, ``iter``,
``bool``, ``int``, ``float``, ``abs`` of objects that are not the graph's own values.

Eager Python calls an object's dunder methods behind the program's back.  A trace must see
those calls too, or the answer they gave while tracing would be frozen into the graph:

* a user class's own dunder runs converted, like any user method: its reads are guarded,
  its effects deferred, and it runs as often as eager runs it;
* a container the trace copied (``janus.trace.kinds``: lists, dicts, deques ...) answers
  as itself, since its contents were guarded when it was read; a ``defaultdict``'s missing
  key read by ``[]`` is a deferred write (eager inserts the default into the caller's);
* an object of Python state whose protocol is library code Janus does not model (a list
  subclass of the user's, an object of a library class with ``__len__``) fails the trace:
  the statement runs in Python, at a graph break or eagerly.
"""
from __future__ import annotations

import collections
import types
from typing import Any, Callable, Iterator

from janus.commit.effects import CallMethod
from janus.errors import ConversionError
from janus.reporting.codes import Code
from janus.lowering.truth import is_tensor, to_bool
from janus.trace import kinds, mappings
from janus.trace.active import current
from janus.trace.scalars import PyScalar, is_symbolic
from janus.trace.values import SCALARS, is_user_class

# Types whose protocols are CPython's own on values the trace already guarded or made.
_PLAIN = frozenset({*SCALARS, tuple, list, dict, set, frozenset, range, slice, collections.deque,
                    collections.OrderedDict, collections.Counter, types.MappingProxyType})
_UNMODELED = (kinds.Kind.USER_OBJECT, kinds.Kind.TRACKED_OBJECT)
# Builtins that only iterate their argument: handed a user iterable, they get its items,
# produced as eager produces them (the user's __iter__ or __getitem__, converted).
ITERATING = frozenset({sum, list, tuple, sorted, min, max, any, all, set, frozenset, enumerate, zip, map, filter})


def user_method(obj: Any, name: str) -> Callable | None:
    """The converted dunder ``name`` of ``obj``'s class, if a user class defines it (the first
    definition along the MRO; None when that one is a library's)."""
    cls = type(obj)
    if cls in _PLAIN:
        return None
    for klass in cls.__mro__:
        fn = vars(klass).get(name)
        if fn is not None:
            if isinstance(fn, types.FunctionType) and is_user_class(klass):
                return types.MethodType(current().convert(fn), obj)
            return None
    return None


def refuse_unmodeled(obj: Any, names: tuple[str, ...], what: str) -> None:
    """Fail the trace when ``obj`` is Python state whose protocol ``names`` is library code."""
    ctx = current()
    source = ctx.source_of(obj) if ctx is not None else None
    if source is not None and kinds.classify(obj) in _UNMODELED and any(hasattr(type(obj), n) for n in names):
        raise ConversionError(f"{what} of {source.label}, a {type(obj).__qualname__} whose {names[0]} is library "
                              "code Janus does not model (it would be frozen into the graph)", code=Code.PROTOCOL)


class Subscriptable:
    """``obj`` as ``obj[key]`` sees it: converted code writes ``_jn.proto(obj)[key]``."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any):
        self.obj = obj

    def __getitem__(self, key: Any) -> Any:
        obj = self.obj
        method = user_method(obj, "__getitem__")
        if method is not None:
            return method(key)
        if isinstance(obj, collections.defaultdict):
            return _default_item(obj, key)
        refuse_unmodeled(obj, ("__getitem__",), "[]")
        return obj[key]


def proto(obj: Any) -> Any:
    """What converted code subscripts for ``obj[key]``: ``obj`` itself, unless its
    ``__getitem__`` is the user's or needs care (then a :class:`Subscriptable`)."""
    if type(obj) in _PLAIN or is_symbolic(obj):
        return obj
    return Subscriptable(obj)


def _default_item(d: collections.defaultdict, key: Any) -> Any:
    """``d[key]`` of a trace's copy of a ``defaultdict``: a missing key inserts the factory's
    value there, and the caller's gets it on commit (``d[key]`` replayed)."""
    factory = mappings.factory_of(d)
    if factory is None or key in d:
        return d[key]
    if factory not in (int, float, bool, str, bytes, complex, tuple, frozenset):
        raise ConversionError(f"reads a missing key of a defaultdict whose factory is {factory!r} (the new item "
                              "would be an object the trace does not track)", code=Code.MAPPING)
    ctx = current()
    source = ctx.source_of(d)
    if not ctx.log.may_change(None):  # state.no_mutation_in_dynamic_flow: importing state here closes a cycle
        raise ConversionError(f"a read of a missing key of {source.label} (a write) inside tensor-dependent control "
                              "flow", code=Code.STATE_IN_TENSOR_FLOW)
    ctx.effect(CallMethod(source, "__getitem__", (key,)), f"{source.label}[{key!r}] (a missing key)")
    value = factory()
    dict.__setitem__(d, key, value)
    return value


def contains(container: Any, item: Any) -> Any:
    """``item in container``."""
    if type(container) in _PLAIN or is_symbolic(container):
        return item in container
    method = user_method(container, "__contains__")
    if method is not None:
        return _bool(method(item))
    if not hasattr(type(container), "__contains__") and _user_iteration(container):
        return any(x is item or _bool(x == item) for x in iterate(container))
    refuse_unmodeled(container, ("__contains__", "__iter__", "__getitem__"), "in")
    return item in container


def truth_operand(x: Any) -> Any:
    """What an ``if``, ``and``, ``or`` or ``not`` tests for ``x``: its user ``__bool__`` (or
    ``__len__``) converted, a Python bool or one the graph computes; ``x`` itself otherwise."""
    if type(x) in _PLAIN or is_tensor(x):
        return x
    method = user_method(x, "__bool__")
    if method is not None:
        return _checked(method(), (bool,), "__bool__ should return bool")
    if user_method(x, "__len__") is not None:
        return length(x) != 0
    refuse_unmodeled(x, ("__bool__", "__len__"), "the truth value")
    return x


def length(x: Any) -> Any:
    """``len(x)`` of a Python object: its user ``__len__`` converted (an int, or one the
    graph computes)."""
    method = user_method(x, "__len__")
    if method is not None:
        return _checked(method(), (int,), "object cannot be interpreted as an integer")
    refuse_unmodeled(x, ("__len__",), "len()")
    return len(x)


def number(x: Any, kind: type) -> Any:
    """``int(x)`` or ``float(x)`` of a Python object with a user ``__int__``/``__float__``/``__index__``."""
    names = ("__float__", "__index__") if kind is float else ("__int__", "__index__", "__trunc__")
    for name in names:
        method = user_method(x, name)
        if method is not None:
            out = _checked(method(), (kind, int) if name != "__float__" else (float,), f"{name} returned non-{kind.__name__}")
            return out if isinstance(out, PyScalar) else kind(out)
    refuse_unmodeled(x, names, f"{kind.__name__}()")
    return kind(x)


def absolute(x: Any) -> Any:
    """``abs(x)``: a user ``__abs__`` converted."""
    method = user_method(x, "__abs__")
    if method is not None:
        return method()
    refuse_unmodeled(x, ("__abs__",), "abs()")
    return abs(x)


def iterate(x: Any) -> Iterator:
    """``iter(x)``: a user ``__iter__`` converted, or Python's sequence protocol over a user
    ``__getitem__`` (items until IndexError), as eager iterates."""
    if type(x) in _PLAIN or is_symbolic(x):
        return iter(x)
    method = user_method(x, "__iter__")
    if method is not None:
        it = method()
        if kinds.classify(it) is kinds.Kind.USER_OBJECT:
            raise ConversionError(f"iterates a {type(x).__qualname__} whose __iter__ returns an iterator of the "
                                  "user's (its __next__ is not converted)", code=Code.PROTOCOL)
        return iter(it)
    if not hasattr(type(x), "__iter__") and user_method(x, "__getitem__") is not None:
        return _by_index(Subscriptable(x))
    refuse_unmodeled(x, ("__iter__", "__getitem__"), "iteration")
    return iter(x)


def unpack(x: Any) -> Any:
    """What ``a, b = x`` and ``f(*x)`` unpack: a user iterable's items, produced as eager
    produces them; anything else as it is."""
    if type(x) in _PLAIN or is_tensor(x):
        return x
    if _user_iteration(x):
        return list(iterate(x))
    refuse_unmodeled(x, ("__iter__", "__getitem__"), "unpacking")
    return x


def as_text(x: Any, what: str) -> Any:
    """``x`` about to be formatted while tracing (an f-string field, ``str``, ``repr``,
    ``format``, ``%``): a user object whose text its own ``__str__``/``__repr__``/``__format__``
    computes would be formatted from what it holds now, frozen into the graph; that fails the
    trace (``print`` formats after the run, as eager does, and is no concern here)."""
    if type(x) in _PLAIN or is_tensor(x) or not is_user_class(type(x)):
        return x
    for name in ("__format__", "__str__", "__repr__"):
        if user_method(x, name) is not None:
            raise ConversionError(f"{what} of a {type(x).__qualname__}, whose {name} reads what it holds while "
                                  "tracing", code=Code.PROTOCOL)
    return x


def own_dict(x: Any = None, *rest: Any) -> dict:
    """``vars(x)``: the caller's own ``__dict__`` of an object of Python state would be read
    (and changed) past every guard, so that fails the trace; so does ``vars()`` (converted
    code's locals are not the user's)."""
    if x is None or rest:
        raise ConversionError("vars() of the local scope", code=Code.PROTOCOL)
    ctx = current()
    if ctx is not None and ctx.source_of(x) is not None:
        raise ConversionError(f"vars() of {ctx.source_of(x).label}: its __dict__ would be read unguarded",
                              code=Code.PROTOCOL)
    return vars(x)


def _by_index(items: Subscriptable) -> Iterator:
    i = 0
    while True:
        try:
            item = items[i]
        except IndexError:
            return
        yield item
        i += 1


def _user_iteration(x: Any) -> bool:
    return user_method(x, "__iter__") is not None or user_method(x, "__getitem__") is not None


def library_argument(fn: Any, arg: Any) -> Any:
    """``arg`` as builtin or library ``fn`` may receive it: a user iterable handed to a
    builtin that only iterates it becomes its items; any other object with user (or
    unmodeled) protocols fails the trace, since ``fn`` would call them unseen."""
    if type(arg) in _PLAIN or is_tensor(arg):
        return arg
    if not is_user_class(type(arg)):
        refuse_unmodeled(arg, _PROTOCOLS, f"{getattr(fn, '__name__', fn)}()")
        return arg
    if fn in ITERATING and _user_iteration(arg):
        return list(iterate(arg))
    for name in _PROTOCOLS:
        if user_method(arg, name) is not None:
            raise ConversionError(f"passes a {type(arg).__qualname__} to {getattr(fn, '__name__', fn)}, which "
                                  f"would call its {name} unseen", code=Code.PROTOCOL)
    refuse_unmodeled(arg, _PROTOCOLS, f"{getattr(fn, '__name__', fn)}()")
    return arg


_PROTOCOLS = ("__len__", "__getitem__", "__iter__", "__contains__", "__bool__", "__float__", "__int__", "__index__",
              "__abs__", "__array__", "__complex__", "__round__", "__reversed__", "__next__")


def _bool(x: Any) -> Any:
    """The truth of a value a protocol returned, as Python takes it (one the graph computes
    stays the graph's)."""
    if is_tensor(x):
        return PyScalar(to_bool(x), bool)
    return bool(truth_operand(x))


def _checked(out: Any, types_: tuple[type, ...], message: str) -> Any:
    """A dunder's result of one of ``types_`` (a Python number the graph computes counts);
    anything else (a tensor) makes eager raise TypeError, so the trace fails."""
    if isinstance(out, PyScalar) and out.kind in types_ or isinstance(out, types_) and not is_tensor(out):
        return out
    raise ConversionError(f"a dunder returned a {type(out).__name__} ({message} in eager)", code=Code.PROTOCOL)
