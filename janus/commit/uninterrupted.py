"""A graph run and the commit of its effects, not torn apart by Ctrl-C.

A ``KeyboardInterrupt`` is raised at the next bytecode boundary of the main thread: after
a graph wrote its variables and before Python committed the step's other effects, it
left the variable updated and the ``list.append`` missing.  In eager, every effect of a
statement that ran is there.  So while a graph runs and commits, SIGINT is only
recorded, and its handler runs once the commit is done (or the run was abandoned before
anything changed): the call has all of its effects or none.
"""
from __future__ import annotations

import _signal  # signal's C module: signal.signal converts handlers to and from enums (2 µs a call, 0.2 here)
import signal
import threading
from typing import Any

_MAIN = threading.main_thread()
_SIGINT = int(signal.SIGINT)


class SignalsDeferred:
    """``with SignalsDeferred():`` SIGINT's Python handler waits and runs after the block.

    Other threads need nothing: Python runs signal handlers on the main thread only.
    """

    __slots__ = ("handler", "pending")

    def __enter__(self) -> "SignalsDeferred":
        self.handler = None
        if threading.current_thread() is _MAIN:
            self.pending = []
            self.handler = _signal.signal(_SIGINT, self._record)
            if not callable(self.handler):  # ignored, the default action, or set outside Python: leave it
                _signal.signal(_SIGINT, self.handler)
                self.handler = None
        return self

    def _record(self, signum: int, frame: Any) -> None:
        self.pending.append((signum, frame))

    def __exit__(self, *exc: Any) -> None:
        handler = self.handler
        if handler is not None:
            _signal.signal(_SIGINT, handler)
            for signum, frame in self.pending:
                handler(signum, frame)
