"""What the hook has taken over, shared by the namespace scan, the import hook and the
script rewrite (and undone by ``disable``)."""
from __future__ import annotations

import threading
from typing import Any

lock = threading.RLock()
# (namespace dict or class, attribute name, original object, installed object, Janus function)
installed: list[tuple[Any, str, Any, Any, Any]] = []
# (qualname, Janus function) of everything taken over (scan, import hook, script rewrite, loop bodies)
taken: list[tuple[str, Any]] = []


class _State:
    enabled = False


state = _State()


def record(qualname: str, jf: Any) -> None:
    with lock:
        taken.append((qualname, jf))


def janus_function_of(fn: Any) -> Any:
    """The Janus function the take-over made of the user's function object ``fn`` (the
    namespace scan's original, or the function a Janus function runs), or None.
    ``janus.stats``/``janus.explain`` look here for a function the user holds."""
    with lock:
        for _, _, original, _, jf in installed:
            inner = original.__func__ if isinstance(original, (staticmethod, classmethod)) else original
            if inner is fn:
                return jf
        for _, jf in taken:
            if getattr(jf, "python_function", None) is fn or getattr(jf, "__wrapped__", None) is fn:
                return jf
    return None
