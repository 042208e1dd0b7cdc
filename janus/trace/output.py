"""What library code prints while a thread traces, captured without touching other threads.

``contextlib.redirect_stdout`` swaps ``sys.stdout`` for the whole process: a line another
thread printed meanwhile was captured (and taken for library output), and two threads
tracing at once restored each other's streams out of order, leaving a ``StringIO`` as
the program's stdout.  Instead, the first capture puts a router in front of whatever
``sys.stdout`` is: it writes to the capturing thread's buffer while that thread traces,
and everything else goes to the stream it wraps.
"""
from __future__ import annotations

import contextlib
import io
import sys
import threading
from typing import Any, Iterator

_local = threading.local()
_install = threading.Lock()


class _Router:
    """Stands in front of a text stream; only a capturing thread's writes are diverted."""

    def __init__(self, stream: Any):
        self._janus_stream = stream

    def write(self, text: str) -> int:
        buffer = getattr(_local, "buffer", None)
        return (self._janus_stream if buffer is None else buffer).write(text)

    def flush(self) -> None:
        if getattr(_local, "buffer", None) is None:
            self._janus_stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._janus_stream, name)


@contextlib.contextmanager
def captured() -> Iterator[io.StringIO]:
    """Within the block, what this thread prints to ``sys.stdout`` goes to the yielded buffer."""
    with _install:
        if not isinstance(sys.stdout, _Router):
            sys.stdout = _Router(sys.stdout)
    previous = getattr(_local, "buffer", None)
    _local.buffer = buffer = io.StringIO()
    try:
        yield buffer
    finally:
        _local.buffer = previous
