"""The pieces generated code of a split function is made of (:mod:`janus.convert.splitting`):
a segment's flagged returns, its eager version around the user's statements, the
driver's signature, positions at the user's lines.  No TensorFlow.
"""
from __future__ import annotations

import copy
import enum

import gast

from janus.convert import templates as T

RUNTIME = "_jn_rt"  # the driver's and eager versions' name for Janus's runtime namespace (UNDEF)


class Exit(enum.IntEnum):
    """How a flagged segment ended, the first item of what it returns (a plain int in the
    generated code: it is a graph output): ``(FELL_THROUGH, outputs)``, ``(RETURNED, value)``
    (``(RETURNED, value, outputs)`` when it catches), ``(RAISED, exception, outputs)``."""

    FELL_THROUGH = 0
    RETURNED = 1
    RAISED = 2


def deleted_if_undef(name: str) -> gast.stmt:
    """``if name is UNDEF: del name``: a local passed as not bound is unbound again."""
    return T.stmts(f"if {name} is {RUNTIME}.UNDEF:\n    del {name}")[0]


def undef_if_unbound(name: str) -> gast.stmt:
    """``try: name / except NameError: name = UNDEF``: an unbound local, given back as UNDEF."""
    return T.stmts(f"try:\n    {name}\nexcept NameError:\n    {name} = {RUNTIME}.UNDEF")[0]


class Flagged(gast.NodeTransformer):
    """``return e`` -> ``return (RETURNED, e)`` in the function's own scope; ``return
    (RETURNED, e, outputs)`` when ``outputs`` is given (a ``finally`` around the segment may read them),
    the possibly-unbound ones (``unbound``) rebound to ``UNDEF`` first."""

    def __init__(self, outputs: list[str] | None = None, unbound: list[str] = ()):
        self.outputs = outputs
        self.unbound = [n for n in unbound if outputs and n in outputs]

    def visit_Return(self, node: gast.Return):
        value = node.value if node.value is not None else T.const(None)
        if self.outputs is None:
            return T.located(gast.Return(value=gast.Tuple(elts=[T.const(int(Exit.RETURNED)), value],
                                                         ctx=gast.Load())), node)
        if not self.unbound:
            return at_user(gast.Return(value=gast.Tuple(elts=[T.const(int(Exit.RETURNED)), value,
                                                              T.tuple_of(self.outputs)], ctx=gast.Load())), node)
        out = [gast.Assign(targets=[T.name("_jn_value", store=True)], value=value, type_comment=None)]
        out += [undef_if_unbound(n) for n in self.unbound]
        out += T.stmts(f"return ({int(Exit.RETURNED)}, _jn_value, OUTS)", OUTS=T.tuple_of(self.outputs))
        return [at_user(o, node) for o in out]

    def visit_FunctionDef(self, node):
        return node

    visit_Lambda = visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef


def fell_through(outputs: gast.expr) -> gast.stmt:
    """``return (FELL_THROUGH, outputs)``: the end of a flagged segment."""
    return gast.Return(value=gast.Tuple(elts=[T.const(int(Exit.FELL_THROUGH)), outputs], ctx=gast.Load()))


def as_eager(body: list[gast.stmt], outputs: list[str], mode: str, catch: bool, maybe_undef: list[str],
              at: gast.AST) -> list[gast.stmt]:
    """A segment's eager version around ``body`` (the user's statements, or the driver of
    the segment split again): the inputs that arrive as ``UNDEF`` deleted first; for a
    flagged segment, ``return`` flagged and ``(0, outputs)`` at the end; for one that
    catches, what ``body`` raises returned with the outputs it bound; outputs left unbound
    given back as ``UNDEF``."""
    outs = T.tuple_of(outputs)
    prelude = [at_user(deleted_if_undef(n), at) for n in maybe_undef]
    rebind = [] if mode == "last" else [at_user(undef_if_unbound(n), at) for n in outputs if n in maybe_undef]
    if mode == "flagged":
        flagged = Flagged(outputs if catch else None, outputs)
        body = [r for s in body for r in _listed(flagged.visit(s))]
        tail = [fell_through(outs)]
    elif mode == "last":
        tail = []
    else:
        tail = [gast.Return(value=outs)] if outputs else []
    if catch:
        handler = T.stmts("try:\n    pass\nexcept BaseException as _jn_exc:\n"
                          f"    return ({int(Exit.RAISED)}, _jn_exc, OUTS)", OUTS=outs)[0]
        handler.body = body
        handler.handlers[0].body = [at_user(undef_if_unbound(n), at) for n in outputs] + handler.handlers[0].body
        body = [at_user(handler, at)]
    return prelude + body + rebind + [at_user(t, at) for t in tail]


def _listed(node: gast.AST | list) -> list:
    return node if isinstance(node, list) else [node]


def plain_signature(args: gast.arguments) -> gast.arguments:
    """The user's parameters without annotations; defaults are set on the function object."""
    args = copy.deepcopy(args)
    for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
        if a is not None:
            a.annotation = None
    args.defaults = [T.const(None) for _ in args.defaults]
    args.kw_defaults = [None if d is None else T.const(None) for d in args.kw_defaults]
    return args


def at_user(node: gast.AST, user: gast.AST) -> gast.AST:
    """A generated statement at ``user``'s position (its children too, where unset)."""
    for n in gast.walk(node):
        if getattr(n, "lineno", None) is None:
            T.located(n, user)
    return node
