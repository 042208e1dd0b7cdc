"""The allow-list: which callees converted code may call as they are, and which it converts.

The converter reads it to refuse, before converting, a call of a builtin Janus never runs
in a graph (``janus.convert.support``); the lowering reads it at every call in converted
code (``janus.lowering.calls``): a user function is converted and inlined, an allow-listed
library (TensorFlow, Keras, NumPy but not its random module, ``math``, ``operator``, the
builtins below) is called as it is, and anything else fails the conversion.

Third-party Python can be converted like the user's (``janus.allow``): the functions of an
allowed module (and its submodules), or one allowed function, count as the user's
functions — inlined converted, their sites profiled — while their files stay library
code everywhere else (the hook never takes them over).  ``CONVERTED_MODULE_ROOTS`` is the
default: TensorFlow-ecosystem packages whose Python converts rather than runs as it is.
Nothing here needs TensorFlow.
"""
from __future__ import annotations

import os
import re
import sys
import threading
import types
from typing import Any

from janus.convert.registry import code_objects, is_converted_code
from janus_profiler import usercode

# Called as they are: TensorFlow and the Keras family build ops from their Python in a
# graph the way eager runs it (Keras 3 is written to be traced, its random draws go
# through seed-generator variables a graph advances as eager does), NumPy and the rest
# compute on Python values.
ALLOWED_MODULE_ROOTS = frozenset({"tensorflow", "keras", "tf_keras", "keras_hub", "keras_nlp", "keras_cv",
                                  "numpy", "math", "_operator", "operator"})
DENIED_MODULES = ("numpy.random",)
# Functions of the standard library that compute a value from their Python arguments alone
# (keras-io's text standardization escapes its punctuation with ``re.escape``): called as
# they are on Python values; a string the graph carries needs its value first.
PURE_FUNCTIONS = frozenset({re.escape})
# Converted like the user's code by default (``janus.allow`` adds more): packages of pure-
# TensorFlow helpers whose Python must go through Janus's runtime to keep eager's meaning
# (tensorflow_probability draws seeds with stateful ops when given none; their state
# writes are deferred; what Janus cannot follow makes the step eager, never wrong).
CONVERTED_MODULE_ROOTS = frozenset({"tensorflow_probability", "tensorflow_text", "tensorflow_addons",
                                    "tensorflow_hub", "tensorflow_recommenders", "tensorflow_ranking",
                                    "tensorflow_graphics", "tensorflow_model_optimization"})

_lock = threading.Lock()
_allowed_modules: set[str] = set(CONVERTED_MODULE_ROOTS)
_allowed_codes: set[types.CodeType] = set()
_module_dirs: dict[str, tuple[str, ...]] = {}  # allowed module -> where its files are, once it is loaded

# Builtins converted code calls (the lowering runs them on the trace's values); a call of
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
    """Code Janus converts: from the user's files (not a library's, the standard library's
    or Janus's), or allowed (``janus.allow``)."""
    if is_converted_code(code):
        return False
    return is_user_code_file(code.co_filename) or code in _allowed_codes or _in_allowed_module(code.co_filename)


def is_user_function(fn: Any) -> bool:
    """A Python function Janus converts and inlines: written by the user, or allowed."""
    if not isinstance(fn, types.FunctionType) or is_converted_code(fn.__code__):
        return False
    root = (fn.__module__ or "").split(".")[0]
    if root in ALLOWED_MODULE_ROOTS or root == "janus":
        return False
    return is_user_code_file(fn.__code__.co_filename) or is_allowed_function(fn)


def is_allowed_function(fn: types.FunctionType) -> bool:
    """``fn`` was allowed (``janus.allow``), by itself or by its module."""
    return fn.__code__ in _allowed_codes or is_allowed_module(fn.__module__ or "")


def as_is_root(module: str) -> str | None:
    """The allow-listed package ``module`` belongs to (called as it is), or Janus; else None."""
    root = module.split(".")[0]
    return root if root in ALLOWED_MODULE_ROOTS or root in ("janus", "janus_profiler") else None


def allow_module(name: str) -> None:
    """Convert every function defined in module ``name`` and its submodules."""
    with _lock:
        _allowed_modules.add(name)
        _module_dirs.clear()


def allow_function(fn: types.FunctionType) -> None:
    """Convert ``fn`` (and the functions and lambdas defined in its body)."""
    with _lock:
        _allowed_codes.update(code_objects(fn.__code__))


def is_allowed_module(module: str) -> bool:
    """Module ``module`` is allowed, or inside an allowed package."""
    while module:
        if module in _allowed_modules:
            return True
        module = module.rpartition(".")[0]
    return False


def _in_allowed_module(filename: str) -> bool:
    """A file of an allowed module that is loaded (for the profiler, which sees code objects)."""
    path = os.path.abspath(filename)
    with _lock:
        for name in _allowed_modules:
            if name not in _module_dirs and name in sys.modules:
                module = sys.modules[name]
                found = list(getattr(module, "__path__", None) or [])
                file = getattr(module, "__file__", None)
                _module_dirs[name] = tuple(os.path.abspath(p) for p in found or ([file] if file else []))
            for where in _module_dirs.get(name, ()):
                if path == where or path.startswith(where + os.sep):
                    return True
    return False


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
    if isinstance(fn, types.FunctionType) and fn in PURE_FUNCTIONS:
        return True
    mod = module_of(fn)
    if mod.startswith(DENIED_MODULES):
        return False
    return mod.split(".")[0] in ALLOWED_MODULE_ROOTS


def qualified_name(fn: Any) -> str:
    """``module.qualname`` of a callee, for failure reasons."""
    qual = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__qualname__
    return f"{module_of(fn)}.{qual}"
