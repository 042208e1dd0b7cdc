"""What the hook has taken over, shared by the namespace scan, the import hook and the
script rewrite (and undone by ``disable``), and what it ever took over (kept by ``disable``:
``janus.stats``/``janus.explain`` of a step still answer, ``enable()`` again reuses its
Janus function, its graphs and counts)."""
from __future__ import annotations

import threading
import types
import weakref
from typing import Any

from janus import config
from janus.convert.support import marked_do_not_convert

lock = threading.RLock()
# (namespace dict or class, attribute name, original object, installed object, Janus function)
installed: list[tuple[Any, str, Any, Any, Any]] = []
# (qualname, Janus function) of everything taken over (scan, import hook, script rewrite, loop bodies)
taken: list[tuple[str, Any]] = []
# every user function object the take-over made a Janus function of -> (that Janus function,
# the function's code then), for as long as the user's function lives (never undone)
history: "weakref.WeakKeyDictionary[types.FunctionType, tuple[Any, types.CodeType]]" = weakref.WeakKeyDictionary()


class _State:
    enabled = False


state = _State()


def record(qualname: str, jf: Any) -> None:
    with lock:
        taken.append((qualname, jf))


def remember(fn: Any, jf: Any) -> None:
    """``jf`` is the Janus function the take-over makes of the user's function ``fn`` (called
    before ``fn``'s code is swapped for a trampoline)."""
    if isinstance(fn, types.FunctionType):
        with lock:
            history[fn] = (jf, fn.__code__)


def earlier(fn: types.FunctionType) -> Any:
    """The Janus function an earlier take-over made of ``fn`` if it still runs ``fn`` as it is
    now (``fn`` itself, or a copy with its code, defaults and closure), else None (and None
    where ``janus.function`` would now leave ``fn`` plain)."""
    if config.disabled() or marked_do_not_convert(fn):
        return None
    with lock:
        jf, code = history.get(fn, (None, None))
    if jf is None or code is not fn.__code__:
        return None
    run = jf.python_function
    same = run is fn or (run.__code__ is code and run.__closure__ is fn.__closure__
                         and run.__globals__ is fn.__globals__ and run.__defaults__ == fn.__defaults__
                         and run.__kwdefaults__ == fn.__kwdefaults__)
    return jf if same else None


def janus_function_of(fn: Any) -> Any:
    """The Janus function the take-over made of the user's function object ``fn`` (the
    namespace scan's original, or the function a Janus function runs; taken over now or
    before a ``disable()``), or None.
    ``janus.stats``/``janus.explain`` look here for a function the user holds."""
    with lock:
        for _, _, original, _, jf in installed:
            inner = original.__func__ if isinstance(original, (staticmethod, classmethod)) else original
            if inner is fn:
                return jf
        for _, jf in taken:
            if getattr(jf, "python_function", None) is fn or getattr(jf, "__wrapped__", None) is fn:
                return jf
        return history.get(fn, (None,))[0] if isinstance(fn, types.FunctionType) else None
