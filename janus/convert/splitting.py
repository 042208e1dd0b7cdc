"""Graph breaks: a function split into graph segments around what runs in Python.

A *break* is a line of the function whose statement cannot run in a graph (a trace
failed there, or it holds a construct the converter refuses).  :func:`split` keeps the
function's structure in Python wherever a break is — the breaking statement itself, and
every ``if``/``for``/``while``/``with``/``try`` around one, whose bodies are split in
turn — and gathers each run of the other statements into a *segment*: a function of
the variables it reads (its inputs) returning those it binds that are read later (its
outputs).  The driver, generated here as Python, calls the segments (each a Janus
function of its own: traced, guarded, committed, falling back alone) and runs the rest
as written.

Everything is generated in one factory ``def`` whose parameters are the function's free
variables (the driver side builds the functions with the user's own closure cells), the
segments' callables (``_jn_segs``) and Janus's runtime namespace (``_jn_rt``, for
``UNDEF``).  User statements keep their file positions: tracebacks, the profiler's sites
and ``janus.explain`` point at the user's lines.

Locals possibly unbound at a segment are passed as ``UNDEF``: the segment's eager
version deletes them first (reading one raises eager's ``UnboundLocalError``), and one
still unbound after the segment is deleted again in the driver.  The converter reads a
segment through the version without those deletions (any use of ``UNDEF`` fails its
trace, so that call runs eagerly).  What the statements read, bind and exit is
:mod:`janus.convert.analysis.breaks`; the pieces of generated code are
:mod:`janus.convert.segment_code`.  Nothing here needs TensorFlow.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Iterable

import gast

from janus.convert import analysis
from janus.convert import segment_code as code
from janus.convert import templates as T
from janus.convert.analysis import breaks as facts
from janus.errors import ConversionError
from janus.reporting.codes import Code

SEGMENTS = "_jn_segs"
RUNTIME = code.RUNTIME
FACTORY = "_jn_split"
RESULT = "_jn_r"

_COMPOUND = (gast.If, gast.For, gast.While, gast.With, gast.Try)
# A statement with none of these computes nothing a graph would speed up: it stays Python.
_WORK = (gast.Call, gast.BinOp, gast.UnaryOp, gast.Subscript, gast.Compare, gast.AugAssign)


@dataclass(frozen=True)
class BreakSite:
    """A line of the function that runs in Python, and why."""

    line: int
    reason: str


@dataclass(frozen=True)
class Segment:
    """One graph segment: the user's lines it covers, what it takes and gives back."""

    index: int
    lines: tuple[int, int]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    eager_name: str
    convert_def: gast.FunctionDef = field(compare=False, repr=False)
    # what the eager version adds around the user's statements (``body``, with the
    # function's global/nonlocal declarations): a segment split again at a break of its
    # own keeps it in its driver (:func:`split` with ``segment``)
    body: tuple[gast.stmt, ...] = field(default=(), compare=False, repr=False)
    mode: str = "plain"  # "plain", "last" (its last statement returns), "flagged"
    catch: bool = False  # returns what it raised, with the outputs it bound
    undef: tuple[str, ...] = ()  # inputs that may arrive as UNDEF (unbound)


@dataclass
class SplitPlan:
    """The factory module and what it defines: the driver, each segment's eager version."""

    module: gast.Module
    driver_name: str
    segments: list[Segment]
    python_lines: list[int]  # first lines of the statements the driver runs as written


def split(node: gast.FunctionDef, breaks: Iterable[int], freevars: tuple[str, ...], qualname: str,
          segment: Segment | None = None, inline: frozenset[int] = frozenset()) -> SplitPlan:
    """The plan running ``node`` (a user ``def``, positions the file's) as Python around
    the lines ``breaks`` and segments elsewhere.  ``ConversionError`` if it cannot be split.

    ``segment``: ``node`` is that segment's ``convert_def``, split at a break of its own.
    Its driver then runs as the segment's eager version does: inputs that arrive as
    ``UNDEF`` deleted first (and outputs left unbound given back as ``UNDEF``), ``return``
    flagged, and, for a segment that catches, what it raises returned with the outputs it
    bound — the driver around it reads them (the converter's version has none of that).

    ``inline``: the segments (by index) whose statements the driver runs as written, where
    it would call them (their trial found eager faster, or they gave up).  The plan is
    otherwise the same: every segment keeps its index, inputs and outputs."""
    breaks = sorted(breaks)
    if segment is not None:
        node = copy.copy(node)
        node.body = copy.deepcopy(list(segment.body))
    reason = facts.unsplittable_reason(node, qualname)
    if reason is None and not any(s.lineno <= line <= s.end_lineno for line in breaks for s in node.body):
        reason = "the break is at no statement of its body"
    if reason is not None:
        raise ConversionError(f"cannot split at a graph break: {reason}", code=Code.UNSPLITTABLE)
    return _Splitter(node, breaks, freevars, segment, inline).plan()


class _Splitter:
    def __init__(self, node: gast.FunctionDef, breaks: list[int], freevars: tuple[str, ...],
                 segment: Segment | None = None, inline: frozenset[int] = frozenset()):
        self.node = node
        self.inline = inline
        self.segment = segment
        self.breaks = breaks
        self.freevars = freevars
        self.local = analysis.local_names(node)
        self.declared = analysis.declared(node)
        self.segments: list[Segment] = []
        self.defs: list[gast.FunctionDef] = []
        self.python_lines: list[int] = []
        params = set(analysis.params(node.args))
        self.definite, self.maybe = params - set(segment.undef if segment else ()), set(params)
        # depth of the with and try statements run in Python around the block (a segment
        # that catches is one: what its driver raises goes back to the driver around it)
        self.catching = int(bool(segment and segment.catch))

    def plan(self) -> SplitPlan:
        body = [s for s in self.node.body if not isinstance(s, (gast.Global, gast.Nonlocal))]
        driver = copy.copy(self.node)
        if self.segment is None:
            driver.body = self._decls(self.node.body) + (self._block(body, [], False) or [gast.Pass()])
        else:  # the tail returns the segment's outputs: they are read after the body
            seg = self.segment
            tail = [code.at_user(gast.Return(value=T.tuple_of(list(seg.outputs))), self.node)]
            driver.body = self._decls(self.node.body) + code.as_eager(
                self._block(body, tail, False) or [gast.Pass()], list(seg.outputs), seg.mode, seg.catch,
                list(seg.undef), self.node)
        driver.decorator_list = []
        driver.returns = None
        driver.args = code.plain_signature(self.node.args)
        params = tuple(v for v in self.freevars if v not in (SEGMENTS, RUNTIME)) + (SEGMENTS, RUNTIME)
        factory = T.func_def(FACTORY, list(params), [driver] + self.defs + [
            gast.Return(value=gast.Tuple(elts=[T.name(driver.name)] + [T.name(s.eager_name) for s in self.segments],
                                         ctx=gast.Load()))])
        T.located(factory, self.node)
        return SplitPlan(gast.Module(body=[factory], type_ignores=[]), driver.name, self.segments,
                         sorted(set(self.python_lines)))

    # -- which statements run in Python ----------------------------------------------
    def _breaks_in(self, s: gast.stmt) -> bool:
        return any(s.lineno <= line <= s.end_lineno for line in self.breaks)

    def _python(self, s: gast.stmt, in_loop: bool) -> bool:
        return self._breaks_in(s) or in_loop and facts.exits_loop(s) or \
            self.catching > 0 and self._returns_before_rebinding(s)

    def _returns_before_rebinding(self, s: gast.stmt) -> bool:
        """``s`` may ``return`` from inside a ``try`` whose ``finally`` block then binds a local
        (or from an ``except ... as name`` handler, which then unbinds ``name``).  Inside a
        ``with`` or ``try`` run in Python, a segment that returns gives the driver its outputs
        (a ``finally`` around may read them), built at its ``return``: those would miss what
        such a block binds after it.  Run as written, the ``try`` is split in turn and that
        block runs after the return in the driver, as in eager."""
        for t in analysis.scope_nodes([s]):
            if not isinstance(t, gast.Try):
                continue
            guarded = t.body + t.orelse + [c for h in t.handlers for c in h.body]
            if t.finalbody and analysis.assigned(t.finalbody) & self.local and facts.holds_return(guarded):
                return True
            if any(h.name is not None and facts.holds_return(h.body) for h in t.handlers):
                return True
        return False

    # -- the driver's statements -----------------------------------------------------
    # ``cont``: the statements that may run after the block (what reads a segment's outputs)
    def _block(self, stmts: list[gast.stmt], cont: list[gast.stmt], in_loop: bool) -> list[gast.stmt]:
        python = self._python_indices(stmts, cont, in_loop)
        out: list[gast.stmt] = []
        group: list[gast.stmt] = []
        for i, s in enumerate(stmts):
            if i in python:
                out += self._flush(group, stmts[i:] + cont)
                group = []
                out.append(self._as_python(s, stmts[i + 1:] + cont, in_loop))
            else:
                group.append(s)
        return out + self._flush(group, cont)

    def _python_indices(self, stmts: list[gast.stmt], cont: list[gast.stmt], in_loop: bool) -> set[int]:
        """The statements of a block that run in Python: those holding a break or a loop
        exit, and a ``with`` whose ``as`` target a segment would give back — the object the
        graph returns is the one made while tracing (a ``tf.GradientTape`` that recorded the
        trace, not this call): such a ``with`` runs in Python, its body as segments (a tape
        then records the segments run inside it).  A statement holding such a ``with``
        (nested in an ``if``) runs in Python so that it is split in turn (and, inside a
        ``with`` or ``try`` run in Python, a ``try`` a ``return`` leaves through a block that
        binds: ``_returns_before_rebinding``)."""
        python = {i for i, s in enumerate(stmts) if self._python(s, in_loop)}
        while True:
            escaping = set()
            start = 0
            for end in sorted(python) + [len(stmts)]:
                group = range(start, end)
                start = end + 1
                if not group:
                    continue
                outputs = analysis.assigned([stmts[i] for i in group]) & self._read_later(stmts[group.stop:] + cont)
                escaping |= {i for i in group if facts.with_targets(stmts[i]) & outputs}
            if not escaping:
                return python
            python |= escaping

    def _read_later(self, cont: list[gast.stmt]) -> set[str]:
        """Names the statements ``cont`` that run after a segment may read of what it binds.

        Inside a ``with`` or ``try`` run in Python, a statement of ``cont`` that would bind
        a name may raise before it does, and the handler, the ``finally`` or the code after
        a suppressing ``with`` (all in ``cont``) then reads the segment's value: any read in
        ``cont`` counts.  Elsewhere, one after a statement that surely binds the name does not."""
        return facts.loads(cont) if self.catching else facts.read_first(cont)

    def _as_python(self, s: gast.stmt, cont: list[gast.stmt], in_loop: bool) -> gast.stmt:
        """``s`` run as written; a compound statement's bodies are split in turn."""
        self.python_lines.append(s.lineno)
        if not isinstance(s, _COMPOUND):
            self._bind([s])
            return s
        s = copy.copy(s)
        before_definite, before_maybe = set(self.definite), set(self.maybe)
        if isinstance(s, (gast.For, gast.While)):
            self.maybe |= analysis.assigned([s])  # bound by an earlier iteration
            if isinstance(s, gast.For):
                self.definite |= analysis.assigned([s.target])
            s.body = self._block(s.body, [s] + cont, True) or [gast.Pass()]
            self.definite = set(before_definite)
            s.orelse = self._block(s.orelse, cont, in_loop)
            self.definite = before_definite
        elif isinstance(s, gast.If):
            s.body = self._block(s.body, cont, in_loop) or [gast.Pass()]
            after_body = self.definite
            self.definite = set(before_definite)
            s.orelse = self._block(s.orelse, cont, in_loop)
            self.definite = after_body & self.definite
        elif isinstance(s, gast.With):
            self.definite |= analysis.assigned([i.optional_vars for i in s.items if i.optional_vars is not None])
            self.maybe |= self.definite
            self.catching += 1  # its __exit__ may suppress what a segment raises
            s.body = self._block(s.body, cont, in_loop) or [gast.Pass()]
            self.catching -= 1
        else:  # try: any statement of a block may raise, only the finally block surely runs
            self.maybe |= analysis.assigned([s])
            self.catching += 1
            s.body = self._block(s.body, [s] + cont, in_loop) or [gast.Pass()]
            handlers = []
            for h in s.handlers:
                self.definite = set(before_definite) | ({h.name.id} if h.name is not None else set())
                h = copy.copy(h)
                h.body = self._block(h.body, [s] + cont, in_loop) or [gast.Pass()]
                handlers.append(h)
            s.handlers = handlers
            self.definite = set(before_definite)
            s.orelse = self._block(s.orelse, [s] + cont, in_loop)
            self.catching -= 1
            self.definite = set(before_definite)
            s.finalbody = self._block(s.finalbody, cont, in_loop)
        self.maybe |= before_maybe | analysis.assigned([s])
        return s

    def _bind(self, stmts: list[gast.stmt]) -> None:
        """The driver ran ``stmts`` as written."""
        names = analysis.assigned(stmts) & self.local
        self.maybe |= names
        self.definite |= names & facts.surely_bound(stmts)

    def _flush(self, group: list[gast.stmt], cont: list[gast.stmt]) -> list[gast.stmt]:
        """A segment of ``group`` and the driver's call of it (Python if it computes nothing)."""
        if not group:
            return []
        if not any(isinstance(n, _WORK) for s in group for n in gast.walk(s)):
            self.python_lines.extend(s.lineno for s in group)
            self._bind(group)
            return group
        written = analysis.assigned(group) & self.local
        surely = facts.surely_bound(group)
        outputs = sorted(written & self._read_later(cont))
        # inside a with or try run in Python, an exception the segment raises may be caught
        # or suppressed there: the driver then needs what the segment assigned before it raised
        catch = self.catching > 0
        # an output the segment may leave unassigned passes through from before it (or as UNDEF)
        through = {n for n in outputs if n not in surely}
        inputs = sorted((facts.read_first(group) & self.local & self.maybe) | through)
        maybe_undef = [n for n in inputs if n not in self.definite]
        undef_after = [n for n in outputs if n in maybe_undef and n not in surely]
        returns = facts.return_kind(group)
        mode = "flagged" if returns == "some" or catch else returns or "plain"
        index = len(self.segments)
        convert_def, eager_def = self._defs(f"{self.node.name}__segment{index}", group, inputs, outputs,
                                            mode, catch, maybe_undef)
        self.defs.append(eager_def)
        self.segments.append(Segment(index, (group[0].lineno, group[-1].end_lineno), tuple(inputs), tuple(outputs),
                                     eager_def.name, convert_def,
                                     tuple(copy.deepcopy(self._decls(self.node.body, used_in=group) + group)),
                                     mode, catch, tuple(maybe_undef)))
        call = self._call(index, inputs, group[0])
        self.maybe |= set(outputs)  # the driver binds the outputs only
        self.definite |= set(outputs) - set(undef_after)
        if index in self.inline:  # as written: it binds what the call would (and reads the same)
            self.python_lines.extend(s.lineno for s in group)
            return copy.deepcopy(group)
        return self._unpack(call, outputs, mode, returns is not None, catch, undef_after, group[0])

    # -- generated code --------------------------------------------------------------
    def _call(self, index: int, inputs: list[str], at: gast.stmt) -> tuple:
        """Statements reading possibly-unbound inputs, and the call expression."""
        pre: list[gast.stmt] = []
        args = []
        for n in inputs:
            if n in self.definite:
                args.append(T.name(n))
            elif n in self.maybe:
                tmp = f"_jn_in_{n}"
                pre += T.stmts(f"try:\n    {tmp} = {n}\nexcept NameError:\n    {tmp} = {RUNTIME}.UNDEF")
                args.append(T.name(tmp))
            else:
                args.append(T.expr(f"{RUNTIME}.UNDEF"))
        call = gast.Call(func=T.expr(f"{SEGMENTS}[{index}]"), args=args, keywords=[])
        return [code.at_user(p, at) for p in pre], call

    def _unpack(self, call: tuple, outputs: list[str], mode: str, returns: bool, catch: bool,
                undef_after: list[str], at: gast.stmt) -> list[gast.stmt]:
        """The call, its outputs bound (or its return returned, or its exception raised
        again after the outputs it assigned are bound); outputs left UNDEF deleted.  A
        flagged segment returns how it ended first (``segment_code.Exit``)."""
        pre, expr = call
        if mode == "last":
            return pre + [code.at_user(gast.Return(value=expr), at)]
        out = list(pre)

        def bind(value: gast.expr, undef: list[str]) -> list[gast.stmt]:
            stmts = [gast.Assign(targets=[T.tuple_of(outputs, store=True)], value=value, type_comment=None)] \
                if outputs else []
            return stmts + [code.deleted_if_undef(n) for n in undef]

        def assigned_ones() -> list[gast.stmt]:  # what it assigned before it raised or returned
            return [T.stmts(f"if {RESULT}[2][{i}] is not {RUNTIME}.UNDEF:\n    {n} = {RESULT}[2][{i}]")[0]
                    for i, n in enumerate(outputs)]

        if mode == "flagged":
            out += T.stmts(f"{RESULT} = CALL", CALL=expr)
            if catch:
                raised = T.stmts(f"if {RESULT}[0] == {int(code.Exit.RAISED)}:\n    raise {RESULT}[1]")[0]
                raised.body = assigned_ones() + raised.body
                out.append(raised)
            if returns:
                returned = T.stmts(f"if {RESULT}[0] == {int(code.Exit.RETURNED)}:\n    return {RESULT}[1]")[0]
                if catch:  # a finally around may read them
                    returned.body = assigned_ones() + returned.body
                out.append(returned)
            out += bind(T.expr(f"{RESULT}[1]"), undef_after)
        else:
            out += bind(expr, undef_after) if outputs else [gast.Expr(value=expr)]
        return [code.at_user(s, at) for s in out]

    def _defs(self, name: str, group: list[gast.stmt], inputs: list[str], outputs: list[str], mode: str,
              catch: bool, maybe_undef: list[str]) -> tuple[gast.FunctionDef, gast.FunctionDef]:
        """The segment as the converter reads it, and as it runs eagerly (deleting unbound
        inputs first; catching what it raises, in a flagged segment that catches)."""
        at = group[0]
        body = copy.deepcopy(group)
        outs = T.tuple_of(outputs)
        if mode == "flagged":
            body = [code.Flagged(outputs if catch else None).visit(s) for s in body]
            tail = [code.fell_through(outs)]
        elif mode == "last":
            tail = []
        else:
            tail = [gast.Return(value=outs)] if outputs else []
        decls = self._decls(self.node.body, used_in=group)
        tail = [code.at_user(t, at) for t in tail]
        convert_def = T.func_def(name, inputs, decls + body + tail)
        eager_def = T.func_def(name, inputs, copy.deepcopy(decls) + code.as_eager(
            copy.deepcopy(group), outputs, mode, catch, maybe_undef, at))
        for d in (convert_def, eager_def):
            T.located(d, at)
        return convert_def, eager_def

    def _decls(self, stmts: list[gast.stmt], used_in: list[gast.stmt] | None = None) -> list[gast.stmt]:
        names_in = None if used_in is None else {n.id for s in used_in for n in gast.walk(s) if isinstance(n, gast.Name)}
        out: list[gast.stmt] = []
        for kind, cls in (("global", gast.Global), ("nonlocal", gast.Nonlocal)):
            names = sorted(self.declared[kind] if names_in is None else self.declared[kind] & names_in)
            if names:
                out.append(T.located(cls(names=names), self.node))
        return out
