"""The allow-list: which callees converted code may call as they are, and which are the user's.

The converter reads it to refuse, before converting, a call of a builtin Janus never runs
in a graph (``janus.convert.support``); the runtime reads it at every call in converted
code (``janus.runtime.calls``): a user function is converted and inlined, an allow-listed
library (TensorFlow, Keras, NumPy but not its random module, ``math``, ``operator``, the
builtins below) is called as it is, and anything else fails the conversion.  Nothing
here needs TensorFlow.
"""
from __future__ import annotations

import types
from typing import Any

from janus.convert.registry import is_converted_code
from janus_profiler import usercode

ALLOWED_MODULE_ROOTS = frozenset({"tensorflow", "keras", "tf_keras", "numpy", "math", "_operator", "operator"})
DENIED_MODULES = ("numpy.random",)

# Builtins converted code calls (the runtime runs them on the trace's values); a call of
# any other builtin (``open``, ``input``, ``eval``) fails.
ALLOWED_BUILTINS = frozenset({
    abs, all, any, bool, callable, chr, dict, divmod, enumerate, filter, float, frozenset, getattr,
    hasattr, int, isinstance, issubclass, iter, len, list, map, max, min, next, ord, pow, range,
    reversed, round, set, slice, sorted, sum, tuple, zip, str, repr, format, type, setattr, super,
})


def is_user_code_file(filename: str) -> bool:
    """A file of the user's program (not a library's, the standard library's, Janus's, or generated)."""
    return usercode.is_user_file(filename)


def is_user_code(code: types.CodeType) -> bool:
    """Code from the user's files (not a library's, the standard library's or Janus's)."""
    return not is_converted_code(code) and is_user_code_file(code.co_filename)


def is_user_function(fn: Any) -> bool:
    """A Python function written by the user (not a library's, not the standard library's)."""
    if not isinstance(fn, types.FunctionType) or not is_user_code(fn.__code__):
        return False
    root = (fn.__module__ or "").split(".")[0]
    return root not in ALLOWED_MODULE_ROOTS and root != "janus"


def is_user_method(fn: Any) -> bool:
    """A method bound to a function written by the user."""
    return isinstance(fn, types.MethodType) and is_user_function(fn.__func__)


def module_of(fn: Any) -> str:
    """The module that defines ``fn`` (for a builtin method, its object's module or type's)."""
    mod = getattr(fn, "__module__", None)
    if mod is None and isinstance(getattr(fn, "__self__", None), types.ModuleType):
        mod = fn.__self__.__name__
    if mod is None:
        mod = type(getattr(fn, "__self__", fn)).__module__
    return mod or ""


def is_allowed_library(fn: Any) -> bool:
    """``fn`` belongs to an allow-listed library (and not to a denied part of one)."""
    mod = module_of(fn)
    if mod.startswith(DENIED_MODULES):
        return False
    return mod.split(".")[0] in ALLOWED_MODULE_ROOTS


def qualified_name(fn: Any) -> str:
    """``module.qualname`` of a callee, for failure reasons."""
    qual = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__qualname__
    return f"{module_of(fn)}.{qual}"
