"""Catch every training step: the function whose frame creates a ``tf.GradientTape`` is
taken over from its next call, wherever it lives.

The namespace scan (``janus/takeover/importer.py``) misses steps defined as closures,
defined after ``enable()``, or called through a reference taken before it.  This module
finds them when they run: a watcher sees ``GradientTape.__init__`` start (or a running
frame of code that records a tape), and that code object is the step's.  Every function
object with that code then gets a trampoline as its ``__code__``: a small code object
that calls ``janus.function`` of a copy of the original function (or the Janus function
the scan already made of it).
References, bound methods and closures holding the function object all go through
Janus from their next call.  TensorFlow is not patched.

The watcher is ``sys.monitoring`` limited to ``GradientTape.__init__`` on Python 3.12+
(exact, and no cost anywhere else).  On 3.11, where the only exact watchers are per-call
hooks that slow every Python call of the program, the main thread looks at its own
stack every 10 ms (a thread asks it to) and takes over a function that records a tape
(the namespace scan's static test) when it finds one running
(``benchmarks/takeover_overhead.py`` measures both); no thread reads another's frames.
Either way the function object is read from the running frame, by the thread running it
(:func:`janus.takeover.detect.function_of`), not searched for on the heap: a function
object is taken over once, by the first sample (or tape) that finds it running outside
Janus, and no sample walks the heap.  :func:`stop` gives every function its own code back.
"""
from __future__ import annotations

import ctypes
import logging
import sys
import threading
import types
import warnings
import weakref
from dataclasses import dataclass
from typing import Any, Callable

import tensorflow as tf

from janus import config
from janus.convert.registry import is_converted_code
from janus.convert.support import marked_do_not_convert
from janus.driver.function import BoundJanusFunction, JanusFunction, wrapping
from janus.driver.api import function as janus_function
from janus.takeover import roster
from janus.takeover.detect import TAPE_NAME, function_of
from janus.takeover.importer import is_user_file
from janus_profiler.heap import functions_with

log = logging.getLogger("janus")

_TARGET = "__janus_target__"
_NOT_PLAIN = 0x20 | 0x80 | 0x100 | 0x200  # generator, coroutine, iterable coroutine, async generator
_JANUS_CALLS = frozenset({JanusFunction.__call__.__code__, BoundJanusFunction.__call__.__code__})


@dataclass
class _Swap:
    """A function object whose ``__code__`` was replaced, and how to undo it.  The function
    is held weakly: a step the user makes anew each epoch and drops is freed, its Janus
    function and graphs with it (nothing is left to undo for it; the next swap prunes it)."""

    fn_ref: "weakref.ref[types.FunctionType] | None"
    code: types.CodeType
    target: Any
    set_wrapped: bool
    rewrapped: Any = None  # the scan's Janus function, whose python_function became a copy

    @property
    def fn(self) -> types.FunctionType | None:
        return None if self.fn_ref is None else self.fn_ref()

    def watch(self, fn: types.FunctionType) -> "_Swap":
        """Refer to ``fn`` weakly, letting go of its Janus function when it dies."""
        def gone(_: Any, swap: "_Swap" = self) -> None:
            swap.target = swap.rewrapped = None
        self.fn_ref = weakref.ref(fn, gone)
        return self


_lock = threading.RLock()
lock = _lock   # hot.py swaps function codes under the same lock
_swaps: list[_Swap] = []
_templates: dict[int, types.CodeType] = {}
_copies: "weakref.WeakSet[types.FunctionType]" = weakref.WeakSet()  # the functions Janus runs: never redirected
_watch: dict[str, Any] = {"on": False, "tool": None, "sampler": None}


# -- the trampoline --------------------------------------------------------------------
def _template(n_free: int) -> types.CodeType:
    """Code of ``(*args, **kwargs) -> TARGET(*args, **kwargs)`` with ``n_free`` free
    variables (a function's new ``__code__`` must keep its number of closure cells)."""
    if n_free not in _templates:
        names = [f"_jn_free{i}" for i in range(n_free)]
        lines = ["def outer():"] + [f"    {name} = None" for name in names]
        # one line: a traceback shows the trampoline's frame at the user's ``def`` line (the
        # free variables, named after the return, are never run)
        lines += [f"    def trampoline(*args, **kwargs): return {_TARGET!r}(*args, **kwargs)"
                  + "".join(f"; {name}" for name in names), "    return trampoline"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)  # "'str' object is not callable": replaced below
            module = compile("\n".join(lines) + "\n", "<janus trampoline>", "exec")
        outer = next(c for c in module.co_consts if isinstance(c, types.CodeType))
        _templates[n_free] = next(c for c in outer.co_consts if isinstance(c, types.CodeType))
    return _templates[n_free]


def trampoline_code(original: types.CodeType, target: Callable) -> types.CodeType:
    """``original``'s stand-in: same name, file, line and number of free variables; calls ``target``."""
    template = _template(len(original.co_freevars))
    consts = tuple(target if type(c) is str and c == _TARGET else c for c in template.co_consts)
    return template.replace(co_consts=consts, co_name=original.co_name, co_qualname=original.co_qualname,
                            co_filename=original.co_filename, co_firstlineno=original.co_firstlineno)


def copy_of(fn: types.FunctionType) -> types.FunctionType:
    """A new function object with ``fn``'s code, globals, defaults, closure and attributes."""
    copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    copy.__qualname__, copy.__module__, copy.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
    copy.__dict__.update(vars(fn))
    return copy


def take_over_function(fn: types.FunctionType) -> None:
    """Route every later call of ``fn`` through Janus: through the Janus function that
    already wraps it (the namespace scan's), the one made of it before a ``disable()``, or
    a new one wrapping a copy of it.  A function marked ``janus.do_not_convert`` stays as it is
    (``janus.function`` would leave it plain: there is nothing to route it through)."""
    with _lock:
        if fn in _copies or marked_do_not_convert(fn):
            return
        existing = wrapping(fn)
        again = roster.earlier(fn) if existing is None else None  # taken over before a disable()
        if again is not None:
            target = again  # runs its copy of fn still: its graphs and counts go on
        else:
            copy = copy_of(fn)
            _copies.add(copy)
            target = existing if existing is not None else janus_function(copy)
        if existing is not None:
            existing.python_function = existing.__wrapped__ = copy
        roster.remember(fn, target)
        set_wrapped = "__wrapped__" not in vars(fn)
        _swaps[:] = [s for s in _swaps if s.fn is not None]
        _swaps.append(_Swap(None, fn.__code__, target, set_wrapped, existing).watch(fn))
        fn.__code__ = trampoline_code(fn.__code__, target)
        if set_wrapped:
            fn.__wrapped__ = target  # inspect.signature(fn) still shows the user's parameters
        if existing is None:
            roster.record(fn.__qualname__, target)


# -- the watcher -----------------------------------------------------------------------
def _candidate(code: types.CodeType) -> bool:
    """A user function's code that records a tape itself (the namespace scan's test)."""
    known = _candidates.get(code)
    if known is None:
        known = _candidates[code] = (
            TAPE_NAME in code.co_names and not code.co_flags & _NOT_PLAIN and code.co_name != "<module>"
            and not is_converted_code(code) and is_user_file(code.co_filename))
    return known


_candidates: dict[types.CodeType, bool] = {}


def running_step_frames(frame: Any) -> list[Any]:
    """The frames, of ``frame`` and its callers, running code that records a tape, except
    those running inside a Janus function (its eager run, or a trace)."""
    found = []
    known = _candidates.get
    while frame is not None:
        code = frame.f_code
        if code in _JANUS_CALLS:
            found.clear()
        elif known(code) or known(code) is None and _candidate(code):  # no call per frame: this walk runs every sample
            found.append(frame)
        frame = frame.f_back
    return found


def running_steps(frame: Any) -> list[types.CodeType]:
    """The codes of :func:`running_step_frames`."""
    return [f.f_code for f in running_step_frames(frame)]


def take_over_codes(codes: list[types.CodeType]) -> None:
    """Take over every function object whose code is one of ``codes`` (a heap walk each)."""
    for code in codes:
        with _lock:
            for fn in functions_with(code):
                take_over_function(fn)


# A code is walked for at most once, ever: where a frame's function cannot be read
# (``function_of`` is None: an unknown frame layout), the first frame found running the
# code has its code walked for, and later frames of it are left alone.
_WALKED = "walked"
_walked: dict[types.CodeType, str] = {}   # code -> _WALKED


def take_over_frames(frames: list[Any]) -> list[types.CodeType]:
    """Take over the function objects that ``frames`` (found running outside Janus) run.

    The function is read from each frame (no heap walk): a function whose code is no
    longer the frame's was taken over already (or changed by the user) and is left
    alone, so a function object is taken over once however many samples find its
    running call.  Returns the codes of the frames whose function could not be read and
    whose code was never walked for (the caller walks for them)."""
    walk = []
    for frame in frames:
        fn = function_of(frame)
        if fn is None:
            if frame.f_code not in _walked:
                walk.append(frame.f_code)
            continue
        with _lock:
            if fn.__code__ is frame.f_code and fn not in _copies and _watch["on"]:
                take_over_function(fn)
    return walk


def _on_start(code: types.CodeType, offset: int) -> None:
    """Python 3.12+: ``GradientTape.__init__`` started; take over the running steps of
    this thread."""
    _take_over_own_stack(sys._getframe(1).f_back)


# Python 3.11: the sampler thread reads no frame.  A frame of another thread (from
# ``sys._current_frames()``, its ``f_back``, the function in its interpreter frame) can be
# popped by its thread whenever the reader lets go of the GIL between two reads, and on
# 3.11 such cross-thread reads crash the process: the sampling profilers that do it
# (sentry-python #2386 and #6119, dd-trace-py #13567, on 3.11.5 to 3.11.12) segfault in
# ``PyFrame_GetBack``, and so did Janus's concurrency probe once in six runs (issue #39
# item 2: a null dereference in libpython3.11 in a thread other than the main one).  So the
# sampler only asks, every interval, for a pending call (``Py_AddPendingCall``): the main
# thread runs it between two of its bytecodes and reads its own stack, whose frames cannot
# return during the read.  The price: a step running only in another thread is not found
# on 3.11 (the namespace scan's steps are taken over wherever they run); it runs eagerly,
# as written.  Where a frame's function cannot be read, the main thread walks the heap for
# the code, once (a heap walk is never made from the sampler thread).
_PENDING_CALL = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
_pending: dict = {"scheduled": False, "closing": False, "parked": False}
_sampled = threading.Event()   # the last pending call has run: the sampler's next interval starts


def _run_pending(_: Any) -> int:
    """The pending call, in the main thread: take over the steps running on its own stack.

    No pending call may be queued until this one's ``make_pending_calls`` has returned: on
    3.11 a second one run by the same loop, in a thread with a trace or profile function,
    spins for ever on its first instruction (the eval breaker stays set while pending calls
    are busy, and the tracing path re-checks it at ``RESUME`` without moving on).  So the
    flag that lets the sampler queue the next call is cleared last, where no Python code
    runs after it (a Python trace function is taken off this frame first), unless a profile
    function or a C tracer will run at this frame's return (the GIL can pass to the sampler
    there); then the call stays "scheduled"
    and the sampler clears it after ``config.LIMITS.parked_seconds`` (the window left: a main thread held
    up that long between that return and the end of ``make_pending_calls``)."""
    try:
        with _lock:
            if _pending["closing"] or not _watch["on"]:
                return 0
        _take_over_own_stack(sys._getframe().f_back)
    except Exception:  # noqa: BLE001 - raising here would raise inside arbitrary user code
        log.exception("janus: taking over a running step failed")
    finally:
        hooked = _python_runs_at_return(sys._getframe())
        _pending["parked"] = hooked
        _sampled.set()
        if not hooked:
            _pending["scheduled"] = False   # last: a plain store, no call after it
    return 0


def _python_runs_at_return(frame: Any) -> bool:
    """Will Python code run at ``frame``'s return (a profile function, a C tracer's)?  A
    Python trace function would (the profiler's, on 3.11): it is taken off this frame, so
    that its remaining events go to no Python function."""
    if sys.getprofile() is not None:
        return True
    tracer = sys.gettrace()
    if tracer is None:
        return False
    if isinstance(tracer, (types.FunctionType, types.MethodType)):
        frame.f_trace = None   # sys.settrace's trampoline passes later events to f_trace only
        return False
    return True


def _take_over_own_stack(frame: Any) -> None:
    """Take over the steps running in ``frame`` and its callers (the calling thread's own
    frames); walk the heap, once per code, for those whose function cannot be read."""
    codes = take_over_frames(running_step_frames(frame))
    if codes:
        with _lock:
            _walked.update(dict.fromkeys(codes, _WALKED))
        take_over_codes(codes)


# ctypes: Py_AddPendingCall is the only way to run code in the main thread at its next
# bytecode boundary (3.11 has no sys.monitoring); the callback object lives as long as
# the module, and no call can be queued after the sampler is joined (``_close``).
_RUN_PENDING = _PENDING_CALL(_run_pending)
_add_pending_call = ctypes.pythonapi.Py_AddPendingCall
_add_pending_call.argtypes, _add_pending_call.restype = [_PENDING_CALL, ctypes.c_void_p], ctypes.c_int


def _ask_main_thread() -> bool:
    """Queue one pending call; False if none was queued (one is queued or running already:
    a main thread blocked in C code for a long time gets one call when it comes back, not
    one per interval; the queue is full; the interpreter is closing)."""
    with _lock:
        if _pending["closing"] or _pending["scheduled"]:
            return False
        _pending["scheduled"] = True
        _sampled.clear()
    if _add_pending_call(_RUN_PENDING, None) != 0:  # the queue is full: try again at the next interval
        with _lock:
            _pending["scheduled"] = False
        return False
    return True


class _Sampler(threading.Thread):
    """Python 3.11: every ``interval`` seconds (``JANUS_TAKEOVER_SAMPLE_MS``, default
    10 ms) have the main thread look at its own stack (:func:`_run_pending`).

    A per-call hook (``sys.setprofile``) would cost every Python call of the program
    (measured 1.8x on eager inference, 8x on plain Python calls); sampling costs a
    stack walk per interval.  A step is taken over once a sample finds it running: at
    its first call if it takes longer than the interval eagerly, a few calls later if
    it is shorter.  The thread itself touches no frame.  The interval runs from the end of
    the main thread's last look, so that the looks take at most a share of the main thread
    however slow a walk of its stack is (a profiled call's trace function slows it).
    """

    def __init__(self, interval: float):
        super().__init__(name="janus takeover", daemon=True)
        self.interval = interval
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(self.interval):
            if _ask_main_thread():
                while not _sampled.wait(0.1) and not self.stopped.is_set():
                    pass
                if _pending["parked"] and not self.stopped.wait(max(self.interval, config.LIMITS.parked_seconds)):
                    with _lock:
                        _pending["parked"] = _pending["scheduled"] = False


def _close() -> None:
    """At interpreter exit, before the last pending calls are run: stop and join the
    sampler, so that no pending call is queued once finalization has begun."""
    with _lock:
        _pending["closing"] = True
        sampler = _watch["sampler"]
    if sampler is not None:
        sampler.stopped.set()
        sampler.join()


_close_registered = False


def start() -> bool:
    """Watch for steps recording tapes; False if the watcher cannot be installed."""
    global _close_registered
    with _lock:
        if _watch["on"]:
            return True
        if hasattr(sys, "monitoring"):
            mon = sys.monitoring
            tool = next((i for i in range(6) if mon.get_tool(i) is None), None)
            if tool is None:
                log.warning("janus: no free sys.monitoring tool id: steps the namespace scan misses are not taken over")
                return False
            mon.use_tool_id(tool, "janus takeover")
            mon.register_callback(tool, mon.events.PY_START, _on_start)
            mon.set_local_events(tool, tf.GradientTape.__init__.__code__, mon.events.PY_START)
            _watch["tool"] = tool
        else:
            if not _close_registered:
                # threading's private exit hook (as concurrent.futures uses): it runs in
                # threading._shutdown, before Py_FinalizeEx runs the pending calls left
                # and long before modules (and _RUN_PENDING) are torn down; atexit runs too late.
                threading._register_atexit(_close)
                _close_registered = True
            if _sampled.is_set() and threading.current_thread() is threading.main_thread():
                # the last pending call has run, and this (main) thread runs Python: the loop
                # that ran it has returned; a call left parked by a stopped sampler is over
                _pending["scheduled"] = _pending["parked"] = False
            sampler = _Sampler(config.takeover_sample_seconds())
            sampler.start()
            _watch["sampler"] = sampler
        _watch["on"] = True
        return True


def stop() -> None:
    """Stop watching, and give every function its own code back."""
    with _lock:
        tool, sampler = _watch["tool"], _watch["sampler"]
        if tool is not None:
            mon = sys.monitoring
            mon.set_local_events(tool, tf.GradientTape.__init__.__code__, 0)
            mon.register_callback(tool, mon.events.PY_START, None)
            mon.free_tool_id(tool)
        if sampler is not None:
            sampler.stopped.set()
        _watch.update(on=False, tool=None, sampler=None)
        targets = set()
        for swap in reversed(_swaps):
            targets.add(id(swap.target))
            fn = swap.fn
            if fn is None:
                continue
            fn.__code__ = swap.code
            if swap.set_wrapped:
                vars(fn).pop("__wrapped__", None)
            if swap.rewrapped is not None:
                swap.rewrapped.python_function = swap.rewrapped.__wrapped__ = fn
        _swaps.clear()
        _walked.clear()
        roster.untake(lambda jf: id(jf) in targets)
    if sampler is not None:
        sampler.join()


def redirected() -> list[types.FunctionType]:
    """The function objects whose code currently calls Janus."""
    with _lock:
        return [fn for fn in (s.fn for s in _swaps) if fn is not None]
