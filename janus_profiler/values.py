"""Safe summaries of runtime values, and safe reads of the Python heap.

The profiler runs inside the user's program, so looking at a value must never run
user code: no properties, no ``__getattr__``, no ``__eq__``/``__hash__`` of user
classes, no ``__repr__``.  Everything here reads plain data only -- instance
``__dict__`` (through the C getter of the type's ``__dict__`` slot), class
``__dict__`` mapping proxies, module globals, cell contents -- and for tensors only
their dtype and shape, never their (possibly large) contents.

This is also the only module that touches TensorFlow internals (``_shape_tuple``,
a C method of eager tensors that avoids building a ``TensorShape``); the public
``shape`` property is the fallback.
"""
from __future__ import annotations

import functools
import types
from typing import Any, NamedTuple

__all__ = ["TypeInfo", "summarize", "safe_getattr", "safe_subscript", "callee_key", "code_key_name"]

#: Longest string whose value is recorded; longer strings record only their length.
MAX_STR = 64
#: Sequences up to this length record a summary of each item.
MAX_ITEMS = 8

_type_mro = type.__dict__["__mro__"].__get__
_type_dict = type.__dict__["__dict__"].__get__
_type_module = type.__dict__["__module__"].__get__
_type_qualname = type.__dict__["__qualname__"].__get__
_GetSet = types.GetSetDescriptorType
_Member = types.MemberDescriptorType
_C_METHODS = (types.MethodDescriptorType, types.WrapperDescriptorType,
              types.ClassMethodDescriptorType, types.BuiltinFunctionType)


class TypeInfo(NamedTuple):
    """What the profiler remembers about one value.

    ``type`` is a readable type name ("int", "tf.Tensor", "np.ndarray",
    "mymodule.MyClass"); ``dtype``/``shape`` are set for tensors, variables and
    arrays (shape entries may be None for unknown dimensions); ``shape`` is
    ``(len,)`` for lists, tuples, dicts and long strings.  ``value`` is recorded
    only for small Python scalars, short strings, bools and None
    (``has_value`` tells a recorded None from "no value"); for functions, classes
    and modules it is their qualified name.  ``items`` summarises the elements of
    short lists/tuples.
    """

    type: str
    dtype: str | None = None
    shape: tuple | None = None
    value: Any = None
    has_value: bool = False
    items: tuple | None = None

    def __str__(self) -> str:
        s = self.type
        if self.dtype is not None:
            s += f" {self.dtype}"
        if self.shape is not None and self.type not in ("str", "bytes"):
            s += " (" + ", ".join("?" if d is None else str(d) for d in self.shape) + \
                 ("," if len(self.shape) == 1 else "") + ")"
        if self.has_value:
            s += f" = {self.value!r}" if self.type not in ("function", "type", "module", "method") \
                else f" {self.value}"
        if self.items:
            s += " [" + ", ".join(str(i) for i in self.items) + "]"
        return s

    def to_json(self) -> dict:
        d: dict = {"type": self.type}
        if self.dtype is not None:
            d["dtype"] = self.dtype
        if self.shape is not None:
            d["shape"] = list(self.shape)
        if self.has_value:
            d["value"] = self.value
        if self.items is not None:
            d["items"] = [i.to_json() for i in self.items]
        return d

    @classmethod
    def from_json(cls, d: dict) -> "TypeInfo":
        return cls(d["type"], d.get("dtype"),
                   tuple(d["shape"]) if d.get("shape") is not None else None,
                   d.get("value"), "value" in d,
                   tuple(cls.from_json(i) for i in d["items"]) if d.get("items") is not None else None)


# --- value kinds, decided once per type ------------------------------------------------
_SCALARS = {type(None), bool, int, float, str, bytes, complex}
_CONTAINERS = {list, tuple, dict, set, frozenset}
_kind_cache: dict[type, tuple[str, str]] = {}


def _tmod(t: type) -> str:
    try:
        mod = _type_module(t)
    except Exception:  # noqa: BLE001
        return ""
    return mod if isinstance(mod, str) else ""


def _tqual(t: type) -> str:
    try:
        qn = _type_qualname(t)
    except Exception:  # noqa: BLE001
        qn = None
    return qn if isinstance(qn, str) else getattr(t, "__name__", "?")


def _type_name(t: type) -> str:
    mod = _tmod(t)
    qn = _tqual(t)
    return qn if mod in ("builtins", "") else f"{mod}.{qn}"


def _kind(t: type) -> tuple[str, str]:
    """(kind, readable type name) of a type; cached because it walks the MRO."""
    k = _kind_cache.get(t)
    if k is not None:
        return k
    if t in _SCALARS:
        k = ("scalar", t.__name__)
    elif t in _CONTAINERS:
        k = ("container", t.__name__)
    elif t in (types.FunctionType, types.BuiltinFunctionType, types.MethodType):
        k = ("function", "function" if t is not types.MethodType else "method")
    elif t is types.ModuleType:
        k = ("module", "module")
    elif issubclass(t, type):
        k = ("class", "type")
    else:
        k = ("object", _type_name(t))
        for base in _type_mro(t):
            mod = _tmod(base)
            name = _tqual(base)
            if mod.startswith("tensorflow"):
                if name in ("Tensor", "EagerTensor", "SymbolicTensor", "_EagerTensorBase"):
                    k = ("tensor", "tf.Tensor")
                    break
                if name in ("Variable", "BaseResourceVariable", "ResourceVariable"):
                    k = ("variable", "tf.Variable")
                    break
            elif mod.startswith("keras") and name == "Variable":
                k = ("variable", "keras.Variable")
                break
            elif mod == "numpy":
                if name == "ndarray":
                    k = ("ndarray", "np.ndarray")
                    break
                if name == "generic":
                    k = ("npscalar", "np." + _tqual(t))
                    break
    _kind_cache[t] = k
    return k


def _tensor_shape(x: Any) -> tuple | None:
    try:
        return tuple(x._shape_tuple())  # eager tensors: a C call, no TensorShape object
    except Exception:  # noqa: BLE001 - symbolic tensors and older TF fall back
        pass
    try:
        dims = x.shape.as_list() if hasattr(x.shape, "as_list") else list(x.shape)
        return tuple(dims)
    except Exception:  # noqa: BLE001 - unknown rank
        return None


def _dtype_name(x: Any) -> str | None:
    try:
        d = x.dtype
        return getattr(d, "name", None) or str(d)
    except Exception:  # noqa: BLE001
        return None


def summarize(x: Any, _depth: int = 0) -> TypeInfo:
    """Summarise ``x`` without running user code (see module docstring)."""
    t = type(x)
    kind, name = _kind(t)
    if kind == "scalar":
        return _summarize_scalar(x, t, name)
    if kind == "tensor" or kind == "variable":
        return TypeInfo(name, _dtype_name(x), _tensor_shape(x))
    if kind == "ndarray":
        return TypeInfo(name, str(x.dtype), tuple(x.shape))
    if kind == "npscalar":
        try:
            v = x.item()
            ok = type(v) in (bool, int, float)
        except Exception:  # noqa: BLE001
            v, ok = None, False
        return TypeInfo(name, str(x.dtype), (), v if ok else None, ok)
    if kind == "container":
        n = len(x)
        items = None
        if _depth == 0 and (t is list or t is tuple) and n <= MAX_ITEMS:
            items = tuple(summarize(i, 1) for i in x)
        return TypeInfo(name, shape=(n,), items=items)
    if kind in ("function", "class"):
        return TypeInfo(name, value=callee_key(x), has_value=True)
    if kind == "module":
        return TypeInfo(name, value=x.__name__ if isinstance(x.__dict__.get("__name__"), str) else None,
                        has_value=True)
    return TypeInfo(name)


def _summarize_scalar(x: Any, t: type, name: str) -> TypeInfo:
    """A Python scalar with its value, but for long strings, bytes, complex numbers and
    integers beyond 2**62 (their type only, or a string's length)."""
    if t is str or t is bytes:
        if len(x) <= MAX_STR:
            return TypeInfo(name, value=x if t is str else None, has_value=t is str)
        return TypeInfo(name, shape=(len(x),))
    if t is complex:
        return TypeInfo(name)
    if t is int and not -(1 << 62) < x < (1 << 62):
        return TypeInfo(name)
    return TypeInfo(name, value=x, has_value=True)


# --- safe attribute and subscript reads ----------------------------------------------------
def _class_lookup(t: type, name: str) -> tuple[Any, bool]:
    for k in _type_mro(t):
        d = _type_dict(k)
        if name in d:
            return d[name], True
    return None, False


def _instance_dict(obj: Any, t: type) -> dict | None:
    slot, found = _class_lookup(t, "__dict__")
    if found and type(slot) in (_GetSet, _Member):  # C slots (modules use a member)
        try:
            d = slot.__get__(obj, t)
        except Exception:  # noqa: BLE001
            return None
        return d if type(d) is dict else None
    return None


def _is_data_descriptor(v: Any) -> bool:
    vt = type(v)
    return _class_lookup(vt, "__set__")[1] or _class_lookup(vt, "__delete__")[1]


#: Status values of :func:`safe_getattr`.
OK, METHOD, PROPERTY, DYNAMIC, MISSING = "ok", "method", "property", "dynamic", "missing"


def safe_getattr(obj: Any, name: str) -> tuple[str, Any]:
    """Look ``obj.name`` up statically, like ``inspect.getattr_static``, but cheaper.

    Returns ``(status, value)``: ``"ok"`` with the value; ``"method"`` with the
    underlying function of a method (not bound, so nothing runs); ``"property"``
    for a data descriptor implemented in Python (not evaluated); ``"dynamic"``
    when only ``__getattr__`` or a custom descriptor could produce it;
    ``"missing"``.
    """
    t = type(obj)
    if issubclass(t, types.ModuleType):
        found = _module_attribute(obj, t, name)
        if found is not None:
            return found
    if issubclass(t, type):
        v, found = _class_lookup(obj, name)
        return _class_attribute(v, on_class=True) if found else (DYNAMIC, None)
    cv, cfound = _class_lookup(t, name)
    if cfound and _is_data_descriptor(cv):
        if type(cv) in (_GetSet, _Member):  # C slots: reading runs no Python code
            try:
                return OK, cv.__get__(obj, t)
            except Exception:  # noqa: BLE001
                return MISSING, None
        return PROPERTY, None
    d = _instance_dict(obj, t)
    if d is not None and name in d:
        return OK, d[name]
    if cfound:
        return _class_attribute(cv, on_class=False)
    if _class_lookup(t, "__getattr__")[1]:
        return DYNAMIC, None
    return MISSING, None


def _module_attribute(module: Any, t: type, name: str) -> tuple[str, Any] | None:
    """A module's attribute from its ``__dict__``; None for a module without one."""
    d = _instance_dict(module, t)
    if d is None:
        return None
    if name in d:
        return OK, d[name]
    if "__getattr__" in d or _class_lookup(t, "__getattr__")[1]:
        return DYNAMIC, None  # lazy attributes (PEP 562, lazy loaders): never call it
    return MISSING, None


def _class_attribute(v: Any, on_class: bool) -> tuple[str, Any]:
    """What reading an attribute found in a class's ``__dict__`` gives, on the class itself
    (``on_class``) or on an instance, without binding it."""
    vt = type(v)
    if vt is staticmethod:
        return OK, v.__func__
    if vt is classmethod:
        return METHOD, v.__func__
    if on_class:
        return OK, v
    if vt is types.FunctionType or vt in _C_METHODS:
        return METHOD, v
    if _class_lookup(vt, "__get__")[1]:
        return DYNAMIC, None
    return OK, v


_SAFE_KEYS = (str, int, bool, type(None), float)


def safe_subscript(container: Any, index: Any) -> tuple[str, Any]:
    """``container[index]`` for exact built-in lists, tuples and dicts with plain keys only."""
    t = type(container)
    if (t is list or t is tuple) and type(index) is int:
        if -len(container) <= index < len(container):
            return OK, container[index]
        return MISSING, None
    if t is dict and type(index) in _SAFE_KEYS:
        return (OK, container[index]) if index in container else (MISSING, None)
    return DYNAMIC, None


def code_key_name(module: str | None, qualname: str) -> str:
    return f"{module}.{qualname}" if module else qualname


def callee_key(obj: Any) -> str:
    """A readable, stable name for a callee: ``module.qualname``.

    Methods are named by their function; callable instances (e.g. Keras layers)
    by their type's ``__call__``.  Never runs user code.
    """
    t = type(obj)
    if t is types.MethodType:
        obj = obj.__func__
        t = type(obj)
    if t is types.FunctionType:
        for _ in range(8):  # decorated (functools.wraps): name the function the user wrote
            inner = obj.__dict__.get("__wrapped__")
            if type(inner) is not types.FunctionType:
                break
            obj = inner
        return code_key_name(obj.__module__, obj.__qualname__)
    if t is types.BuiltinFunctionType or t in _C_METHODS:
        mod = getattr(obj, "__module__", None) if t is types.BuiltinFunctionType else None
        owner = getattr(obj, "__objclass__", None)
        if owner is not None:
            return f"{_type_name(owner)}.{obj.__name__}"
        self_ = getattr(obj, "__self__", None)
        if mod is None and self_ is not None and type(self_) is not types.ModuleType:
            return f"{_type_name(type(self_))}.{obj.__name__}"
        return code_key_name(mod, obj.__qualname__)
    if issubclass(t, type):
        return _type_name(obj)
    if t is functools.partial:
        return "functools.partial(" + callee_key(obj.func) + ")"
    return _type_name(t) + ".__call__"

