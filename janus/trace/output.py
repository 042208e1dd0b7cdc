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
import collections
import io
import sys
import threading
from typing import Any, Iterator

from janus import config

_local = threading.local()
_install = threading.Lock()
_RETIRED: collections.deque = collections.deque()  # see _Router; at most config.LIMITS.retired_kept


class _Router:
    """Stands in front of a text stream; only a capturing thread's writes are diverted.

    A router taken away from ``sys.stdout`` is kept alive by a thread that wrote through it
    then.  ``print()`` (CPython 3.11's, at least) holds ``sys.stdout`` as a borrowed reference
    from its first write to its last: a router taken away while a thread was inside its
    ``write`` lost its last reference when that write returned, and the same ``print``'s
    next write (the separator, the newline) used the freed object (a segmentation fault).
    A write or flush that finds its router retired keeps it in the thread's ``_local.kept``
    (one router per thread, until the thread writes through another retired one).  The
    test is the last step before ``return``: no call, where the thread could switch,
    follows it.  A print can also lose its router between two writes, while it runs an
    argument's ``__str__``: the most recent ``config.LIMITS.retired_kept`` retired routers are kept too
    (``_RETIRED``, appended before the router leaves ``sys.stdout``).
    """

    def __init__(self, stream: Any):
        self._janus_stream = stream
        self._janus_retired = False  # taken away from sys.stdout (class docstring)

    def write(self, text: str) -> int:
        buffer = getattr(_local, "buffer", None)
        written = (self._janus_stream if buffer is None else buffer).write(text)
        if self._janus_retired:  # no call between this test and the return (class docstring)
            _local.kept = self
        return written

    def flush(self) -> None:
        if getattr(_local, "buffer", None) is None:
            self._janus_stream.flush()
        if self._janus_retired:
            _local.kept = self

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_janus_"):  # never set (a copy made without __init__): no recursion
            raise AttributeError(name)
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
        if isinstance(sys.stdout, _Router):  # a router a user's redirection saved and put back
            sys.stdout._janus_retired = False
        else:
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
            router = sys.stdout
            router._janus_retired = True
            _RETIRED.append(router)
            while len(_RETIRED) > config.LIMITS.retired_kept:
                _RETIRED.popleft()
            sys.stdout = router._janus_stream


def installed() -> bool:
    """Is Janus's router ``sys.stdout`` now (only while some thread traces)?"""
    return isinstance(sys.stdout, _Router)
