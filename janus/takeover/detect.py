"""Which functions record a ``tf.GradientTape``: the static test the hook takes over by
(and the script rewrite's test of TensorFlow without a tape, for ``hot.py``).

A function qualifies when its own code names ``GradientTape`` (``co_names``: the same
test as finding a ``tf.GradientTape`` / ``GradientTape`` reference in its AST, without
parsing; nested functions have their own code objects and are not counted).
"""
from __future__ import annotations

import ast
import ctypes
import sys
import types
from typing import Any, Iterator

TAPE_NAME = "GradientTape"


def records_tape(fn: Any) -> bool:
    """True if ``fn``'s own body refers to ``GradientTape`` (static check on its code)."""
    code = getattr(fn, "__code__", None)
    if not isinstance(code, types.CodeType):
        return False
    if code.co_flags & (0x20 | 0x80 | 0x100 | 0x200):  # generator / coroutine / async generator
        return False
    return TAPE_NAME in code.co_names


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def own_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes under ``node``, without descending into nested functions, lambdas and classes."""
    stack = list(ast.iter_child_nodes(node))
    while stack:
        child = stack.pop()
        if isinstance(child, _SCOPES):
            continue
        yield child
        stack.extend(ast.iter_child_nodes(child))


def node_records_tape(node: ast.AST) -> bool:
    """True if the statements under ``node`` refer to ``GradientTape`` outside nested scopes."""
    for child in own_nodes(node):
        if isinstance(child, ast.Name) and child.id == TAPE_NAME:
            return True
        if isinstance(child, ast.Attribute) and child.attr == TAPE_NAME:
            return True
    return False


# -- TensorFlow without a tape (the hot-function hook, hot.py) ---------------------------
TENSORFLOW_ROOTS = frozenset({"tensorflow", "keras", "tf_keras"})
# A tf.Variable's updates: a function assigning variables it is given (DDPG's ``update_target``)
# names no TensorFlow global at all.
UPDATE_METHODS = frozenset({"assign", "assign_add", "assign_sub"})


def tensorflow_names(module: ast.Module) -> set[str]:
    """The names a script binds to TensorFlow or Keras: its imports of them (``import
    tensorflow as tf``, ``from tensorflow import keras``) and the module-level names assigned
    from an expression naming one (``actor = keras.Model(...)``).  The script rewrite's static
    test; modules already run are tested on their globals' values instead (hot.py)."""
    names: set[str] = set()
    for node in ast.walk(module):
        if isinstance(node, ast.Import):
            names.update((a.asname or a.name.split(".")[0]) for a in node.names
                         if a.name.split(".")[0] in TENSORFLOW_ROOTS)
        elif isinstance(node, ast.ImportFrom) and not node.level and \
                (node.module or "").split(".")[0] in TENSORFLOW_ROOTS:
            names.update(a.asname or a.name for a in node.names)
    for _ in range(2):   # a name assigned from one assigned from TensorFlow
        for stmt in module.body:
            if isinstance(stmt, ast.Assign) and node_uses_tensorflow(stmt.value, names, own=False):
                names.update(t.id for target in stmt.targets for t in ast.walk(target) if isinstance(t, ast.Name))
    return names


def node_uses_tensorflow(node: ast.AST, names: set[str], own: bool = True) -> bool:
    """The code under ``node`` (outside nested scopes if ``own``) names one of ``names`` or
    calls a variable update (``.assign``...)."""
    for child in own_nodes(node) if own else ast.walk(node):
        if isinstance(child, ast.Name) and child.id in names:
            return True
        if isinstance(child, ast.Attribute) and child.attr in UPDATE_METHODS:
            return True
    return False


def is_special(name: str) -> bool:
    """``__init__``, ``__repr__``...: not a step of a loop (``__call__`` is one)."""
    return name.startswith("__") and name.endswith("__") and name != "__call__"


def is_trampoline(code: types.CodeType) -> bool:
    """A code the take-over gave a function (``redirect.trampoline_code``): it holds, among its
    constants, what it calls (a Janus function, or ``hot.HotCounter``), which has the
    function as written as ``python_function``; compiled code's constants never do."""
    return any(isinstance(getattr(c, "python_function", None), types.FunctionType) for c in code.co_consts)


# -- the function object a running frame belongs to ------------------------------------
# Python has no API for it (``frame.f_code`` is the code, not the function), and finding
# the function by its code means walking the heap (``gc.get_referrers``).  The
# interpreter frame holds it, as a strong reference, at a fixed place of a layout that
# is fixed per minor version: ``PyFrameObject.f_frame`` (after the object header and
# ``f_back``) points to the ``_PyInterpreterFrame``, whose pointer fields are, on 3.11,
# ``f_func, f_globals, f_builtins, f_locals, f_code, ...`` and on 3.12 and 3.13
# ``f_code`` (``f_executable``), ``previous, f_funcobj, ...``.  Every read is checked: the
# code pointer read must be the frame's own code and the function pointer must point to
# a function; the layout is also checked once at import on a frame whose function is
# known.  Where a check fails (another version, another build) ``function_of`` returns
# None and the caller walks the heap instead.
_P = ctypes.sizeof(ctypes.c_void_p)
_F_FRAME = object.__basicsize__ + _P            # PyFrameObject: header, f_back, f_frame
_LAYOUTS = {(3, 11): (0, 4), (3, 12): (2, 0), (3, 13): (2, 0)}   # (function index, code index)
_LAYOUT = _LAYOUTS.get(sys.version_info[:2])


def _read_function(frame: types.FrameType) -> types.FunctionType | None:
    if _LAYOUT is None or type(frame) is not types.FrameType:
        return None
    base = ctypes.c_void_p.from_address(id(frame) + _F_FRAME).value
    if not base or ctypes.c_void_p.from_address(base + _LAYOUT[1] * _P).value != id(frame.f_code):
        return None
    fn = ctypes.c_void_p.from_address(base + _LAYOUT[0] * _P).value
    if not fn or ctypes.c_void_p.from_address(fn + object.__basicsize__ - _P).value != id(types.FunctionType):
        return None   # (ob_type is the header's last field)
    return ctypes.py_object.from_address(base + _LAYOUT[0] * _P).value   # a new reference


def _probe() -> types.FunctionType | None:
    return _read_function(sys._getframe())


try:
    _LAYOUT_OK = _LAYOUT is not None and _probe() is _probe
except Exception:  # noqa: BLE001 - an unknown layout: the heap walk is used instead
    _LAYOUT_OK = False


def function_of(frame: types.FrameType) -> types.FunctionType | None:
    """The function object whose call ``frame`` runs, read from the interpreter frame
    without walking the heap; None where this Python's frame layout is not known.

    Call it only from the thread that runs ``frame`` (or on a frame that has returned):
    the frames below the reader cannot return during the read, and the interpreter frame
    holds the function.  From another thread the reader can be switched out between two
    reads (a GIL switch) while the frame returns and its memory is reused or freed: no
    caller does that (``janus/takeover/redirect.py``, issue #39 item 2)."""
    if not _LAYOUT_OK:
        return None
    return _read_function(frame)
