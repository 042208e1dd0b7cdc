"""``python -m janus script.py``: the script's AST is rewritten in memory before it runs
as ``__main__`` (the file on disk is never modified).

Tape-recording functions get ``janus.function`` as their innermost decorator (other
functions naming TensorFlow the hot-function counter, ``hot.decorate``), and a
module-level training loop (a ``for``/``while`` loop whose body records a tape) has its
body moved into a Janus function called once per iteration, when the body is simple
enough (assigns plain names; no break/continue/return/yield/def/try/del/global).
"""
from __future__ import annotations

import ast
import itertools
import linecache
import os
import types
from dataclasses import dataclass, field
from typing import Any

from janus.errors import InternalSignal

from janus.driver.api import function as janus_function
from janus.takeover import roster
from janus.takeover.detect import is_special, node_records_tape, node_uses_tensorflow, own_nodes, tensorflow_names


_TAKE_OVER_EXPR = "__import__('janus.takeover.hook', fromlist=['take_over']).take_over"
_COUNT_EXPR = "__import__('janus.takeover.hot', fromlist=['decorate']).decorate"   # hot functions, counted
_SKIP_DECORATORS = {"function", "property", "setter", "getter", "deleter", "cached_property",
                    "contextmanager", "asynccontextmanager"}
_KERAS_BASES = {"Layer", "Model", "Sequential", "Callback"}


def _decorator_name(d: ast.expr) -> str:
    while isinstance(d, ast.Call):
        d = d.func
    if isinstance(d, ast.Attribute):
        return d.attr
    if isinstance(d, ast.Name):
        return d.id
    return ""


def _expr(text: str, at: ast.AST) -> ast.expr:
    node = ast.parse(text, mode="eval").body
    for sub in ast.walk(node):
        sub.lineno, sub.col_offset = at.lineno, at.col_offset
        sub.end_lineno, sub.end_col_offset = at.lineno, at.col_offset
    return node


@dataclass
class LoopPlan:
    """How one module-level training loop was rewritten."""
    key: str
    lineno: int
    name: str
    params: list[str]
    returns: list[str]
    code: types.CodeType
    filename: str


@dataclass
class ScriptPlan:
    """What ``prepare_script`` did to a script."""
    code: types.CodeType
    functions: list[str] = field(default_factory=list)
    counted: list[str] = field(default_factory=list)   # TensorFlow functions without a tape: counted
    loops: list[LoopPlan] = field(default_factory=list)
    skipped_loops: list[tuple[int, str]] = field(default_factory=list)


_LOOPS: dict[str, LoopPlan] = {}
_LOOP_BODIES: dict[tuple[int, str], "LoopBody"] = {}


class LoopBody:
    """A module-level loop body as a Janus function; ``ready()`` says whether it can be used."""

    def __init__(self, plan: LoopPlan, g: dict):
        self.plan = plan
        self.globals = g
        fn = types.FunctionType(plan.code, g, plan.name)
        fn.__qualname__ = plan.name
        self.function = janus_function(fn)
        self._needed = [p for p in plan.params]
        if self.function is not fn:
            roster.record(f"{plan.name} (loop body at line {plan.lineno})", self.function)

    def ready(self, *bound: str) -> bool:
        g = self.globals
        return all(p in g or p in bound for p in self._needed)

    def __call__(self, *args: Any) -> Any:
        return self.function(*args)


def loop_body(key: str, g: dict) -> LoopBody:
    """The (single) ``LoopBody`` for loop ``key`` of the module whose globals are ``g``."""
    with roster.lock:
        body = _LOOP_BODIES.get((id(g), key))
        if body is None or body.globals is not g:
            body = _LOOP_BODIES[(id(g), key)] = LoopBody(_LOOPS[key], g)
        return body


class _Decline(InternalSignal):
    """This loop is not rewritten (the reason: what it holds that the rewrite refuses)."""


_FORBIDDEN = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.Return, ast.Yield,
              ast.YieldFrom, ast.Await, ast.Break, ast.Continue, ast.Global, ast.Nonlocal, ast.Import,
              ast.ImportFrom, ast.Delete, ast.NamedExpr, ast.Try, ast.Match, ast.AnnAssign,
              ast.AsyncFor, ast.AsyncWith)
if hasattr(ast, "TryStar"):
    _FORBIDDEN += (ast.TryStar,)

_DYNAMIC_NAMES = {"globals", "locals", "vars", "eval", "exec", "dir", "__import__"}


def _loads(expr: ast.AST | None) -> list[str]:
    """Names an expression reads, excluding comprehension variables, in evaluation order (roughly)."""
    if expr is None:
        return []
    bound: set[str] = set()
    for node in ast.walk(expr):
        if isinstance(node, ast.comprehension):
            for t in ast.walk(node.target):
                if isinstance(t, ast.Name):
                    bound.add(t.id)
    return [n.id for n in ast.walk(expr) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
            and n.id not in bound]


def _target_names(target: ast.AST) -> tuple[list[str], list[str]]:
    """(names bound, names read) by an assignment target."""
    if isinstance(target, ast.Name):
        return [target.id], []
    if isinstance(target, (ast.Tuple, ast.List)):
        bound, read = [], []
        for elt in target.elts:
            b, r = _target_names(elt)
            bound += b
            read += r
        return bound, read
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    if isinstance(target, ast.Attribute):
        return [], _loads(target.value)
    if isinstance(target, ast.Subscript):
        return [], _loads(target.value) + _loads(target.slice)
    raise _Decline(f"assignment target {type(target).__name__}")


class _Flow:
    """Definite-assignment walk of a loop body: which names may be read before being bound."""

    def __init__(self) -> None:
        self.early: set[str] = set()   # read at a point where they may not be bound yet
        self.bound: set[str] = set()   # bound anywhere in the body

    def read(self, names: list[str], defined: set[str]) -> None:
        self.early.update(n for n in names if n not in defined)

    def block(self, stmts: list[ast.stmt], defined: set[str]) -> set[str]:
        defined = set(defined)
        for s in stmts:
            defined = self.stmt(s, defined)
        return defined

    def bind(self, names: list[str], defined: set[str]) -> set[str]:
        self.bound.update(names)
        return defined | set(names)

    def stmt(self, s: ast.stmt, defined: set[str]) -> set[str]:
        if isinstance(s, _FORBIDDEN):
            raise _Decline(type(s).__name__)
        if isinstance(s, ast.Assign):
            self.read(_loads(s.value), defined)
            for t in s.targets:
                b, r = _target_names(t)
                self.read(r, defined)
                defined = self.bind(b, defined)
            return defined
        if isinstance(s, ast.AugAssign):
            self.read(_loads(s.value), defined)
            b, r = _target_names(s.target)
            self.read(r + b, defined)
            return self.bind(b, defined)
        if isinstance(s, (ast.Expr, ast.Assert, ast.Raise, ast.Pass)):
            for child in ast.iter_child_nodes(s):
                self.read(_loads(child), defined)
            return defined
        if isinstance(s, ast.If):
            self.read(_loads(s.test), defined)
            a = self.block(s.body, defined)
            b = self.block(s.orelse, defined)
            return a & b
        if isinstance(s, ast.For):
            self.read(_loads(s.iter), defined)
            b, r = _target_names(s.target)
            self.read(r, defined)
            inner = self.bind(b, defined)
            self.block(s.body, inner)
            self.block(s.orelse, defined)
            return defined
        if isinstance(s, ast.While):
            self.read(_loads(s.test), defined)
            self.block(s.body, defined)
            self.block(s.orelse, defined)
            return defined
        if isinstance(s, ast.With):
            for item in s.items:
                self.read(_loads(item.context_expr), defined)
                if item.optional_vars is not None:
                    b, r = _target_names(item.optional_vars)
                    self.read(r, defined)
                    defined = self.bind(b, defined)
            return self.block(s.body, defined)
        raise _Decline(type(s).__name__)


def _plan_loop(loop: ast.For | ast.While, module: ast.Module, lines: list[str], filename: str) -> tuple[LoopPlan, list[str]]:
    """Plan the rewrite of ``loop``'s body into a function; raises ``_Decline`` if not simple."""
    body = loop.body
    _check_body(loop)
    targets: list[str] = []
    if isinstance(loop, ast.For):
        targets, reads = _target_names(loop.target)
        if reads:
            raise _Decline("loop target is not plain names")
    flow = _Flow()
    end = flow.block(body, set(targets))
    params = list(targets) + sorted((flow.early & flow.bound) - set(targets))
    returns = sorted(flow.bound & (set(params) | _names_read_outside(module, body)))
    unsure = [n for n in returns if n not in end]
    if unsure:
        raise _Decline(f"{', '.join(unsure)} may be left unassigned")
    name = f"__janus_loop_{loop.lineno}__"
    plan = LoopPlan(key=f"{os.path.realpath(filename)}:{loop.lineno}", lineno=loop.lineno, name=name,
                    params=params, returns=returns, code=_body_code(loop, name, params, returns, lines, filename),
                    filename=filename)
    return plan, targets


def _check_body(loop: ast.For | ast.While) -> None:
    """``_Decline`` for a body that cannot be a function of its own: on the loop's line, or
    using a construct or name (``locals()``...) that needs the module's frame."""
    if loop.body[0].lineno == loop.lineno:
        raise _Decline("body on the loop's own line")
    for node in ast.walk(ast.Module(body=loop.body, type_ignores=[])):
        if isinstance(node, _FORBIDDEN):
            raise _Decline(f"{type(node).__name__} in the body")
        if isinstance(node, ast.Name) and node.id in _DYNAMIC_NAMES:
            raise _Decline(f"uses {node.id}()")


def _names_read_outside(module: ast.Module, body: list[ast.stmt]) -> set[str]:
    """Names read anywhere outside ``body`` (the rest of the module, other functions, the loop
    header); ``_Decline`` if the script uses ``locals()`` or the like anywhere."""
    outside: set[str] = set()
    body_ids = {id(n) for s in body for n in ast.walk(s)}
    for node in ast.walk(module):
        if id(node) in body_ids or getattr(node, "_janus_generated", False):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            outside.add(node.id)
        if isinstance(node, ast.Name) and node.id in _DYNAMIC_NAMES:
            raise _Decline(f"the script uses {node.id}()")
    return outside


def _body_code(loop: ast.For | ast.While, name: str, params: list[str], returns: list[str], lines: list[str],
               filename: str) -> types.CodeType:
    """The code of ``def name(params): <body>; return (returns)``, compiled from the body's own
    lines at their own line numbers (a virtual file in linecache)."""
    body = loop.body
    first, last = body[0].lineno, max(s.end_lineno for s in body)
    first = min([first] + [d.lineno for s in body for d in getattr(s, "decorator_list", [])])
    if first < 2:
        raise _Decline("loop at the top of the file")
    header = f"def {name}({', '.join(params)}):"
    src_lines = ["\n"] * (first - 2) + [header + "\n"] + lines[first - 1:last]
    src_lines.append(" " * body[0].col_offset + f"return ({''.join(n + ', ' for n in returns)})\n")
    source = "".join(src_lines)
    virtual = f"<janus loop {filename}:{loop.lineno}>"
    linecache.cache[virtual] = (len(source), None, source.splitlines(True), virtual)
    try:
        mcode = compile(source, virtual, "exec", dont_inherit=True)
    except SyntaxError as e:
        raise _Decline(f"body does not compile alone ({e.msg})") from None
    return next(c for c in mcode.co_consts if isinstance(c, types.CodeType))


def _loop_call(loop: ast.For | ast.While, plan: LoopPlan, targets: list[str]) -> ast.If:
    """``if <body>.ready(): (r1, r2, ) = <body>(p1, p2) else: <original body>``."""
    body_expr = f"__import__('janus.takeover.hook', fromlist=['loop_body']).loop_body({plan.key!r}, globals())"
    ready_args = "".join(f"{t!r}, " for t in targets)
    test = _expr(f"{body_expr}.ready({ready_args})", loop)
    call = _expr(f"{body_expr}({', '.join(plan.params)})", loop)
    if plan.returns:
        target = ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Store()) for n in plan.returns], ctx=ast.Store())
        stmt: ast.stmt = ast.Assign(targets=[target], value=call)
    else:
        stmt = ast.Expr(value=call)
    for node in itertools.chain(ast.walk(test), ast.walk(call)):
        node._janus_generated = True
    first = loop.body[0]
    for node in ast.walk(stmt):
        node.lineno, node.col_offset = first.lineno, first.col_offset
        node.end_lineno, node.end_col_offset = first.lineno, first.col_offset
    new = ast.If(test=test, body=[stmt], orelse=loop.body)
    ast.copy_location(new, first)
    return new


class _ScriptRewriter:
    def __init__(self, module: ast.Module, lines: list[str], filename: str, plan: ScriptPlan,
                 tensorflow: set[str] | None = None):
        self.module, self.lines, self.filename, self.plan = module, lines, filename, plan
        self.tensorflow = tensorflow   # the script's TensorFlow names; None: hot functions are not counted

    def functions(self, stmts: list[ast.stmt], prefix: str, counted: bool = True) -> None:
        for s in stmts:
            if isinstance(s, ast.ClassDef):   # Keras calls a Layer's, Model's or Callback's methods itself
                keras = any(_decorator_name(b) in _KERAS_BASES for b in s.bases)
                self.functions(s.body, f"{prefix}{s.name}.", counted and not keras)
            elif isinstance(s, ast.FunctionDef):
                self._function(s, prefix, counted)
            elif isinstance(s, (ast.If, ast.With, ast.Try)):
                for block in ("body", "orelse", "finalbody"):
                    self.functions(getattr(s, block, []) or [], prefix, counted)
                for h in getattr(s, "handlers", []):
                    self.functions(h.body, prefix, counted)

    def _function(self, s: ast.FunctionDef, prefix: str, counted: bool) -> None:
        """Decorate ``s``: with ``take_over`` if it records a tape, with the hot-function counter
        if it uses TensorFlow otherwise (only a plain function, no other decorator)."""
        tape = node_records_tape(s)
        if not tape and (not counted or self.tensorflow is None or is_special(s.name)
                         or not node_uses_tensorflow(s, self.tensorflow)):
            return
        if any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) for n in own_nodes(s)):
            return
        names = [_decorator_name(d) for d in s.decorator_list]
        if any(n in _SKIP_DECORATORS for n in names):
            return
        if any(n not in ("staticmethod", "classmethod") for n in names):
            return  # another decorator: the object in the namespace is not the function
        at = s.decorator_list[0] if s.decorator_list else s
        s.decorator_list.append(_expr(_TAKE_OVER_EXPR if tape else _COUNT_EXPR, at))
        (self.plan.functions if tape else self.plan.counted).append(prefix + s.name)

    def loops(self, stmts: list[ast.stmt]) -> None:
        for s in stmts:
            if isinstance(s, (ast.For, ast.While)):
                if self._direct_tape(s.body):
                    try:
                        plan, targets = _plan_loop(s, self.module, self.lines, self.filename)
                    except _Decline as e:
                        self.plan.skipped_loops.append((s.lineno, str(e)))
                    else:
                        _LOOPS[plan.key] = plan
                        self.plan.loops.append(plan)
                        s.body = [_loop_call(s, plan, targets)]
                    continue
                self.loops(s.body)
                self.loops(s.orelse)
            elif isinstance(s, (ast.If, ast.With, ast.Try)):
                for block in ("body", "orelse", "finalbody"):
                    self.loops(getattr(s, block, []) or [])
                for h in getattr(s, "handlers", []):
                    self.loops(h.body)

    @staticmethod
    def _direct_tape(stmts: list[ast.stmt]) -> bool:
        """The tape is recorded in these statements themselves, not in a nested loop."""
        for s in stmts:
            if isinstance(s, (ast.For, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if node_records_tape(ast.Module(body=[s], type_ignores=[])):
                return True
        return False


def prepare_script(source: str, filename: str, hot_functions: bool = True) -> ScriptPlan:
    """Compile a script with its tape-recording functions and training loops taken over
    (and, with ``hot_functions``, its TensorFlow functions without a tape counted: ``hot.py``).

    Raises ``SyntaxError`` like ``compile`` would for a script that does not parse.
    """
    module = ast.parse(source, filename)
    plan = ScriptPlan(code=None)  # type: ignore[arg-type]
    lines = source.splitlines(True)
    rw = _ScriptRewriter(module, lines, filename, plan, tensorflow_names(module) if hot_functions else None)
    rw.loops(module.body)   # before the decorators, so the loop analysis sees the user's own AST
    rw.functions(module.body, "")
    ast.fix_missing_locations(module)
    plan.code = compile(module, filename, "exec", dont_inherit=True)
    return plan
