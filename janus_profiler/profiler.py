"""The runtime engine: CPython hooks -> records in a :class:`ProfileData`.

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

import dis
import logging
import os
import sys
import threading
import time
import types
from collections import Counter
from typing import Any, Callable

from .data import ProfileData, SiteRecord, _code_of
from .monitoring import NoToolFree
from .sites import CodeMap, build_codemap, nested_codes
from .values import METHOD, OK, TypeInfo, callee_key, safe_getattr, safe_subscript, summarize

log = logging.getLogger("janus.profiler")

__all__ = ["Profiler"]

_MISSING = object()
_perf = time.perf_counter
#: Opcode bytes of the instructions a function returns normally from (3.11: RETURN_VALUE).
_RETURN_OPS = frozenset(dis.opmap[n] for n in ("RETURN_VALUE", "RETURN_CONST") if n in dis.opmap)

_UNREADABLE = {
    "property": TypeInfo("<property, not evaluated>"),
    "dynamic": TypeInfo("<dynamic attribute, not evaluated>"),
    "missing": TypeInfo("<missing>"),
}


class _Unavailable(Exception):
    """A path could not be evaluated without running user code."""


def _eval(path: tuple, loc: dict, glb: dict, bi: dict) -> Any:
    k = path[0]
    if k == "l":
        try:
            return loc[path[1]]
        except KeyError:
            raise _Unavailable from None
    if k == "g":
        n = path[1]
        if n in glb:
            return glb[n]
        if n in bi:
            return bi[n]
        raise _Unavailable
    if k == "c":
        return path[1]
    if k == "a":
        st, v = safe_getattr(_eval(path[1], loc, glb, bi), path[2])
        if st is OK:
            return v
        raise _Unavailable
    st, v = safe_subscript(_eval(path[1], loc, glb, bi), _eval(path[2], loc, glb, bi))
    if st is OK:
        return v
    raise _Unavailable


# Actions that record values read from the heap and the types of locals: the report
# (janus-profile) shows them; a profiler made with values=False does not collect them.
_VALUE_ACTIONS = ("stmt", "global", "cell", "attr", "sub")


class _Bound:
    """A :class:`CodeMap` bound to the records of one :class:`ProfileData`."""

    __slots__ = ("cm", "code", "frec", "actions", "regions", "loops", "params")

    def __init__(self, cm: CodeMap, data: ProfileData, module: str | None, values: bool = True):
        self.cm, self.code = cm, cm.code
        self.frec = data.function_record(cm.code, module)
        self.frec.is_generator = bool(cm.code.co_flags & 0x220)
        self.frec.is_coroutine = bool(cm.code.co_flags & 0x80)
        recs = [data.site_record(s, self.frec.key) for s in cm.sites]
        self.loops = [recs[i] for i in cm.loops]
        self.regions = cm.regions
        self.params = cm.params
        acts: dict[int, tuple] = {}
        for off, alist in cm.actions.items():
            out = []
            for a in alist:
                kind = a[0]
                if not values and kind in _VALUE_ACTIONS:
                    continue
                if kind == "jump":
                    conv = [tuple(("b", recs[r[1]], r[2]) if r[0] == "b" else r for r in side) for side in a[2:]]
                    out.append(("jump", a[1], conv[0], conv[1]))
                elif kind in ("for", "entry", "break"):
                    out.append(a)
                else:
                    out.append((kind, recs[a[1]]) + a[2:])
            if out:
                acts[off] = tuple(out)
        self.actions = acts


class FrameState:
    """Per-frame engine state; on 3.11 it is also the frame's local trace function."""

    __slots__ = ("prof", "b", "pending", "active", "t0", "exc", "caught_exc", "chained", "expecting")

    def __init__(self, prof: "Profiler", b: _Bound):
        self.prof, self.b = prof, b
        self.pending: tuple | None = None
        self.active: dict[int, list] = {}
        self.t0 = 0.0
        self.exc: BaseException | None = None
        self.caught_exc: BaseException | None = None
        self.chained: Any = None
        self.expecting = False

    # -- sys.settrace protocol (3.11) -------------------------------------------------------
    def __call__(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        try:
            if event == "opcode" and self.chained is None:  # the hot path
                self.op(frame, frame.f_lasti)
                return self
            return self._event(frame, event, arg)
        except Exception:  # noqa: BLE001 - never break the observed program: stop tracing this frame
            _internal_error(self.b.code)
            return self.chained

    def _event(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        ch = self.chained
        if event == "opcode":
            if ch is not None and type(ch) is FrameState:
                self.chained = ch(frame, event, arg)
            self.op(frame, frame.f_lasti)
        elif event == "line":
            if ch is not None:
                self.chained = ch(frame, event, arg)
        else:
            if ch is not None:
                self.chained = ch(frame, event, arg)
            if event == "return":
                self.ret(frame, arg)
            elif event == "exception":
                self.exception(arg[1])
        return self

    # -- engine events ------------------------------------------------------------------------
    def start(self, frame: types.FrameType) -> None:
        b, prof = self.b, self.prof
        frec = b.frec
        frec.calls += 1
        if b.params:
            loc = frame.f_locals
            frec.add_args({n: summarize(loc[n]) for n in b.params if n in loc}, prof.max_history)
        self.resume(frame)

    def resume(self, frame: types.FrameType) -> None:
        depth = self.prof._depth
        depth[self.b.code] = depth.get(self.b.code, 0) + 1
        self.t0 = _perf()

    def ret(self, frame: types.FrameType, value: Any, how: str | None = None) -> None:
        """The frame returns, yields (``how="yield"``) or raises (``how="raise"``).

        ``how=None`` (sys.settrace): decided from the instruction the frame stopped at.
        """
        b = self.b
        frec = b.frec
        code = b.code
        depth = self.prof._depth
        d = depth.get(code, 1) - 1
        if d <= 0:
            depth.pop(code, None)
            frec.total_time += _perf() - self.t0
        else:
            depth[code] = d
        self.pending = None
        lasti = frame.f_lasti
        if how is None:
            how = "yield" if lasti in b.cm.yield_offsets else \
                "return" if lasti >= 0 and code.co_code[lasti] in _RETURN_OPS else "raise"
        if how == "yield":
            frec.yields += 1
            return
        for li in list(self.active):
            self.loop_end(li)
        if how == "raise":
            exc = self.exc
            name = type(exc).__name__ if exc is not None else "<unknown>"
            frec.raised[name] += 1
            if exc is not None and exc is self.caught_exc:
                frec.caught[name] -= 1
                if frec.caught[name] <= 0:
                    del frec.caught[name]
        else:
            frec.returns[summarize(value)] += 1
        self.exc = self.caught_exc = None

    def exception(self, exc: BaseException | None) -> None:
        self.pending = None
        self.exc = exc

    def op(self, frame: types.FrameType, off: int) -> None:
        pend = self.pending
        if pend is not None:
            self.pending = None
            jumped = off != pend[1]
            if pend[0] == "for":
                if jumped:
                    self.loop_end(pend[2])
                else:
                    self.loop_iter(pend[2])
            else:
                for r in (pend[2] if jumped else pend[3]):
                    k = r[0]
                    if k == "b":
                        r[1].branches[r[2]] += 1
                    elif k == "i":
                        self.loop_iter(r[1])
                    else:
                        self.loop_end(r[1])
        if self.exc is not None:
            exc, self.exc = self.exc, None
            self.b.frec.caught[type(exc).__name__] += 1
            self.caught_exc = exc
        if self.expecting:
            self.expecting = False
            self.prof._expect = None
        active = self.active
        if active:
            reg = self.b.regions.get(off)
            if reg is not None and not (active.keys() <= reg):
                for li in [x for x in active if x not in reg]:
                    self.loop_end(li)
        acts = self.b.actions.get(off)
        if acts is not None:
            for a in acts:
                self.act(frame, a)

    def act(self, frame: types.FrameType, a: tuple) -> None:
        kind = a[0]
        if kind == "jump" or kind == "for":
            self.pending = a
        elif kind == "stmt":
            loc = frame.f_locals
            rl = a[1].locals
            for n in a[2]:
                if n in loc:
                    c = rl.get(n)
                    if c is None:
                        c = rl[n] = Counter()
                    c[summarize(loc[n])] += 1
        elif kind == "call":
            if self.prof._static_calls:
                self.prof._call_site(self, frame, a[1], a[2])
        elif kind == "global":
            n = a[2]
            g = frame.f_globals
            if n in g:
                a[1].heap[summarize(g[n])] += 1
            elif n in frame.f_builtins:
                a[1].heap[summarize(frame.f_builtins[n])] += 1
        elif kind == "cell":
            loc = frame.f_locals
            if a[2] in loc:
                a[1].heap[summarize(loc[a[2]])] += 1
        elif kind == "attr":
            try:
                obj = _eval(a[2], frame.f_locals, frame.f_globals, frame.f_builtins)
            except _Unavailable:
                return
            except Exception:  # noqa: BLE001
                return
            st, v = safe_getattr(obj, a[3])
            if st is OK:
                a[1].heap[summarize(v)] += 1
            elif st is METHOD:
                a[1].heap[TypeInfo("method", value=callee_key(v), has_value=True)] += 1
            else:
                a[1].heap[_UNREADABLE[st]] += 1
        elif kind == "sub":
            try:
                loc, glb, bi = frame.f_locals, frame.f_globals, frame.f_builtins
                cont = _eval(a[2], loc, glb, bi)
                key = _eval(a[3], loc, glb, bi)
            except Exception:  # noqa: BLE001 - _Unavailable or a lookup we refuse to make
                return
            st, v = safe_subscript(cont, key)
            if st is OK:
                a[1].heap[summarize(v)] += 1
            elif st == "dynamic" and summarize(cont).type in ("tf.Tensor", "tf.Variable", "np.ndarray"):
                return  # tensor indexing is a TF op, not a heap read
            else:
                a[1].heap[_UNREADABLE.get(st, _UNREADABLE["dynamic"])] += 1
        elif kind == "entry":
            self.loop_iter(a[1])
        elif kind == "break":
            st = self.active.get(a[1])
            if st is not None:
                st[1] = True

    # -- loops -------------------------------------------------------------------------------
    def loop_iter(self, li: int) -> None:
        st = self.active.get(li)
        if st is None:
            self.active[li] = [1, False]
        else:
            st[0] += 1

    def loop_end(self, li: int) -> None:
        st = self.active.pop(li, None)
        rec = self.b.loops[li]
        if st is None:
            rec.trips[0] += 1
        else:
            rec.trips[st[0]] += 1
            if st[1]:
                rec.breaks += 1

    # -- callees given by the hook itself (sys.monitoring CALL events) ------------------------
    def call_object(self, off: int, obj: Any) -> None:
        acts = self.b.actions.get(off)
        if acts is not None:
            for a in acts:
                if a[0] == "call":
                    self.prof._record_callee(a[1], obj)


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
        self._bound: dict[int, _Bound | None] = {}
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
                if self._bound.get(id(c), _MISSING) is None:
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

    def _decide(self, code: types.CodeType, frame: types.FrameType | None = None) -> _Bound | None:
        b = None
        if self.wants(code):
            module = frame.f_globals.get("__name__") if frame is not None else None
            try:
                b = _Bound(build_codemap(code), self._data, module if isinstance(module, str) else None, self.values)
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
            backend = MonitoringBackend(self, FrameState, _MISSING, _internal_error)
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
                b = get(id(frame.f_code), _MISSING)
                if b is None:
                    if prof._expect is not None:
                        prof._resolve_expect(frame)
                    return None if prev is None else prev(frame, event, arg)
                return new_frame(frame, event, arg, b)
            except Exception:  # noqa: BLE001 - never break the observed program
                _internal_error(frame.f_code)
                return None

        def new_frame(frame: types.FrameType, event: str, arg: Any, b: Any) -> Any:
            if prof._expect is not None:
                prof._resolve_expect(frame)
            if b is _MISSING:
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
        obj = _MISSING
        if path is not None:
            try:
                if path[0] == "a":
                    st, v = safe_getattr(_eval(path[1], frame.f_locals, frame.f_globals, frame.f_builtins),
                                         path[2])
                    if st is OK or st is METHOD:
                        obj = v
                else:
                    obj = _eval(path, frame.f_locals, frame.f_globals, frame.f_builtins)
            except Exception:  # noqa: BLE001 - _Unavailable or a refused lookup
                obj = _MISSING
        if obj is _MISSING:
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


_reported: set = set()


def _internal_error(code: types.CodeType) -> None:
    """Log a profiler bug once per code object; the frame continues untraced."""
    if code not in _reported:
        _reported.add(code)
        log.warning("janus_profiler: internal error while profiling %s; its records may be incomplete",
                    getattr(code, "co_qualname", code), exc_info=True)


def _use_monitoring() -> bool:
    """sys.monitoring is used on 3.12+; JANUS_PROFILER_SETTRACE=1 forces the settrace path on 3.12
    (for comparison).  3.13 re-implements settrace on top of sys.monitoring with different opcode
    event semantics, so there sys.monitoring is always used."""
    if sys.version_info >= (3, 13):
        return True
    return os.environ.get("JANUS_PROFILER_SETTRACE", "") != "1"
