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
import types
from typing import Any

__all__ = ["MonitoringBackend", "NoToolFree"]


class NoToolFree(RuntimeError):
    """Every sys.monitoring tool id the profiler may use is taken (by other profilers running
    at once, a debugger, coverage): the call runs unprofiled."""


class MonitoringBackend:
    """Installs the engine of one :class:`Profiler` as a ``sys.monitoring`` tool."""

    def __init__(self, prof: Any, frame_state: type, missing: object):
        """``frame_state`` and ``missing`` are the profiler's per-frame engine class and its
        "not bound" sentinel (passed in: the profiler imports this module, not the reverse)."""
        self.prof = prof
        self._frame_state = frame_state
        self._missing = missing
        self.states: dict[types.FrameType, Any] = {}
        self.local: set[types.CodeType] = set()
        self.tool: int | None = None

    def install(self) -> None:
        mon = sys.monitoring
        for tool in (mon.PROFILER_ID, 3, 4):
            if mon.get_tool(tool) is None:
                break
        else:
            raise NoToolFree("janus_profiler: no free sys.monitoring tool id")
        mon.use_tool_id(tool, "janus-profiler")
        self.tool = tool
        E = mon.events
        self.local_events = E.INSTRUCTION | E.CALL | E.PY_RESUME | E.PY_RETURN | E.PY_YIELD
        for ev, cb in ((E.PY_START, self._start), (E.PY_RESUME, self._resume),
                       (E.PY_RETURN, self._return), (E.PY_YIELD, self._yield),
                       (E.PY_UNWIND, self._unwind), (E.RAISE, self._raise),
                       (E.INSTRUCTION, self._instruction), (E.CALL, self._call)):
            mon.register_callback(tool, ev, cb)
        # RAISE and PY_UNWIND exist only as global events; their callbacks ignore other frames
        mon.set_events(tool, E.PY_START | E.RAISE | E.PY_UNWIND)
        mon.restart_events()  # code that was DISABLEd by an earlier session is seen again

    def uninstall(self) -> None:
        mon = sys.monitoring
        tool = self.tool
        if tool is None:
            return
        mon.set_events(tool, 0)
        for code in self.local:
            mon.set_local_events(tool, code, 0)
        E = mon.events
        for ev in (E.PY_START, E.PY_RESUME, E.PY_RETURN, E.PY_YIELD, E.PY_UNWIND, E.RAISE,
                   E.INSTRUCTION, E.CALL):
            mon.register_callback(tool, ev, None)
        mon.free_tool_id(tool)
        self.tool = None
        self.states.clear()
        self.local.clear()

    # -- callbacks (the monitored frame is sys._getframe(1)) ------------------------------------
    def _start(self, code: types.CodeType, offset: int) -> Any:
        prof = self.prof
        frame = sys._getframe(1)
        b = prof._bound.get(id(code), self._missing)
        if b is self._missing:
            b = prof._decide(code, frame)
        if b is None:
            return sys.monitoring.DISABLE
        if code not in self.local:
            sys.monitoring.set_local_events(self.tool, code, self.local_events)
            self.local.add(code)
        fs = self.states[frame] = self._frame_state(prof, b)
        fs.start(frame)
        return None

    def _resume(self, code: types.CodeType, offset: int) -> None:
        frame = sys._getframe(1)
        fs = self.states.get(frame)
        if fs is not None:
            fs.resume(frame)

    def _instruction(self, code: types.CodeType, offset: int) -> None:
        frame = sys._getframe(1)
        fs = self.states.get(frame)
        if fs is not None:
            fs.op(frame, offset)

    def _call(self, code: types.CodeType, offset: int, callable_: Any, arg0: Any) -> None:
        fs = self.states.get(sys._getframe(1))
        if fs is not None:
            fs.call_object(offset, callable_)

    def _raise(self, code: types.CodeType, offset: int, exc: BaseException) -> None:
        fs = self.states.get(sys._getframe(1))
        if fs is not None:
            fs.exception(exc)

    def _return(self, code: types.CodeType, offset: int, value: Any) -> None:
        frame = sys._getframe(1)
        fs = self.states.pop(frame, None)
        if fs is not None:
            fs.ret(frame, value, "return")

    def _yield(self, code: types.CodeType, offset: int, value: Any) -> None:
        frame = sys._getframe(1)
        fs = self.states.get(frame)
        if fs is not None:
            fs.ret(frame, value, "yield")

    def _unwind(self, code: types.CodeType, offset: int, exc: BaseException) -> None:
        frame = sys._getframe(1)
        fs = self.states.pop(frame, None)
        if fs is not None:
            fs.exception(exc)
            fs.ret(frame, None, "raise")
