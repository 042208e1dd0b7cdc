"""The conversion pipeline: parse, check, transform pass by pass, unparse, compile.

The passes run in this order, each needing what the earlier ones produced:

1. ``Desugar``            — explicit ``super()``, augmented assignment to state
2. ``LowerReturns``       — single exit; returns become a flag and a result
3. ``LowerBreakContinue`` — loop exits become flags
4. ``LowerExpressions``   — and/or/not, conditional expressions, assert, formatting
5. ``LowerCalls``         — every call through ``_jn.call``
6. ``LowerStateAccess``   — globals, closure cells, attributes, stores
7. ``LowerControlFlow``   — if/while/for become operations on block functions
8. ``BindUndefined``      — possibly-unassigned variables start as ``UNDEF``

The result is ordinary Python (``janus.explain`` shows it) that is traced into a
graph with AutoGraph off.
"""
from __future__ import annotations

import builtins
import linecache
import types
import weakref

import ast

import gast

import janus.ops
from janus.converter import analysis, parse, support
from janus.converter.unparse import unparse
from janus.converter.passes.break_continue import LowerBreakContinue
from janus.converter.passes.calls import LowerCalls
from janus.converter.passes.control_flow import LowerControlFlow
from janus.converter.passes.desugar import Desugar
from janus.converter.passes.expressions import LowerExpressions
from janus.converter.passes.returns import LowerReturns
from janus.converter.passes.state_access import LowerStateAccess
from janus.converter.passes.undefined import BindUndefined
from janus.errors import ConversionError

_code_cache: dict[types.CodeType, tuple[str, types.CodeType]] = {}
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


def convert_source(fn: types.FunctionType) -> str:
    """The generated source for ``fn`` (cached per code object)."""
    return _compiled(fn)[0]


def _compiled(fn: types.FunctionType) -> tuple[str, types.CodeType]:
    code = fn.__code__
    hit = _code_cache.get(code)
    if hit is not None:
        return hit
    node, filename, _, _ = parse.function_ast(fn)
    reason = support.unsupported_in(node)
    if reason:
        raise ConversionError(reason)
    node.decorator_list = []
    node.args.defaults = [gast.Constant(value=None, kind=None) for _ in node.args.defaults]
    node.args.kw_defaults = [None if d is None else gast.Constant(value=None, kind=None) for d in node.args.kw_defaults]
    module = gast.Module(body=[node], type_ignores=[])
    first = analysis.params(node.args)[:1]
    passes = [
        _StripSignatureExtras(),
        Desugar(first[0] if first else None),
        LowerReturns(),
        LowerBreakContinue(),
        LowerExpressions(),
        LowerCalls(),
        LowerStateAccess(code.co_freevars),
        LowerControlFlow(),
        BindUndefined(),
    ]
    for p in passes:
        module = p.visit(module)
    tree = ast.fix_missing_locations(gast.gast_to_ast(module))
    source = unparse(tree).strip() + "\n"
    virtual = f"<janus {fn.__qualname__} from {filename}:{code.co_firstlineno}>"
    linecache.cache[virtual] = (len(source), None, source.splitlines(True), virtual)
    compiled = compile(source, virtual, "exec")
    _code_cache[code] = (source, compiled)
    return source, compiled


def converted_function(fn: types.FunctionType) -> types.FunctionType:
    """The converted version of ``fn``, bound to ``fn``'s globals, closure and defaults."""
    hit = _fn_cache.get(fn)
    if hit is not None:
        return hit
    _, compiled = _compiled(fn)
    namespace = {"_jn": janus.ops, "_jn_g": fn.__globals__, "_jn_c": fn.__closure__ or (),
                 "__builtins__": builtins}
    exec(compiled, namespace)  # noqa: S102 - our own generated code
    out = namespace[parse.LAMBDA_NAME if fn.__name__ == "<lambda>" else fn.__name__]
    out.__defaults__ = fn.__defaults__
    out.__kwdefaults__ = fn.__kwdefaults__
    out.__janus_original__ = fn
    _fn_cache[fn] = out
    return out
