"""The hook beyond tapes: take over a TensorFlow function without a tape once it is hot.

A function with no ``tf.GradientTape`` that runs TensorFlow ops at every call of a hot loop
(PPO's ``sample_action(observation)`` once per environment step, DDPG's
``update_target(target_weights, weights, tau)`` assigning every variable) gains from a
graph as a training step does.  Two tests decide, both by counting, never by timing:

* **TensorFlow-heavy** (:func:`candidacy`, static): a plain function of a user module
  whose own code names a TensorFlow or Keras module, an object of theirs (a ``tf.Variable``,
  a Keras model or layer, ``tf.squeeze`` imported by name) among its globals, or calls a
  variable's ``assign``/``assign_add``/``assign_sub``.  Pure Python helpers, environment
  code, generators, special methods but ``__call__`` (``__init__`` creating variables), ``tf.function``/``janus.function``/``janus.do_not_convert`` functions,
  methods of Keras classes (Keras calls those itself; the user's function calling the model
  is the one taken over) and library code are left alone.
* **Hot** (counted): called ``janus.config.LIMITS.hot_calls`` times.

A candidate's function object gets a *counting trampoline* as its ``__code__`` (the take-over's
trampoline, ``redirect.trampoline_code``, calling a :class:`HotCounter`), which runs every
call as written on a copy of the function and counts it; the call that makes it hot hands
the function to ``redirect.take_over_function`` (the trampoline to ``janus.function`` the
tape hook uses), so references taken earlier and bound methods follow.  Counting by a
trampoline costs one Python call per call of a candidate only, on every Python version: on
3.11 the exact watchers (``sys.setprofile``/``sys.settrace``) cost every call of the program
and the sampler measures time, not calls.  Candidates are found where the tape hook's
namespace scan looks (modules already imported, modules imported later) and, for
``python -m janus``, by the script rewrite (``script.py``); a closure or a function defined
after ``enable()`` outside ``python -m janus`` is not counted (it runs as written).
"""
from __future__ import annotations

import logging
import types
import weakref
from dataclasses import dataclass
from typing import Any

from janus import config
from janus.convert.registry import is_converted_code
from janus.convert.support import marked_do_not_convert
from janus.takeover import redirect, roster
from janus.takeover.detect import TAPE_NAME, TENSORFLOW_ROOTS, UPDATE_METHODS, is_special, is_trampoline
from janus.takeover.importer import is_user_file

log = logging.getLogger("janus")

_NOT_PLAIN = 0x20 | 0x80 | 0x100 | 0x200  # generator, coroutine, iterable coroutine, async generator


@dataclass(frozen=True)
class Candidacy:
    """Whether a function is a candidate (TensorFlow-heavy: its calls are counted while the hook
    is on), and why (the log says it when it is taken over)."""

    candidate: bool
    reason: str


def _root(name: Any) -> str:
    return name.split(".", 1)[0] if isinstance(name, str) else ""


def is_tensorflow_value(value: Any) -> bool:
    """A TensorFlow or Keras module, or an object, function or class defined by them (a
    variable, a tensor, a model, ``tf.squeeze`` imported by name, a user's Keras subclass)."""
    if isinstance(value, types.ModuleType):
        return _root(value.__name__) in TENSORFLOW_ROOTS
    kind = value if isinstance(value, type) else type(value)
    if any(_root(getattr(c, "__module__", None)) in TENSORFLOW_ROOTS for c in kind.__mro__):
        return True
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType)):
        return _root(getattr(value, "__module__", None)) in TENSORFLOW_ROOTS
    return False


def keras_class(cls: type) -> bool:
    """A class deriving from a Keras class: Keras calls its methods (``call``, ``build``, a
    callback's hooks), not the user's loop."""
    return any(_root(c.__module__) in ("keras", "tf_keras") for c in cls.__mro__[1:])


def candidacy(fn: Any, code: types.CodeType | None = None, globals_known: bool = True) -> Candidacy:
    """Is ``fn`` (run with ``code``, by default its own) a TensorFlow-heavy function to count?
    With ``globals_known=False`` its globals are not looked at (the script rewrite's functions
    are defined before the globals they name: they are looked at when the function is hot)."""
    if not isinstance(fn, types.FunctionType):
        return Candidacy(False, "not a Python function")
    code = code or fn.__code__
    excluded = _excluded(fn, code)
    if excluded is not None:
        return Candidacy(False, excluded)
    if not globals_known:
        return Candidacy(True, "named by the script rewrite")
    names = [n for n in code.co_names if n in fn.__globals__ and is_tensorflow_value(fn.__globals__[n])]
    if names:
        return Candidacy(True, f"uses {', '.join(names)}")
    updates = sorted(UPDATE_METHODS.intersection(code.co_names))
    if updates:
        return Candidacy(True, f"calls .{', .'.join(updates)}")
    return Candidacy(False, "names no TensorFlow or Keras object (pure Python)")


def _owner(fn: types.FunctionType) -> type | None:
    """The class a method was defined in, found by its qualified name among its globals (None
    for a function, a method of a local class, or a class not made yet: a script's class body
    runs its methods' decorators before the class exists)."""
    parts = fn.__qualname__.split(".")
    if len(parts) < 2 or "<locals>" in parts:
        return None
    owner: Any = fn.__globals__.get(parts[0])
    for part in parts[1:-1]:
        owner = getattr(owner, part, None)
    return owner if isinstance(owner, type) else None


def _excluded(fn: types.FunctionType, code: types.CodeType) -> str | None:
    """Why ``fn`` is never counted, or None."""
    if code.co_flags & _NOT_PLAIN:
        return "a generator or coroutine"
    if TAPE_NAME in code.co_names:
        return "records a tape (taken over by the tape hook)"
    if is_special(code.co_name):
        return "a special method (an object's construction, its repr...)"
    owner = _owner(fn)
    if owner is not None and keras_class(owner):
        return "a method of a Keras class (Keras calls it)"
    if marked_do_not_convert(fn):
        return "marked janus.do_not_convert"
    if is_converted_code(code) or is_trampoline(code) or not is_user_file(code.co_filename):
        return "not the user's code"
    return None


class HotCounter:
    """A counting trampoline's target: runs each call as written (``python_function``, a copy
    of the user's function) and counts it; the call that makes the function hot takes it over."""

    def __init__(self, fn: types.FunctionType, threshold: int):
        self.python_function = redirect.copy_of(fn)
        self.code = fn.__code__
        self.counting_code = redirect.trampoline_code(fn.__code__, self)
        self.fn_ref = weakref.ref(fn)
        self.calls = 0
        self.threshold = threshold

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1   # under threads a count may be lost: the function is then taken over a call later
        if self.calls >= self.threshold:
            self.promote()
        return self.python_function(*args, **kwargs)

    def promote(self) -> None:
        """Hand the function to the take-over (once), or give it its code back if it no longer
        qualifies (a global it named was rebound to something else)."""
        with redirect.lock:
            fn = self.fn_ref()
            if fn is None or fn.__code__ is not self.counting_code:
                return   # taken over by another thread's call already, given back, or changed by the user
            verdict = candidacy(fn, self.code)
            _give_back(fn, self)
            if not verdict.candidate:
                log.debug("%s stays as written after %d calls: %s", fn.__qualname__, self.calls, verdict.reason)
            elif roster.state.enabled and roster.state.hot:
                redirect.take_over_function(fn)
                log.info("took over %s after %d calls (%s)", fn.__qualname__, self.calls, verdict.reason)


_counting: "weakref.WeakKeyDictionary[types.FunctionType, HotCounter]" = weakref.WeakKeyDictionary()


def _give_back(fn: types.FunctionType, counter: HotCounter) -> None:
    """``fn``'s own code again, if it still has the counting one (caller holds the lock)."""
    _counting.pop(fn, None)
    if fn.__code__ is counter.counting_code:
        fn.__code__ = counter.code
        if vars(fn).get("__wrapped__") is counter.python_function:
            del fn.__wrapped__


def watch(fn: Any, checked: bool = True) -> Candidacy:
    """Count ``fn``'s calls from now on if it is a candidate (:func:`candidacy`; with
    ``checked=False`` only its code is checked now, its globals at the call that makes it
    hot: the script rewrite's functions are defined before the globals they name)."""
    verdict = candidacy(fn, globals_known=checked)
    if not verdict.candidate or config.disabled() or not (roster.state.enabled and roster.state.hot):
        return verdict   # JANUS_DISABLE: every function stays plain, as janus.function leaves it
    with redirect.lock:
        if fn in _counting or is_trampoline(fn.__code__):
            return verdict
        if roster.earlier(fn) is not None:   # taken over before a disable(): the same Janus function at once
            redirect.take_over_function(fn)
            return verdict
        counter = HotCounter(fn, config.LIMITS.hot_calls)
        _counting[fn] = counter
        fn.__code__ = counter.counting_code
        if "__wrapped__" not in vars(fn):
            fn.__wrapped__ = counter.python_function   # inspect.signature and getsource see the user's own
    return verdict


def decorate(fn: Any) -> Any:
    """The script rewrite's decorator (``python -m janus``): count ``fn``; returns ``fn``."""
    watch(fn.__func__ if isinstance(fn, (staticmethod, classmethod)) else fn, checked=False)
    return fn


def scan_module(mod: types.ModuleType) -> None:
    """Count the candidates among ``mod``'s functions and its classes' methods (not Keras classes')."""
    _scan(vars(mod), mod.__name__, set())


def _scan(names: dict, module_name: str, seen: set) -> None:
    for obj in list(names.values()):
        if isinstance(obj, type) and obj.__module__ == module_name and id(obj) not in seen \
                and "<locals>" not in obj.__qualname__:
            seen.add(id(obj))
            if not keras_class(obj):
                _scan(dict(vars(obj)), module_name, seen)
            continue
        inner = obj.__func__ if isinstance(obj, (staticmethod, classmethod)) else obj
        if isinstance(inner, types.FunctionType) and inner.__module__ == module_name:
            watch(inner)


def counting() -> list[types.FunctionType]:
    """The functions whose calls are being counted now."""
    with redirect.lock:
        return list(_counting)


def stop() -> None:
    """Stop counting: every counted function gets its own code back (``disable()``)."""
    with redirect.lock:
        for fn, counter in list(_counting.items()):
            _give_back(fn, counter)
        _counting.clear()
