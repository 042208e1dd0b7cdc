"""The conversion pipeline: parse, check, transform pass by pass, unparse, compile.

The passes run in this order, each needing what the earlier ones produced:

1. ``Desugar``            — explicit ``super()``, augmented assignment to state
   ``LowerDelete``        — ``del`` unbinds a local, deletes an item or an attribute
2. ``CatchForFinally``    — a ``finally`` that returns, breaks or continues swallows
                             the pending exception (caught, re-raised if it completes)
3. ``LowerReturns``       — single exit; returns become a flag and a result
4. ``LowerBreakContinue`` — loop exits become flags
5. ``LowerExpressions``   — and/or/not, conditional expressions, assert, formatting
6. ``LowerCalls``         — every call through ``_jn.call``
7. ``LowerStateAccess``   — globals, closure cells, attributes, stores
8. ``LowerProtocols``     — ``obj[k]`` and ``a in b`` through ``_jn`` (user dunders
                             converted, unmodeled protocols refused)
9. ``CheckContextManagers`` — each ``with`` item is checked to be TensorFlow's own
10. ``GuardHandlers``     — ``except`` handlers let Janus's errors (and library errors
                             raised while building the graph) pass through
11. ``LowerControlFlow``  — if/while/for become operations on block functions
12. ``BindUndefined``     — possibly-unassigned variables start as ``UNDEF``

The result is ordinary Python (``janus.explain`` shows it) that is traced into a
graph with AutoGraph off.
"""
from __future__ import annotations

import builtins
import os
import types
import weakref

import ast

import gast

from janus.convert import analysis, parse, registry, support
from janus.convert.anno import Anno, setanno
from janus.convert.passes.break_continue import LowerBreakContinue
from janus.convert.passes.lower_calls import LowerCalls
from janus.convert.passes.check_contexts import CheckContextManagers
from janus.convert.passes.control_flow import LowerControlFlow
from janus.convert.passes.exceptions import GuardHandlers
from janus.convert.passes.lower_deletes import LowerDelete
from janus.convert.passes.desugar import Desugar
from janus.convert.passes.expressions import LowerExpressions
from janus.convert.passes.finally_exits import CatchForFinally
from janus.convert.passes.protocols import LowerProtocols
from janus.convert.passes.returns import LowerReturns
from janus.convert.passes.state_access import LowerStateAccess
from janus.convert.passes.undefined import BindUndefined
from janus.convert.sites import SiteInfo
from janus.convert.unparse import unparse
from janus.errors import ConversionError
from janus.reporting.codes import code_of
from janus_profiler import site_of

# Keyed by file and line too: code objects compare equal regardless of where they come from.
_code_cache: dict[tuple, tuple[str, types.CodeType, tuple]] = {}
_fn_cache: "weakref.WeakKeyDictionary[types.FunctionType, types.FunctionType]" = weakref.WeakKeyDictionary()


class _StripSignatureExtras(gast.NodeTransformer):
    """Annotations are not evaluated by converted code; the top def keeps no decorators or defaults."""

    def visit_FunctionDef(self, node):
        node.returns = None
        for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs:
            a.annotation = None
        for a in (node.args.vararg, node.args.kwarg):
            if a is not None:
                a.annotation = None
        self.generic_visit(node)
        return node

    def visit_AnnAssign(self, node):
        if node.value is None:
            return gast.Pass()
        return gast.Assign(targets=[node.target], value=node.value, type_comment=None)


class _TagSites(gast.NodeVisitor):
    """Mark the user's own ``if``/``while``/``for``/conditional expressions as speculable sites.

    Runs before any pass, so nodes the passes create (which have no source) are never sites.
    """

    def __init__(self, filename: str, line_offset: int, indent: int):
        self.filename, self.line_offset, self.indent = filename, line_offset, indent

    def _tag(self, node, text_node) -> None:
        moved = types.SimpleNamespace(
            lineno=node.lineno + self.line_offset, col_offset=node.col_offset + self.indent,
            end_lineno=node.end_lineno + self.line_offset, end_col_offset=node.end_col_offset + self.indent)
        key = site_of(self.filename, moved, type(node).__name__)
        text = unparse(ast.fix_missing_locations(gast.gast_to_ast(text_node))).strip()
        setanno(node, Anno.SITE, SiteInfo(key, type(node).__name__, text))

    def visit_If(self, node):
        self._tag(node, gast.Expr(value=node.test))
        self.generic_visit(node)

    def visit_While(self, node):
        self._tag(node, gast.Expr(value=node.test))
        self.generic_visit(node)

    def visit_IfExp(self, node):
        self._tag(node, gast.Expr(value=node.test))
        self.generic_visit(node)

    def visit_For(self, node):
        self._tag(node, gast.Expr(value=node.iter))
        self.generic_visit(node)

    def visit_FunctionDef(self, node):
        setanno(node, Anno.CELLVARS, analysis.cell_vars(node))
        setanno(node, Anno.OWN_LISTS, analysis.own_lists(node))
        self.generic_visit(node)


def convert_source(fn: types.FunctionType) -> str:
    """The generated source for ``fn`` (cached per code object)."""
    return _compiled(fn)[0]


@parse.exclusive  # the passes parse templates: one conversion at a time
def _compiled(fn: types.FunctionType) -> tuple[str, types.CodeType, tuple]:
    code = fn.__code__
    key = (code.co_filename, code.co_firstlineno, code)
    hit = _code_cache.get(key)
    if hit is not None:
        return hit
    node, filename, line_offset, indent = parse.function_ast(fn)
    reason = support.unsupported_in(node)
    if reason:
        raise ConversionError(reason, permanent=True, code=code_of(reason))
    _TagSites(filename, line_offset, indent).visit(node)
    node.decorator_list = []
    node.args.defaults = [gast.Constant(value=None, kind=None) for _ in node.args.defaults]
    node.args.kw_defaults = [None if d is None else gast.Constant(value=None, kind=None) for d in node.args.kw_defaults]
    module = gast.Module(body=[node], type_ignores=[])
    first = analysis.params(node.args)[:1]
    sites: list = []
    passes = [
        _StripSignatureExtras(),
        Desugar(first[0] if first else None),
        LowerDelete(),
        CatchForFinally(),
        LowerReturns(),
        LowerBreakContinue(),
        LowerExpressions(sites),
        LowerCalls(),
        LowerStateAccess(code.co_freevars),
        LowerProtocols(),
        CheckContextManagers(),
        GuardHandlers(),
        LowerControlFlow(sites),
        BindUndefined(),
    ]
    for p in passes:
        module = p.visit(module)
    tree = ast.fix_missing_locations(gast.gast_to_ast(module))
    ast.increment_lineno(tree, line_offset)
    # Compiled from the tree, under the user's file name and lines: a traceback through
    # converted code, and the op-creation stack TensorFlow keeps, point at the user's line.
    compiled = parse.compile_tree(tree, filename)
    registry.record(compiled)
    source = with_user_lines(unparse(tree).strip() + "\n", tree, os.path.basename(filename))
    _code_cache[key] = (source, compiled, tuple(sites))
    return _code_cache[key]


def own_codes(fn: types.FunctionType) -> frozenset[types.CodeType]:
    """The code objects of ``fn``'s conversion (its function and the block functions in it),
    to tell its own frames in a traceback from its callees'."""
    return frozenset(registry.code_objects(_compiled(fn)[1]))


def with_user_lines(source: str, tree: ast.AST, filename: str) -> str:
    """``source`` with ``# file.py:LINE`` after each line where a new user line begins.

    The unparsed text is parsed again and its statements are matched, in order, with the
    compiled tree's, whose positions are the user's.
    """
    lines = source.splitlines()
    generated = [n for n in ast.walk(parse.source_tree(source)) if isinstance(n, ast.stmt)]
    original = [n for n in ast.walk(tree) if isinstance(n, ast.stmt)]
    if len(generated) != len(original):
        return source
    user_line = {}
    for g, o in zip(generated, original):
        user_line.setdefault(g.lineno, o.lineno)
    previous = None
    for number in sorted(user_line):
        if user_line[number] != previous:
            previous = user_line[number]
            lines[number - 1] += f"  # {filename}:{previous}"
    return "\n".join(lines) + "\n"


def converted_function(fn: types.FunctionType, runtime: types.ModuleType) -> types.FunctionType:
    """The converted version of ``fn``, bound to ``fn``'s globals, closure and defaults.

    ``runtime`` is the namespace the generated code calls as ``_jn`` (``janus.lowering.ops``);
    it is passed in, so that the converter does not depend on the lowering (nor on TensorFlow).
    """
    hit = _fn_cache.get(fn)
    if hit is not None:
        return hit
    _, compiled, sites = _compiled(fn)
    namespace = {"_jn": runtime, "_jn_g": fn.__globals__, "_jn_c": fn.__closure__ or (),
                 "_jn_sites": sites, "__builtins__": builtins}
    exec(compiled, namespace)  # noqa: S102 - our own generated code
    # taken out of the namespace that is its globals (a cycle would keep it, and the user's
    # closure cells it holds, until Python's next full collection): the generated code reads
    # the user's globals through ``_jn_g``, never its own name
    out = namespace.pop(parse.LAMBDA_NAME if fn.__name__ == "<lambda>" else fn.__name__)
    out.__defaults__ = fn.__defaults__
    out.__kwdefaults__ = fn.__kwdefaults__
    _fn_cache[fn] = out  # weak on ``fn``: ``out`` must not refer to it, or neither is ever freed
    return out
