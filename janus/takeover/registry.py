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
