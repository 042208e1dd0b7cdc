"""What the hook has taken over, shared by the namespace scan, the import hook and the
script rewrite (and undone by ``disable``), and what it ever took over (kept by ``disable``:
``janus.stats``/``janus.explain`` of a step still answer, ``enable()`` again reuses its
Janus function, its graphs and counts).

Nothing here keeps a function the user let go of: ``taken`` refers to Janus functions
weakly, and ``history``, weak on the user's function, refers weakly to a Janus function
that runs that very function (a strong one would keep its own key, and with it every
graph, alive for good: a step made anew each epoch grew by its graphs each epoch).  The
namespace scan's Janus functions, which run the module's own functions, are kept by
``scanned`` for as long as the process (their modules live as long)."""
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
# (qualname, weak reference to the Janus function) of everything taken over (scan, import hook,
# script rewrite, loop bodies), while the Janus function lives
taken: list[tuple[str, "weakref.ref[Any]"]] = []
# every user function object the take-over made a Janus function of -> (that Janus function,
# or a weak reference to it if it runs the user's function itself; the function's code then),
# for as long as the user's function lives (never undone)
history: "weakref.WeakKeyDictionary[types.FunctionType, tuple[Any, types.CodeType]]" = weakref.WeakKeyDictionary()
# the namespace scan's Janus functions (of module-level functions and methods): kept after disable()
scanned: list[Any] = []


class _State:
    enabled = False
    hot = False   # TensorFlow functions without a tape are counted and taken over when hot (hot.py)


state = _State()


def record(qualname: str, jf: Any) -> None:
    """``jf`` is taken over now (listed by ``janus.taken_over()`` while it lives)."""
    with lock:
        taken[:] = [t for t in taken if t[1]() is not None]
        taken.append((qualname, weakref.ref(jf)))


def taken_now() -> list[tuple[str, Any]]:
    """(qualname, Janus function) of what is taken over and alive, in the order taken."""
    with lock:
        return [(q, jf) for q, jf in ((q, r()) for q, r in taken) if jf is not None]


def untake(gone: Any) -> None:
    """``gone(jf)`` says which Janus functions are no longer taken over (``disable``)."""
    with lock:
        taken[:] = [t for t in taken if t[1]() is not None and not gone(t[1]())]


def remember(fn: Any, jf: Any) -> None:
    """``jf`` is the Janus function the take-over makes of the user's function ``fn`` (called
    before ``fn``'s code is swapped for a trampoline).  Held weakly if it runs ``fn`` itself."""
    if isinstance(fn, types.FunctionType):
        held = weakref.ref(jf) if getattr(jf, "python_function", None) is fn else jf
        with lock:
            history[fn] = (held, fn.__code__)


def _remembered(fn: types.FunctionType) -> tuple[Any, types.CodeType | None]:
    held, code = history.get(fn, (None, None))
    return (held() if isinstance(held, weakref.ref) else held), code


def earlier(fn: types.FunctionType) -> Any:
    """The Janus function an earlier take-over made of ``fn`` if it still runs ``fn`` as it is
    now (``fn`` itself, or a copy with its code, defaults and closure), else None (and None
    where ``janus.function`` would now leave ``fn`` plain)."""
    if config.disabled() or marked_do_not_convert(fn):
        return None
    with lock:
        jf, code = _remembered(fn)
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
        for _, jf in taken_now():
            if getattr(jf, "python_function", None) is fn or getattr(jf, "__wrapped__", None) is fn:
                return jf
        return _remembered(fn)[0] if isinstance(fn, types.FunctionType) else None
