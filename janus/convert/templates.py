"""Build AST fragments from small source templates (readable pass code)."""
from __future__ import annotations

import copy
import textwrap

import gast

from janus.convert.anno import Anno, getanno


class _Substitute(gast.NodeTransformer):
    def __init__(self, subs: dict):
        self.subs = subs

    def visit_Name(self, node: gast.Name):
        if node.id not in self.subs:
            return node
        value = self.subs[node.id]
        if isinstance(value, str):
            return gast.Name(id=value, ctx=node.ctx, annotation=None, type_comment=None)
        value = copy.deepcopy(value)
        if hasattr(value, "ctx"):
            _set_ctx(value, node.ctx)
        return value


def _set_ctx(node: gast.AST, ctx: gast.AST) -> None:
    node.ctx = type(ctx)()
    if isinstance(node, (gast.Tuple, gast.List)):
        for elt in node.elts:
            _set_ctx(elt, ctx)


_POSITIONS = ("lineno", "col_offset", "end_lineno", "end_col_offset")


def stmts(src: str, **subs) -> list[gast.stmt]:
    """Statements of ``src`` with names in ``subs`` replaced (by a name or an AST node).

    The template's own nodes carry no position (they take the user statement's line when
    the pipeline compiles); substituted user nodes keep theirs.
    """
    module = gast.parse(textwrap.dedent(src))
    for node in gast.walk(module):
        for attr in _POSITIONS:
            vars(node).pop(attr, None)  # an instance's own (some are class defaults, e.g. an except's name)
    return [_Substitute(subs).visit(s) for s in module.body]


def located(new: gast.AST, old: gast.AST) -> gast.AST:
    """``new`` at the source position of the user's node ``old`` (for tracebacks and explain)."""
    for attr in _POSITIONS:
        if getattr(old, attr, None) is not None:
            setattr(new, attr, getattr(old, attr))
    return new


def expr(src: str, **subs) -> gast.expr:
    return stmts(src, **subs)[0].value


def subscript_key(key: gast.expr) -> gast.expr:
    """The key of ``obj[key]`` as an expression of its own (a call's argument): a slice is
    ``slice(lo, hi, step)``, also inside a tuple key (``frame[4, 1:3]``), which Python's
    grammar allows only between brackets."""
    if isinstance(key, gast.Slice):
        return expr("slice(LO, HI, STEP)", LO=key.lower or const(None), HI=key.upper or const(None),
                    STEP=key.step or const(None))
    if isinstance(key, gast.Tuple):
        return gast.Tuple(elts=[subscript_key(e) for e in key.elts], ctx=gast.Load())
    return key


def name(id_: str, store: bool = False) -> gast.Name:
    return gast.Name(id=id_, ctx=gast.Store() if store else gast.Load(), annotation=None, type_comment=None)


def const(value) -> gast.Constant:
    return gast.Constant(value=value, kind=None)


def tuple_of(names: list[str], store: bool = False) -> gast.Tuple:
    ctx = gast.Store() if store else gast.Load()
    return gast.Tuple(elts=[name(n, store) for n in names], ctx=ctx)


def jn(attr: str) -> gast.Attribute:
    """``_jn.attr``: an operation of the generated code's runtime (``janus.lowering.ops``)."""
    return gast.Attribute(value=name("_jn"), attr=attr, ctx=gast.Load())


def is_jn_call(node: gast.AST) -> bool:
    func = getattr(node, "func", None)
    return isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) and func.value.id == "_jn"


def func_def(fname: str, args: list[str], body: list[gast.stmt]) -> gast.FunctionDef:
    arguments = gast.arguments(args=[gast.Name(id=a, ctx=gast.Param(), annotation=None, type_comment=None) for a in args],
                               posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    return gast.FunctionDef(name=fname, args=arguments, body=body or [gast.Pass()], decorator_list=[],
                            returns=None, type_comment=None, type_params=[])


def site_ref(sites: list, node: gast.AST) -> gast.expr:
    """``_jn_sites[i]`` for a node the user wrote (tagged by the pipeline), else ``None``."""
    info = getanno(node, Anno.SITE)
    if info is None:
        return const(None)
    sites.append(info)
    return expr(f"_jn_sites[{len(sites) - 1}]")
