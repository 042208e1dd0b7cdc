"""What library code prints while a thread traces, captured without touching other threads.

``contextlib.redirect_stdout`` swaps ``sys.stdout`` for the whole process: a line another
thread printed meanwhile was captured (and taken for library output), and two threads
tracing at once restored each other's streams out of order, leaving a ``StringIO`` as
the program's stdout.  Instead, the first capture puts a router in front of whatever
``sys.stdout`` is: it writes to the capturing thread's buffer while that thread traces,
and everything else goes to the stream it wraps.

The router is Janus's only while a trace captures: the first of the captures in flight
(any thread, nested ones included) puts it in front, the last one to finish takes it
away and gives back the stream it stood in front of.  If ``sys.stdout`` is no longer the
router then (the user set their own meanwhile), the user's object stays.  A program
that swaps ``sys.stdout`` (``contextlib.redirect_stdout``, a logger) finds its own
object before and after every call.
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


_captures = 0  # captures in flight, all threads (under ``_install``)


@contextlib.contextmanager
def captured() -> Iterator[io.StringIO]:
    """Within the block, what this thread prints to ``sys.stdout`` goes to the yielded buffer."""
    _enter()
    previous = getattr(_local, "buffer", None)
    _local.buffer = buffer = io.StringIO()
    try:
        yield buffer
    finally:
        _local.buffer = previous
        _leave()


def _enter() -> None:
    """One more capture: the router goes in front of ``sys.stdout`` unless it is there."""
    global _captures
    with _install:
        _captures += 1
        if not isinstance(sys.stdout, _Router):
            sys.stdout = _Router(sys.stdout)


def _leave() -> None:
    """One capture fewer; the last gives back the stream the router stood in front of
    (routers left in front by a user's redirection that saved one are taken away too)."""
    global _captures
    with _install:
        _captures -= 1
        if _captures:
            return
        while isinstance(sys.stdout, _Router):
            sys.stdout = sys.stdout._janus_stream


def installed() -> bool:
    """Is Janus's router ``sys.stdout`` now (only while some thread traces)?"""
    return isinstance(sys.stdout, _Router)
