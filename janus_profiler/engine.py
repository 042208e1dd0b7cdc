"""The profiler's engine: the events of one profiled frame -> records in a :class:`ProfileData`.

:class:`BoundCode` binds a code object's map (:mod:`janus_profiler.sites`: which offset
means what) to its records; :class:`FrameState` turns "the instruction at offset N is
about to run", calls, returns and exceptions into branch outcomes, loop trip counts,
callees, values read from the heap and types.  Both backends feed it
(:mod:`janus_profiler.profiler`'s ``sys.settrace`` on 3.11, :mod:`janus_profiler.monitoring`
on 3.12+); it never installs a hook itself.
"""
from __future__ import annotations

import dis
import logging
import time
import types
from collections import Counter
from typing import TYPE_CHECKING, Any, Callable

from .data import ProfileData
from .sites import CodeMap
from .values import METHOD, OK, TypeInfo, callee_key, safe_getattr, safe_subscript, summarize

if TYPE_CHECKING:
    from .profiler import Profiler

log = logging.getLogger("janus.profiler")

MISSING = object()
_perf = time.perf_counter
#: Opcode bytes of the instructions a function returns normally from (3.11: RETURN_VALUE).
_RETURN_OPS = frozenset(dis.opmap[n] for n in ("RETURN_VALUE", "RETURN_CONST") if n in dis.opmap)

_UNREADABLE = {
    "property": TypeInfo("<property, not evaluated>"),
    "dynamic": TypeInfo("<dynamic attribute, not evaluated>"),
    "missing": TypeInfo("<missing>"),
}


class Unavailable(Exception):
    """A path could not be evaluated without running user code."""


def evaluate(path: tuple, loc: dict, glb: dict, bi: dict) -> Any:
    """The value of a side-effect-free access path (:meth:`sites._Builder.path`): a local
    ("l"), global or builtin ("g"), constant ("c"), attribute ("a") or subscript; raises
    :class:`Unavailable` where reading it would run user code."""
    k = path[0]
    if k == "l":
        try:
            return loc[path[1]]
        except KeyError:
            raise Unavailable from None
    if k == "g":
        n = path[1]
        if n in glb:
            return glb[n]
        if n in bi:
            return bi[n]
        raise Unavailable
    if k == "c":
        return path[1]
    if k == "a":
        st, v = safe_getattr(evaluate(path[1], loc, glb, bi), path[2])
        if st is OK:
            return v
        raise Unavailable
    st, v = safe_subscript(evaluate(path[1], loc, glb, bi), evaluate(path[2], loc, glb, bi))
    if st is OK:
        return v
    raise Unavailable


# Actions that record values read from the heap and the types of locals: the report
# (janus-profile) shows them; a profiler made with values=False does not collect them.
_VALUE_ACTIONS = ("stmt", "global", "cell", "attr", "sub")


class BoundCode:
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

    def __init__(self, prof: "Profiler", b: BoundCode):
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
            internal_error(self.b.code)
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
        """Carry out one action of the instruction about to run (its kind is ``a[0]``)."""
        kind = a[0]
        if kind == "jump" or kind == "for":
            self.pending = a  # resolved where the frame goes next (op)
        else:
            _ACTIONS[kind](self, frame, a)

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


# -- the actions other than jumps: each records what the instruction about to run reads ---------
def _act_stmt(fs: FrameState, frame: types.FrameType, a: tuple) -> None:
    """A statement starts: the types of the locals it reads."""
    loc = frame.f_locals
    rl = a[1].locals
    for n in a[2]:
        if n in loc:
            c = rl.get(n)
            if c is None:
                c = rl[n] = Counter()
            c[summarize(loc[n])] += 1


def _act_call(fs: FrameState, frame: types.FrameType, a: tuple) -> None:
    """A call: its callee, found statically (3.11; sys.monitoring's CALL event gives it on 3.12+)."""
    if fs.prof._static_calls:
        fs.prof._call_site(fs, frame, a[1], a[2])


def _act_global(fs: FrameState, frame: types.FrameType, a: tuple) -> None:
    n = a[2]
    g = frame.f_globals
    if n in g:
        a[1].heap[summarize(g[n])] += 1
    elif n in frame.f_builtins:
        a[1].heap[summarize(frame.f_builtins[n])] += 1


def _act_cell(fs: FrameState, frame: types.FrameType, a: tuple) -> None:
    loc = frame.f_locals
    if a[2] in loc:
        a[1].heap[summarize(loc[a[2]])] += 1


def _act_attr(fs: FrameState, frame: types.FrameType, a: tuple) -> None:
    """An attribute read: its value, unless reading it would run user code (a property)."""
    try:
        obj = evaluate(a[2], frame.f_locals, frame.f_globals, frame.f_builtins)
    except Exception:  # noqa: BLE001 - Unavailable, or a lookup we refuse to make
        return
    st, v = safe_getattr(obj, a[3])
    if st is OK:
        a[1].heap[summarize(v)] += 1
    elif st is METHOD:
        a[1].heap[TypeInfo("method", value=callee_key(v), has_value=True)] += 1
    else:
        a[1].heap[_UNREADABLE[st]] += 1


def _act_sub(fs: FrameState, frame: types.FrameType, a: tuple) -> None:
    """A subscript read: its value, unless it is a tensor's indexing (a TF op, not a heap read)."""
    try:
        loc, glb, bi = frame.f_locals, frame.f_globals, frame.f_builtins
        cont = evaluate(a[2], loc, glb, bi)
        key = evaluate(a[3], loc, glb, bi)
    except Exception:  # noqa: BLE001 - Unavailable, or a lookup we refuse to make
        return
    st, v = safe_subscript(cont, key)
    if st is OK:
        a[1].heap[summarize(v)] += 1
    elif not (st == "dynamic" and summarize(cont).type in ("tf.Tensor", "tf.Variable", "np.ndarray")):
        a[1].heap[_UNREADABLE.get(st, _UNREADABLE["dynamic"])] += 1


def _act_entry(fs: FrameState, frame: types.FrameType, a: tuple) -> None:
    fs.loop_iter(a[1])  # the body of a `while True:` starts


def _act_break(fs: FrameState, frame: types.FrameType, a: tuple) -> None:
    st = fs.active.get(a[1])
    if st is not None:
        st[1] = True


_ACTIONS: dict[str, Callable[[FrameState, types.FrameType, tuple], None]] = {
    "stmt": _act_stmt, "call": _act_call, "global": _act_global, "cell": _act_cell, "attr": _act_attr,
    "sub": _act_sub, "entry": _act_entry, "break": _act_break,
}


reported: set = set()


def internal_error(code: types.CodeType) -> None:
    """Log a profiler bug once per code object; the frame continues untraced."""
    if code not in reported:
        reported.add(code)
        log.warning("janus_profiler: internal error while profiling %s; its records may be incomplete",
                    getattr(code, "co_qualname", code), exc_info=True)
