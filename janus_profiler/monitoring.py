"""The Python 3.12+ backend: ``sys.monitoring`` (PEP 669) instead of ``sys.settrace``.

Why a second backend: with ``sys.settrace`` on 3.11 the interpreter takes its slow
tracing path for *every* frame as long as a trace function is installed, so code
outside the profiled functions pays a tax.  ``sys.monitoring`` events are switched
on per code object: the global ``PY_START`` event is used once per code object to
decide (``DISABLE`` is returned for code that is not profiled, which then runs with
no instrumentation at all), and profiled code objects get local events:

* ``INSTRUCTION`` -> the same per-offset engine as on 3.11 (branches, jumps and
  loops are resolved from where execution goes next, exactly like the opcode
  events of ``sys.settrace``, so both backends record the same thing);
* ``CALL`` -> the callee object itself (better than the static re-evaluation 3.11
  needs);
* ``PY_START``/``PY_RESUME``/``PY_RETURN``/``PY_YIELD`` -> arguments, returns,
  generator suspension; ``RAISE``/``PY_UNWIND`` (global-only events, ignored for
  frames that are not profiled) -> exceptions.

This module is only imported on 3.12+ (``hasattr(sys, "monitoring")``).  Set
``JANUS_PROFILER_SETTRACE=1`` to force the settrace backend there.
"""
from __future__ import annotations

import sys
import threading
import types
from typing import Any

from .engine import MISSING, FrameState, internal_error

__all__ = ["MonitoringBackend", "NoToolFree"]

#: Serialises taking and freeing tool ids between profilers on different threads (a free id
#: seen by two threads at once must not be taken twice).
_TOOLS = threading.Lock()
#: The ids the profiler may take: PROFILER_ID (2) first, then two ids no standard tool claims
#: (literals: this module is imported on 3.11 too, where sys.monitoring does not exist).
_CANDIDATES = (2, 3, 4)


class NoToolFree(RuntimeError):
    """Every sys.monitoring tool id the profiler may use is taken (by other profilers running
    at once, a debugger, coverage): the call runs unprofiled."""


class MonitoringBackend:
    """Installs the engine of one :class:`Profiler` as a ``sys.monitoring`` tool.

    Events are process-wide, but only the thread that installed the tool is profiled: other
    threads' frames are never recorded, a code object is ``DISABLE``d from another thread
    only if the profiler would never profile it, and no callback lets an exception reach
    the monitored program."""

    def __init__(self, prof: Any):
        self.prof = prof
        self.states: dict[types.FrameType, Any] = {}
        self.local: set[types.CodeType] = set()
        self.tool: int | None = None
        self.thread = threading.get_ident()

    def install(self) -> None:
        """Take a free tool id and switch on the global events; NoToolFree if none is free."""
        mon = sys.monitoring
        E = mon.events
        self.local_events = E.INSTRUCTION | E.CALL | E.PY_RESUME | E.PY_RETURN | E.PY_YIELD
        with _TOOLS:
            tool = _take_tool_id()
            try:
                for ev, cb in self._callbacks():
                    mon.register_callback(tool, ev, cb)
                # RAISE and PY_UNWIND exist only as global events; their callbacks ignore other frames
                mon.set_events(tool, E.PY_START | E.RAISE | E.PY_UNWIND)
            except BaseException:
                self._release(tool)
                raise
            self.tool = tool
            mon.restart_events()  # code that was DISABLEd by an earlier session is seen again

    def _callbacks(self) -> tuple:
        E = sys.monitoring.events
        return ((E.PY_START, self._start), (E.PY_RESUME, self._resume),
                (E.PY_RETURN, self._return), (E.PY_YIELD, self._yield),
                (E.PY_UNWIND, self._unwind), (E.RAISE, self._raise),
                (E.INSTRUCTION, self._instruction), (E.CALL, self._call))

    def uninstall(self) -> None:
        """Switch every event off, unregister the callbacks and free the tool id."""
        with _TOOLS:
            tool, self.tool = self.tool, None
            if tool is not None:
                self._release(tool)
        self.states.clear()
        self.local.clear()

    def _release(self, tool: int) -> None:
        """Free ``tool`` with nothing of ours left on it (the caller holds _TOOLS).

        ``DISABLE`` outlives a freed id (a later holder of the id would not see the code the
        profiler disabled), so the disabled events are restarted once the id is free."""
        mon = sys.monitoring
        mon.set_events(tool, 0)
        for code in self.local:
            mon.set_local_events(tool, code, 0)
        for ev, _ in self._callbacks():
            mon.register_callback(tool, ev, None)
        mon.free_tool_id(tool)
        mon.restart_events()

    # -- callbacks (the monitored frame is sys._getframe(1)) ------------------------------------
    def _start(self, code: types.CodeType, offset: int) -> Any:
        if threading.get_ident() != self.thread:
            return self._elsewhere(code)
        frame = sys._getframe(1)
        try:
            return self._started(code, frame)
        except Exception:  # noqa: BLE001 - never break the observed program
            self._failed(code, frame)
            return None

    def _elsewhere(self, code: types.CodeType) -> Any:
        """``PY_START`` in another thread: nothing is recorded there.  Code the profiler never
        profiles (its own thread's answer too, decided by the code alone) is ``DISABLE``d, so
        that other threads run it without calling back into Python at every call from then on;
        code it may profile is left alone (``DISABLE`` would hold for every thread).

        Python run inside a library call can widen TensorFlow's own races: its op dispatch
        type-checks arguments from a buffer shared by every thread calling that op, while
        ``isinstance`` runs Python (``tests/scripts/tf_dispatch_race.py``, issue #39 item 2)."""
        prof = self.prof
        b = prof._bound.get(id(code), MISSING)
        if b is None:
            return sys.monitoring.DISABLE
        if b is MISSING and not prof.wants(code):   # wants() never raises
            return sys.monitoring.DISABLE
        return None

    def _started(self, code: types.CodeType, frame: types.FrameType) -> Any:
        prof = self.prof
        b = prof._bound.get(id(code), MISSING)
        if b is MISSING:
            b = prof._decide(code, frame)
        if b is None:
            return sys.monitoring.DISABLE
        if code not in self.local:
            sys.monitoring.set_local_events(self.tool, code, self.local_events)
            self.local.add(code)
        fs = self.states[frame] = FrameState(prof, b)
        fs.start(frame)
        return None

    def _resume(self, code: types.CodeType, offset: int) -> None:
        if threading.get_ident() != self.thread:
            return  # only the owner thread's frames are in states
        frame = sys._getframe(1)
        fs = self.states.get(frame)
        if fs is not None:
            try:
                fs.resume(frame)
            except Exception:  # noqa: BLE001 - never break the observed program
                self._failed(code, frame)

    def _instruction(self, code: types.CodeType, offset: int) -> None:
        if threading.get_ident() != self.thread:
            return
        frame = sys._getframe(1)
        fs = self.states.get(frame)
        if fs is not None:
            try:
                fs.op(frame, offset)
            except Exception:  # noqa: BLE001
                self._failed(code, frame)

    def _call(self, code: types.CodeType, offset: int, callable_: Any, arg0: Any) -> None:
        if threading.get_ident() != self.thread:
            return
        frame = sys._getframe(1)
        fs = self.states.get(frame)
        if fs is not None:
            try:
                fs.call_object(offset, callable_)
            except Exception:  # noqa: BLE001
                self._failed(code, frame)

    def _raise(self, code: types.CodeType, offset: int, exc: BaseException) -> None:
        if threading.get_ident() != self.thread:
            return
        fs = self.states.get(sys._getframe(1))
        if fs is not None:
            fs.exception(exc)  # two assignments: cannot fail

    def _return(self, code: types.CodeType, offset: int, value: Any) -> None:
        if threading.get_ident() != self.thread:
            return
        frame = sys._getframe(1)
        fs = self.states.pop(frame, None)
        if fs is not None:
            try:
                fs.ret(frame, value, "return")
            except Exception:  # noqa: BLE001
                self._failed(code, frame)

    def _yield(self, code: types.CodeType, offset: int, value: Any) -> None:
        if threading.get_ident() != self.thread:
            return
        frame = sys._getframe(1)
        fs = self.states.get(frame)
        if fs is not None:
            try:
                fs.ret(frame, value, "yield")
            except Exception:  # noqa: BLE001
                self._failed(code, frame)

    def _unwind(self, code: types.CodeType, offset: int, exc: BaseException) -> None:
        if threading.get_ident() != self.thread:
            return
        frame = sys._getframe(1)
        fs = self.states.pop(frame, None)
        if fs is not None:
            try:
                fs.exception(exc)
                fs.ret(frame, None, "raise")
            except Exception:  # noqa: BLE001
                self._failed(code, frame)

    def _failed(self, code: types.CodeType, frame: types.FrameType) -> None:
        """The engine failed on ``frame``: log it once, and the frame continues untraced."""
        self.states.pop(frame, None)
        internal_error(code)


def _take_tool_id() -> int:
    """Take the first free candidate id (the caller holds _TOOLS).  An id taken meanwhile by
    code that does not use our lock (the user's own tool) is skipped, not an error."""
    mon = sys.monitoring
    for tool in _CANDIDATES:
        if mon.get_tool(tool) is not None:
            continue
        try:
            mon.use_tool_id(tool, "janus-profiler")
        except ValueError:
            continue
        return tool
    raise NoToolFree("janus_profiler: no free sys.monitoring tool id")

