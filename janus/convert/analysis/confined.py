"""Whether a method's effects are confined to its own object: the analysis behind Python
islands (:mod:`janus.lowering.islands`).

A method is *confined* when, as written, all it can change is the object it is called on,
by rebinding that object's attributes (``self.x = ...``) and by drawing from random number
generators the object holds (``self.rng.normal(...)``).  It prints nothing, writes no global
or closure variable, stores into nothing (no ``x[i] = ...``, no augmented assignment that
could change an array in place), deletes nothing, defines and imports nothing, and every
call it makes is to a builtin, a NumPy or ``math`` function, a method of the values it
computes, a draw from ``self.<name>``, or a method of its own (``self._observe()``, confined
in turn); which of those are pure is decided at run time, on the objects the names stand
for (``janus.lowering.islands``).  ``self`` is only ever the object of an attribute access:
passed on (``len(self)``, ``self + 1``), a builtin or operator could call its class's
methods.  Every branch counts, taken or not.  This module only reads the tree.
"""
from __future__ import annotations

import functools
import types
from dataclasses import dataclass, field

import gast

from janus.convert import parse
from janus.errors import ConversionError

_REFUSED = {
    gast.Global: "writes a global", gast.Nonlocal: "writes a closure variable", gast.Delete: "deletes",
    gast.Yield: "yields", gast.YieldFrom: "yields", gast.Await: "awaits", gast.With: "enters a context",
    gast.AsyncWith: "enters a context", gast.AugAssign: "assigns in place (+=)", gast.Import: "imports",
    gast.ImportFrom: "imports", gast.FunctionDef: "defines a function", gast.AsyncFunctionDef: "defines a function",
    gast.Lambda: "defines a lambda", gast.ClassDef: "defines a class", gast.AsyncFor: "iterates asynchronously",
    gast.Starred: "unpacks with *",
}


@dataclass(frozen=True)
class Confined:
    """What a confined method touches: ``writes``, the attributes of ``self`` it rebinds;
    ``draws``, the ``(attribute, method)`` pairs it calls on attributes of ``self``
    (``("rng", "normal")``: a draw when the attribute holds a random generator, else a method
    of the value); ``calls``, the dotted names it calls (``("np", "sin")``, ``("float",)``);
    ``methods``, the methods it calls on values it computed; ``globals``, the names it reads
    that are neither ``self`` nor local; ``helpers``, the methods of its own it calls
    (``self._observe()``), each of which must be confined in turn."""

    self_name: str
    writes: frozenset[str]
    draws: frozenset[tuple[str, str]]
    calls: frozenset[tuple[str, ...]]
    methods: frozenset[str]
    globals: frozenset[str]
    helpers: frozenset[str] = frozenset()


def confinement(node: gast.FunctionDef) -> Confined | str:
    """The :class:`Confined` summary of method ``node``, or why its effects may reach
    beyond its object."""
    params = node.args.posonlyargs + node.args.args
    if not params:
        return "is not a method"
    me = params[0].id
    nodes = list(gast.walk(gast.Module(body=node.body, type_ignores=[])))
    local = {a.id for a in params[1:] + node.args.kwonlyargs} | {a.id for a in (node.args.vararg, node.args.kwarg) if a}
    local |= {n.id for n in nodes if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
    if me in local:
        return f"rebinds {me}"
    if any(isinstance(n, gast.Name) and n.id == me and not _attribute_base(n, nodes) for n in nodes):
        return f"passes {me} on (a builtin or operator could call its methods)"
    uses = _Uses(me, local)
    for n in nodes:
        refused = _REFUSED.get(type(n)) or uses.visit(n)
        if refused:
            return refused
    return uses.summary()


@dataclass
class _Uses:
    """What a method's body does with its object and names, gathered node by node."""

    me: str
    local: set
    writes: set = field(default_factory=set)
    draws: set = field(default_factory=set)
    calls: set = field(default_factory=set)
    methods: set = field(default_factory=set)
    reads: set = field(default_factory=set)
    helpers: set = field(default_factory=set)

    def visit(self, n: gast.AST) -> str | None:
        """Record node ``n``; why the method is not confined, if ``n`` says so."""
        if isinstance(n, (gast.Subscript, gast.Attribute)) and isinstance(n.ctx, (gast.Store, gast.Del)):
            if not (isinstance(n, gast.Attribute) and isinstance(n.value, gast.Name) and n.value.id == self.me):
                return "stores into an object other than its own"
            self.writes.add(n.attr)
        elif isinstance(n, gast.Call):
            return self._call(n)
        elif isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and n.id not in self.local and n.id != self.me:
            self.reads.add(n.id)
        return None

    def _call(self, n: gast.Call) -> str | None:
        if any(k.arg is None or k.arg == "out" for k in n.keywords):
            return "passes **keywords or out="
        name = _dotted(n.func)
        if name is None and not isinstance(n.func, gast.Attribute):
            return "calls a computed callee"
        if name is not None and len(name) == 1 and name[0] in self.local:
            return f"calls {name[0]}, a local"
        if name is None or name[0] in self.local:
            self.methods.add(n.func.attr)  # a method of a value it computed
        elif name[0] != self.me:
            self.calls.add(name)
        elif len(name) == 2:
            self.helpers.add(name[1])
        elif len(name) == 3:
            self.draws.add(name[1:])
        else:
            return f"calls {'.'.join(name)}"
        return None

    def summary(self) -> Confined:
        return Confined(self.me, frozenset(self.writes), frozenset(self.draws), frozenset(self.calls),
                        frozenset(self.methods), frozenset(self.reads), frozenset(self.helpers))


def _attribute_base(name: gast.Name, nodes: list) -> bool:
    """``name`` is the object of an attribute access (``self.x``), not a value passed on."""
    return any(isinstance(n, gast.Attribute) and n.value is name for n in nodes)


def _dotted(func: gast.AST) -> tuple[str, ...] | None:
    """``a.b.c`` as ``("a", "b", "c")``; None for anything else (``f(x).m``, ``x[0].m``)."""
    parts = []
    while isinstance(func, gast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, gast.Name):
        return None
    return (func.id, *reversed(parts))


@functools.lru_cache(maxsize=256)
def confinement_of(fn: types.FunctionType) -> Confined | str:
    """:func:`confinement` of ``fn``'s source (cached per function)."""
    try:
        node, *_ = parse.function_ast(fn)
    except ConversionError as e:
        return str(e)
    return confinement(node)
