"""Which trace is being built on this thread, and which graph call is running.

A tiny module of its own so that value types (``PyScalar``) and the lowering can find
the active trace without importing the trace context.
"""
from __future__ import annotations

import threading
from typing import Any

_local = threading.local()

# Arguments ``(a, k)`` of the graph call in progress on this thread; call-time inputs
# (heap tensors, fed Python numbers) read their values from them.
CALL = threading.local()


def current() -> Any:
    """The ``TraceContext`` being built on this thread, if any."""
    return getattr(_local, "ctx", None)


def swap(ctx: Any) -> Any:
    """Make ``ctx`` the active trace; returns the one it replaces."""
    previous = current()
    _local.ctx = ctx
    return previous
