"""The profiler: which code is profiled, and the CPython hooks that feed the engine
(:mod:`janus_profiler.engine`) the events of its frames.

Two backends feed one engine:

* Python 3.11: ``sys.settrace``.  The global trace function is called once per new
  frame; for code that is not profiled it returns None at once, so that frame gets
  no further Python-level events.  Profiled frames get ``f_trace_opcodes = True``
  and a per-frame :class:`FrameState` as their local trace function.
* Python 3.12+: ``sys.monitoring`` (see :mod:`janus_profiler.monitoring`); events
  are switched on per code object, so other code really runs at full speed.

Either way the engine sees "the instruction at offset N is about to run in this
frame", plus call/return/exception events.  It cannot see the value stack, so it
learns a branch outcome from *where execution goes next* (a pending jump is
resolved at the next instruction of the same frame), loop trip counts from
``FOR_ITER`` and loop tests, callees and heap reads by re-evaluating the (side-effect
free) expression statically with :mod:`janus_profiler.values`, and argument,
return and local types from ``frame.f_locals``.  The static part -- which offset
means what -- comes from :mod:`janus_profiler.sites`.
"""
from __future__ import annotations

import logging
import os
import sys
import threading
import types
from typing import Any, Callable

from .data import ProfileData, SiteRecord, _code_of
from .engine import MISSING, BoundCode, FrameState, evaluate, internal_error
from .monitoring import NoToolFree
from .sites import build_codemap, nested_codes
from .values import METHOD, OK, callee_key, safe_getattr

log = logging.getLogger("janus.profiler")

__all__ = ["Profiler"]


class Profiler:
    """Profile chosen functions at the bytecode level.

    ``include``: optional predicate ``(code object) -> bool`` selecting further code
    objects to profile (e.g. every function defined in the user's files).  By default
    only the code objects passed to :meth:`call` / :meth:`add` are profiled, together
    with the functions, lambdas and comprehensions defined inside them.

    ``values=False``: record control flow, callees, argument and return types only — not
    the values read from the heap nor the types of locals, which only the report shows
    (Janus's driver profiles with ``values=False``; ``janus-profile`` with the default).

    One thread at a time is profiled: the thread that started it.  A call from another
    thread meanwhile runs unprofiled (profiles are an input to speculation, never needed
    for a correct result).  Profilers nest and chain with an existing trace function (a
    debugger, coverage): it keeps receiving its events, and it is restored when profiling
    stops, unless the profiled code installed another one (which then stays, as eagerly).
    """

    def __init__(self, include: Callable[[types.CodeType], bool] | None = None, *,
                 max_history: int = 1000, values: bool = True):
        self.include = include
        self.values = values
        self.max_history = max_history
        self._data = ProfileData()
        self._targets: set[types.CodeType] = set()
        # keyed by id(code): hash(code) is not cached on 3.11 and this lookup runs on every call;
        # _codes keeps every decided code object alive so its id cannot be reused
        self._bound: dict[int, BoundCode | None] = {}
        self._codes: list[types.CodeType] = []
        self._depth: dict[types.CodeType, int] = {}
        self._expect: tuple | None = None
        # the owner thread (the one holding _lock) alone touches the hooks, _depth and _expect
        self._lock = threading.Lock()
        self._owner: int | None = None
        self._installed = 0
        self._saved: Any = None
        self._tracer: Any = None
        self._backend: Any = None
        self._static_calls = True

    @property
    def data(self) -> ProfileData:
        """All records so far (merged over every profiled call)."""
        return self._data

    def reset(self) -> None:
        """Forget all records (keeps the set of profiled functions)."""
        self._data = ProfileData()
        self._bound.clear()
        self._codes.clear()

    # -- choosing code -------------------------------------------------------------------------
    def add(self, fn_or_code: Any) -> None:
        """Profile ``fn_or_code`` (and everything defined inside it) whenever it runs while active."""
        code = _code_of(fn_or_code)
        if code is None:
            log.debug("janus_profiler: %r has no Python code to profile", fn_or_code)
            return
        for c in nested_codes(code):
            if c not in self._targets:
                self._targets.add(c)
                if self._bound.get(id(c), MISSING) is None:
                    self._bound.pop(id(c), None)  # decided "not profiled" before: decide again

    def wants(self, code: types.CodeType) -> bool:
        """Is ``code`` profiled?  Targets always; otherwise functions the predicate selects.

        Module and class bodies (code without CO_OPTIMIZED) are never chosen by the
        predicate: they run once and are not what Janus converts.
        """
        if code in self._targets:
            return True
        if self.include is None or not code.co_flags & 0x1:
            return False
        try:
            return bool(self.include(code))
        except Exception:  # noqa: BLE001 - a bad predicate must not break the program
            log.warning("janus_profiler: include predicate failed on %s", code.co_qualname, exc_info=True)
            return False

    def _decide(self, code: types.CodeType, frame: types.FrameType | None = None) -> BoundCode | None:
        b = None
        if self.wants(code):
            module = frame.f_globals.get("__name__") if frame is not None else None
            try:
                b = BoundCode(build_codemap(code), self._data, module if isinstance(module, str) else None, self.values)
            except Exception:  # noqa: BLE001
                log.warning("janus_profiler: cannot profile %s", code.co_qualname, exc_info=True)
        self._bound[id(code)] = b
        self._codes.append(code)
        return b

    # -- running ----------------------------------------------------------------------------------
    def call(self, fn: Callable, /, *args: Any, **kwargs: Any) -> Any:
        """Run ``fn(*args, **kwargs)`` once under the profiler and return its result.

        Exceptions propagate unchanged; records are merged into :attr:`data`.  If this
        profiler is active on another thread, or its hooks cannot be installed, ``fn``
        simply runs unprofiled: profiling never changes what the call does.
        """
        # added first: on 3.12+ other threads DISABLE (for every thread) code the profiler
        # does not want, from the moment the hooks are in
        self.add(fn)
        try:
            entered = self._enter()
        except NoToolFree:  # every sys.monitoring tool id we may use is taken (3.12+)
            log.debug("janus_profiler: no sys.monitoring tool id free; running %r unprofiled", fn)
            entered = False
        if not entered:
            log.debug("janus_profiler: active on another thread; running %r unprofiled", fn)
            return fn(*args, **kwargs)
        try:
            return fn(*args, **kwargs)
        finally:
            self.stop()

    def __enter__(self) -> "Profiler":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def start(self) -> None:
        """Start profiling on the calling thread (nestable; pair with :meth:`stop`).

        Raises RuntimeError if the profiler is active on another thread (:meth:`call` runs
        the function unprofiled instead)."""
        if not self._enter():
            raise RuntimeError("a Profiler is active on another thread")

    def _enter(self) -> bool:
        """Take the profiler for this thread and install its hooks, or count one more nested
        start; False if another thread has it.  The lock makes taking it one atomic step."""
        me = threading.get_ident()
        if self._owner == me:  # only this thread ever sets _owner to its own id
            self._installed += 1
            return True
        if not self._lock.acquire(blocking=False):
            return False
        try:
            self._owner = me
            self._install()
        except BaseException:
            self._owner = None
            self._lock.release()
            raise
        self._installed = 1
        return True

    def _install(self) -> None:
        if hasattr(sys, "monitoring") and _use_monitoring():
            from .monitoring import MonitoringBackend
            backend = MonitoringBackend(self)
            backend.install()  # raises NoToolFree
            self._backend, self._static_calls = backend, False
        else:
            self._saved = prev = sys.gettrace()
            self._static_calls = True
            self._tracer = self._make_tracer(prev)
            sys.settrace(self._tracer)

    def stop(self) -> None:
        """Undo one :meth:`start` of this thread (a no-op on a thread that did not start it);
        the last one removes the hooks and puts back the trace function found at the start."""
        if self._owner != threading.get_ident() or not self._installed:
            return
        self._installed -= 1
        if self._installed:
            return
        try:
            self._uninstall()
        except Exception:  # noqa: BLE001 - stop() runs as the profiled call returns: never break it
            log.warning("janus_profiler: removing the hooks failed", exc_info=True)
        finally:
            self._depth.clear()
            self._expect = None
            self._owner = None
            self._lock.release()

    def _uninstall(self) -> None:
        backend, self._backend = self._backend, None
        if backend is not None:
            backend.uninstall()
            return
        tracer, saved = self._tracer, self._saved
        self._tracer = self._saved = None
        if sys.gettrace() is tracer:  # else the profiled code installed its own: it stays, as eagerly
            sys.settrace(saved)

    @property
    def active(self) -> bool:
        """Is the profiler active (on any thread)?"""
        return self._owner is not None

    # -- 3.11 global trace function ----------------------------------------------------------
    def _make_tracer(self, prev: Any) -> Callable:
        """The global trace function.  Its fast path (code not profiled) is one dict lookup:
        it runs on every Python call the program makes, TensorFlow's included."""
        get, decide = self._bound.get, self._decide
        prof = self

        def janus_trace(frame: types.FrameType, event: str, arg: Any) -> Any:
            try:
                b = get(id(frame.f_code), MISSING)
                if b is None:
                    if prof._expect is not None:
                        prof._resolve_expect(frame)
                    return None if prev is None else prev(frame, event, arg)
                return new_frame(frame, event, arg, b)
            except Exception:  # noqa: BLE001 - never break the observed program
                internal_error(frame.f_code)
                return None

        def new_frame(frame: types.FrameType, event: str, arg: Any, b: Any) -> Any:
            if prof._expect is not None:
                prof._resolve_expect(frame)
            if b is MISSING:
                b = decide(frame.f_code, frame)
                if b is None:
                    return None if prev is None else prev(frame, event, arg)
            ft = frame.f_trace
            if type(ft) is FrameState and ft.prof is prof:  # a generator/coroutine resuming
                if ft.chained is not None or prev is not None:
                    ft.chained = prev(frame, event, arg) if prev is not None else None
                ft.resume(frame)
                return ft
            fs = FrameState(prof, b)
            if prev is not None:
                fs.chained = prev(frame, event, arg)
            frame.f_trace_opcodes = True
            frame.f_trace_lines = fs.chained is not None
            fs.start(frame)
            return fs

        return janus_trace

    # -- callees ------------------------------------------------------------------------------------
    def _call_site(self, fs: FrameState, frame: types.FrameType, rec: SiteRecord, path: tuple | None) -> None:
        obj = MISSING
        if path is not None:
            try:
                if path[0] == "a":
                    st, v = safe_getattr(evaluate(path[1], frame.f_locals, frame.f_globals, frame.f_builtins),
                                         path[2])
                    if st is OK or st is METHOD:
                        obj = v
                else:
                    obj = evaluate(path, frame.f_locals, frame.f_globals, frame.f_builtins)
            except Exception:  # noqa: BLE001 - Unavailable or a refused lookup
                obj = MISSING
        if obj is MISSING:
            self._expect = (frame, rec)
            fs.expecting = True
            return
        self._record_callee(rec, obj)

    def _record_callee(self, rec: SiteRecord, obj: Any) -> None:
        rec.callees[callee_key(obj)] += 1
        rec.add_callee_object(obj)
        code = _code_of(obj) if isinstance(obj, (types.FunctionType, types.MethodType)) else None
        if code is not None and self._depth.get(code):
            rec.recursive += 1

    def _resolve_expect(self, frame: types.FrameType) -> None:
        ef, rec = self._expect
        if frame.f_back is ef:
            self._expect = None
            code = frame.f_code
            mod = frame.f_globals.get("__name__")
            rec.callees[f"{mod}.{code.co_qualname}" if isinstance(mod, str) else code.co_qualname] += 1
            if self._depth.get(code):
                rec.recursive += 1


def _use_monitoring() -> bool:
    """sys.monitoring is used on 3.12+; JANUS_PROFILER_SETTRACE=1 forces the settrace path on 3.12
    (for comparison).  3.13 re-implements settrace on top of sys.monitoring with different opcode
    event semantics, so there sys.monitoring is always used."""
    if sys.version_info >= (3, 13):
        return True
    return os.environ.get("JANUS_PROFILER_SETTRACE", "") != "1"
