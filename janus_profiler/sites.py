"""From bytecode offsets to AST sites.

A *site* is an AST node named by its absolute source position, so the converter,
which holds the AST of the same function, can look records up by node.  The bridge
is ``co_positions()``: every instruction carries the (line, column) span of the
source it was compiled from (3.11+).  Some instructions carry the span of their own
node (a ``CALL`` has its ``Call``'s span), others that of an enclosing construct
(a conditional jump of an ``if`` carries the whole ``if`` statement's span), so each
instruction kind is matched with the rule that fits it.

``build_codemap(code)`` does this once per code object and produces a small table
of *actions* keyed by instruction offset, which the runtime engine interprets: the
engine only sees "instruction at offset N is about to run in this frame", never the
value stack, so everything that can be decided statically is decided here.

Conditional jumps
-----------------
The truth value a jump tests follows from its opcode and from whether it jumped.
The tested operand (the *leaf*) is the expression computed by the instruction just
before the jump.  In a test context (``if``/``while``/``assert``/conditional
expression/comprehension ``if``) the compiler threads jumps through the whole
``and``/``or``/``not`` tree of the test, so from the leaf's truth value we derive
what is decided: whether a ``BoolOp`` short-circuited, and the truth value of the
whole test.  In a value context (``x = a or b``) each ``BoolOp`` is compiled on its
own and only that ``BoolOp``'s short-circuit is recorded.
"""
from __future__ import annotations

import ast
import dis
import logging
import sys
import types

from .source import FileIndex, Site, encloses, file_index, node_span, norm_filename, stmts_span

log = logging.getLogger("janus.profiler")

__all__ = ["CodeMap", "build_codemap", "nested_codes"]


# --- the per-code table ------------------------------------------------------------------
class CodeMap:
    """Static facts about one code object, in the form the runtime engine needs.

    ``actions[offset]`` is a tuple of action tuples (see :mod:`janus_profiler.engine`);
    site references in actions are indices into ``sites``.  ``regions[offset]`` is the
    set of loop indices whose body contains that instruction (absent: position unknown).
    """

    def __init__(self, code: types.CodeType):
        self.code = code
        self.filename = norm_filename(code.co_filename)
        self.qualname = code.co_qualname
        self.sites: list[Site] = []
        self._site_idx: dict[Site, int] = {}
        self.actions: dict[int, tuple] = {}
        self.regions: dict[int, frozenset] = {}
        self.loops: list[int] = []  # loop index -> site index
        flags = code.co_flags
        n = code.co_argcount + code.co_kwonlyargcount + bool(flags & 0x04) + bool(flags & 0x08)
        self.params: tuple[str, ...] = code.co_varnames[:n]
        self.is_generator = bool(flags & (0x20 | 0x200))  # generator, async generator
        self.is_coroutine = bool(flags & 0x80)
        self.yield_offsets: frozenset = frozenset()
        self.has_ast = False

    def site_index(self, site: Site) -> int:
        i = self._site_idx.get(site)
        if i is None:
            i = self._site_idx[site] = len(self.sites)
            self.sites.append(site)
        return i

    def add(self, offset: int, action: tuple) -> None:
        self.actions[offset] = self.actions.get(offset, ()) + (action,)


_SKIP_BEFORE_JUMP = {"EXTENDED_ARG", "CACHE", "COPY", "TO_BOOL", "NOT_TAKEN", "NOP"}
_CALLS = {"CALL", "CALL_FUNCTION_EX", "CALL_KW"}
_NAME_READS = {"LOAD_GLOBAL": "global", "LOAD_DEREF": "cell", "LOAD_CLASSDEREF": "cell"}
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)
_COMPS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_LOOPS = (ast.For, ast.While) + _COMPS


def nested_codes(code: types.CodeType) -> list[types.CodeType]:
    """``code`` and every code object defined inside it (nested defs, lambdas, comprehensions)."""
    out, todo = [], [code]
    while todo:
        c = todo.pop()
        out.append(c)
        todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return out


def build_codemap(code: types.CodeType) -> CodeMap:
    """Analyse ``code`` once; see the module docstring."""
    cm = CodeMap(code)
    instrs = [i for i in dis.get_instructions(code) if i.opname != "CACHE"]
    cm.yield_offsets = frozenset(i.offset for i in instrs if i.opname == "YIELD_VALUE")
    idx = file_index(code.co_filename)
    if idx is None:
        return cm
    cm.has_ast = True
    try:
        _Builder(cm, idx, instrs).run()
    except Exception:  # noqa: BLE001 - a profiler must not break the program it observes
        log.warning("janus_profiler: could not map %s to its AST", code.co_qualname, exc_info=True)
        cm.actions.clear()
        cm.regions.clear()
    return cm


def _span(instr: dis.Instruction) -> tuple | None:
    p = instr.positions
    if p is None or None in (p.lineno, p.end_lineno, p.col_offset, p.end_col_offset):
        return None
    return (p.lineno, p.col_offset, p.end_lineno, p.end_col_offset)


class _Builder:
    def __init__(self, cm: CodeMap, idx: FileIndex, instrs: list):
        self.cm, self.idx, self.instrs = cm, idx, instrs
        code = cm.code
        self.local_names = set(code.co_varnames) | set(code.co_cellvars) | set(code.co_freevars)
        self.loop_nodes: dict[ast.AST, int] = {}
        self.entries: set[ast.AST] = set()
        self.for_iters: dict[int, int] = {}
        self.spans = [_span(i) for i in instrs]

    # -- helpers
    def loop_index(self, node: ast.AST) -> int:
        li = self.loop_nodes.get(node)
        if li is None:
            li = self.loop_nodes[node] = len(self.cm.loops)
            self.cm.loops.append(self.cm.site_index(self.idx.site(node)))
        return li

    def fallthrough(self, k: int) -> int:
        return self.instrs[k + 1].offset if k + 1 < len(self.instrs) else -1

    def path(self, node: ast.AST) -> tuple | None:
        """Compile a side-effect-free expression into a path the engine can re-evaluate."""
        if isinstance(node, ast.Name):
            return ("l", node.id) if node.id in self.local_names else ("g", node.id)
        if isinstance(node, ast.Constant) and type(node.value) in (int, str, bool, float, type(None)):
            return ("c", node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) \
                and isinstance(node.operand, ast.Constant) and type(node.operand.value) in (int, float):
            return ("c", -node.operand.value)
        if isinstance(node, ast.Attribute):
            inner = self.path(node.value)
            return None if inner is None else ("a", inner, node.attr)
        if isinstance(node, ast.Subscript):
            inner, key = self.path(node.value), self.path(node.slice)
            return None if inner is None or key is None else ("s", inner, key)
        return None

    def run(self) -> None:
        """Fill the code map: per-instruction actions, loop regions, statement boundaries."""
        for k, ins in enumerate(self.instrs):
            self.instruction(k, ins)
            if self.spans[k] is not None:
                self.loop_marks(ins, self.spans[k])
        if self.loop_nodes:
            self.regions()
        if not self.cm.code.co_name.startswith("<"):
            self.statements()  # the types of the locals each statement reads

    def instruction(self, k: int, ins: dis.Instruction) -> None:
        """The action of one instruction: a loop's ``FOR_ITER``, a conditional jump, a call,
        or a read of a global, a cell, an attribute or a subscript."""
        cm, idx, span, op = self.cm, self.idx, self.spans[k], ins.opname
        if op == "FOR_ITER":
            node = idx.find(span, (ast.For,) + _COMPS) or self.loop_of_iter(span)
            if node is not None and (not isinstance(node, _COMPS) or len(node.generators) == 1):
                li = self.loop_index(node)
                cm.add(ins.offset, ("for", self.fallthrough(k), li))
                self.for_iters[ins.offset] = li
        elif "JUMP" in op and "IF_" in op:
            self.jump(k, ins)
        elif op in _CALLS:
            node = idx.find(span, (ast.Call,))
            if node is not None:
                cm.add(ins.offset, ("call", cm.site_index(idx.site(node)), self.path(node.func)))
        elif op in _NAME_READS:
            node = idx.find(span, (ast.Name,))
            if node is not None:
                cm.add(ins.offset, (_NAME_READS[op], cm.site_index(idx.site(node)), ins.argval))
        elif op in ("LOAD_ATTR", "LOAD_METHOD"):
            node = idx.find(span, (ast.Attribute,))
            p = self.path(node.value) if node is not None else None
            if p is not None:
                cm.add(ins.offset, ("attr", cm.site_index(idx.site(node)), p, node.attr))
        elif op == "BINARY_SUBSCR":
            node = idx.find(span, (ast.Subscript,))
            p = self.path(node) if node is not None else None
            if p is not None:
                cm.add(ins.offset, ("sub", cm.site_index(idx.site(node)), p[1], p[2]))

    def loop_marks(self, ins: dis.Instruction, span: tuple) -> None:
        """The entry of a ``while True:`` body and the ``break`` statements of loops."""
        w = self.idx.find(span, (ast.While,))
        if w is not None:
            li = self.loop_index(w)
            if isinstance(w.test, ast.Constant) and w.test.value:
                self.while_entry(w, li)
        b = self.idx.find(span, (ast.Break,))
        if b is not None:
            loop = self.enclosing_loop(b)
            if loop is not None:
                self.cm.add(ins.offset, ("break", self.loop_index(loop)))

    def regions(self) -> None:
        """For every instruction, the loops whose body holds it (not their ``else`` nor the
        ``for``'s iterable)."""
        regions = []
        for node in self.loop_nodes:
            excl = [r for r in (stmts_span(getattr(node, "orelse", [])),
                                node_span(node.iter) if isinstance(node, ast.For) else None) if r]
            regions.append((self.loop_nodes[node], node_span(node), excl))
        for k, ins in enumerate(self.instrs):
            span = self.spans[k]
            if span is None:
                continue
            inside = {li for li, outer, excl in regions
                      if encloses(outer, span) and not any(encloses(e, span) for e in excl)}
            if ins.offset in self.for_iters:  # 3.13 gives FOR_ITER the iterable's span
                inside.add(self.for_iters[ins.offset])
            self.cm.regions[ins.offset] = frozenset(inside)

    def loop_of_iter(self, span: tuple | None) -> ast.AST | None:
        """The loop whose iterable has this span (3.13 positions FOR_ITER there)."""
        for n in self.idx.by_span.get(span, ()) if span else ():
            if self.idx.field.get(n) == "iter":
                p = self.idx.parent.get(n)
                if isinstance(p, ast.For):
                    return p
                if isinstance(p, ast.comprehension):
                    return self.idx.parent.get(p)
        return None

    def while_entry(self, w: ast.While, li: int) -> None:
        body = stmts_span(w.body)
        if body is None or w in self.entries:
            return
        self.entries.add(w)
        for k, ins in enumerate(self.instrs):
            if self.spans[k] is not None and encloses(body, self.spans[k]):
                self.cm.add(ins.offset, ("entry", li))
                break

    def enclosing_loop(self, node: ast.AST) -> ast.AST | None:
        p = self.idx.parent.get(node)
        while p is not None and not isinstance(p, _SCOPES):
            if isinstance(p, (ast.For, ast.While)) and self.idx.field.get(node) == "body":
                return p
            node, p = p, self.idx.parent.get(p)
        return None

    # -- conditional jumps
    def jump(self, k: int, ins: dis.Instruction) -> None:
        """A conditional jump: the records its two ways imply (see the module's docstring)."""
        found = self.jump_leaf(k)
        if found is None:
            return
        leaf, owner = found
        truth_if_jumped = _truth_if_jumped(ins.opname, leaf)
        if truth_if_jumped is None:
            return
        chained = isinstance(leaf, ast.Compare) and len(leaf.ops) > 1 \
            and any(i.offset == ins.argval and i.opname == "POP_TOP" for i in self.instrs)
        recs = {truth: () if (chained and truth) else self.propagate(leaf, truth, owner) for truth in (True, False)}
        if recs[True] or recs[False]:
            self.cm.add(ins.offset, ("jump", self.fallthrough(k), recs[truth_if_jumped], recs[not truth_if_jumped]))

    def jump_leaf(self, k: int) -> tuple[ast.AST, ast.AST | None] | None:
        """The operand the jump at ``k`` tests (computed by the instruction before it) and its
        owner, innermost first; None if no operand of its statement fits."""
        j = k - 1
        while j >= 0 and self.instrs[j].opname in _SKIP_BEFORE_JUMP:
            j -= 1
        if j < 0 or self.spans[j] is None or self.spans[k] is None:
            return None
        for node in reversed([n for n in self.idx.by_span.get(self.spans[j], ()) if isinstance(n, ast.expr)]):
            found = self.leaf_of(node)
            # the jump must belong to the operand's statement (its own span is not reliable:
            # 3.11 gives the jump after `b` in `while a < 3 or b` the span of `a < 3`)
            if found is not None and encloses(self.stmt_span(found[0]), self.spans[k]):
                return found
        return None

    def stmt_span(self, node: ast.AST) -> tuple:
        while node is not None and not isinstance(node, ast.stmt):
            node = self.idx.parent.get(node)
        return node_span(node) if node is not None else (0, 0, 0, 0)

    def test_slot(self, child: ast.AST, parent: ast.AST | None) -> bool:
        f = self.idx.field.get(child)
        return (f == "test" and isinstance(parent, (ast.If, ast.While, ast.IfExp, ast.Assert))) or \
            (f == "ifs" and isinstance(parent, ast.comprehension))

    def leaf_of(self, node: ast.AST) -> tuple[ast.AST, ast.AST | None] | None:
        """(leaf operand, owner construct or None for a value-context BoolOp)."""
        par = self.idx.parent
        cur = node
        while True:
            p = par.get(cur)
            if p is None or isinstance(p, _SCOPES) or isinstance(p, ast.stmt) and not self.test_slot(cur, p):
                return None
            if isinstance(p, ast.BoolOp) or (isinstance(p, ast.UnaryOp) and isinstance(p.op, ast.Not)) \
                    or self.test_slot(cur, p):
                break
            cur = p
        leaf, r = cur, cur
        while isinstance(par.get(r), ast.BoolOp) or (
                isinstance(par.get(r), ast.UnaryOp) and isinstance(par[r].op, ast.Not)):
            r = par[r]
        owner = par.get(r)
        if self.test_slot(r, owner):
            return leaf, owner
        return (leaf, None) if isinstance(par.get(leaf), ast.BoolOp) else None

    def propagate(self, leaf: ast.AST, val: bool, owner: ast.AST | None) -> tuple:
        """Records implied by the leaf operand having truth value ``val``."""
        idx, cm, par = self.idx, self.cm, self.idx.parent
        test_ctx = owner is not None
        recs: list[tuple] = []
        cur = leaf
        while True:
            p = par.get(cur)
            if isinstance(p, ast.UnaryOp) and isinstance(p.op, ast.Not):
                if not test_ctx:
                    return tuple(recs)
                val, cur = not val, p
                continue
            if isinstance(p, ast.BoolOp):
                i, n = p.values.index(cur), len(p.values)
                short = (val is False) if isinstance(p.op, ast.And) else (val is True)
                sidx = cm.site_index(idx.site(p))
                if i == n - 1:
                    recs.append(("b", sidx, False))
                elif short:
                    recs.append(("b", sidx, True))
                else:
                    if not test_ctx and i == n - 2:
                        recs.append(("b", sidx, False))
                    return tuple(recs)
                if not test_ctx:
                    return tuple(recs)
                cur = p
                continue
            break
        if owner is None:
            return tuple(recs)
        if isinstance(owner, ast.comprehension):
            recs.append(("b", cm.site_index(idx.site(cur)), val))
        else:
            recs.append(("b", cm.site_index(idx.site(owner)), val))
            if isinstance(owner, ast.While):
                recs.append(("i" if val else "x", self.loop_index(owner)))
        return tuple(recs)

    # -- statements
    def statements(self) -> None:
        idx, cm = self.idx, self.cm
        first: dict[ast.stmt, int] = {}
        for k, ins in enumerate(self.instrs):
            cands = idx.by_span.get(self.spans[k], ()) if self.spans[k] else ()
            if not cands:
                continue
            node = cands[-1]
            while node is not None and not isinstance(node, ast.stmt):
                node = idx.parent.get(node)
            if node is None or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if node not in first or ins.offset < first[node]:
                first[node] = ins.offset
        for stmt, off in first.items():
            names = self.names_read(stmt)
            if names:
                cm.add(off, ("stmt", cm.site_index(idx.site(stmt)), names))

    def names_read(self, stmt: ast.stmt) -> tuple[str, ...]:
        out: list[str] = []
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) \
                and stmt.target.id in self.local_names:
            out.append(stmt.target.id)  # x += ... reads x
        todo = [v for f, v in ast.iter_fields(stmt)
                if f not in ("body", "orelse", "finalbody", "handlers", "cases")]
        while todo:
            v = todo.pop(0)
            if isinstance(v, list):
                todo[:0] = v
                continue
            if not isinstance(v, ast.AST) or isinstance(v, (ast.Lambda,) + _COMPS + (ast.stmt,)):
                continue
            if isinstance(v, ast.Name) and isinstance(v.ctx, ast.Load) and v.id in self.local_names \
                    and v.id not in out:
                out.append(v.id)
            todo[:0] = [c for c in ast.iter_child_nodes(v)]
        return tuple(out)


if sys.version_info < (3, 11):  # pragma: no cover - co_positions() is 3.11+
    raise ImportError("janus_profiler needs Python 3.11 or newer (co_positions)")


def _truth_if_jumped(op: str, leaf: ast.AST) -> bool | None:
    """The truth of the tested operand when a jump of opcode ``op`` is taken; None for a
    jump whose outcome says nothing about it (``IF_NONE`` on an operand that is no ``is``)."""
    if "IF_NOT_NONE" in op or "IF_NONE" in op:
        if not (isinstance(leaf, ast.Compare) and len(leaf.ops) == 1 and isinstance(leaf.ops[0], (ast.Is, ast.IsNot))):
            return None
        jumped_none = "IF_NONE" in op and "IF_NOT_NONE" not in op
        return jumped_none if isinstance(leaf.ops[0], ast.Is) else not jumped_none
    if "IF_FALSE" in op:
        return False
    if "IF_TRUE" in op:
        return True
    return None
