"""Turn ``if``, ``while`` and ``for`` into calls of ``janus.lowering.ops`` with function bodies.

Each block becomes a nested function taking and returning the variables it
modifies that are live (the analysis annotated which), e.g. for a loop::

    while i < n:                   def _jn_while_test_3(i, s):
        s = s + x[i]                   return i < n
        i = i + 1          ==>     def _jn_while_body_3(i, s):
                                       s = s + x[i]
                                       i = i + 1
                                       return (i, s)
                                   (i, s) = _jn.while_stmt(_jn_while_test_3, _jn_while_body_3, (i, s), ('i', 's'))

At trace time the operation runs the block in Python when the condition is a Python
value, and builds ``tf.cond`` / ``tf.while_loop`` when it is a tensor.

Inside a ``try``, an exception leaving a block must not lose what the block rebound
before it raised (eager's ``except`` or ``finally`` sees it): each block function records
its locals on the exception as it leaves, and the statement that called the operation
rebinds every variable the block may rebind from that record before the exception goes
on (``janus.lowering.escapes``)::

        try:                              _jn_test_1 = k == 0
            if k == 0:                    try:
                y = y + 1.0       ==>         (y,) = _jn.if_stmt(_jn_test_1, _jn_if_1, ...)
                raise E                   except BaseException as _jn_escape_1:
        except E:                             (y,) = _jn.escaped(_jn_escape_1, ('y',))
            log(y)                            raise

An own list of the function (``analysis.own_lists``: a local list nothing else can see)
that a block changes in place is passed in and out like a variable it rebinds, and the
block starts by taking copies of its own (``_jn.own_lists``), so that each side of a
tensor conditional, traced in turn, changes its own copy::

    if t == SHIFT:                        def _jn_if_1(buffer, stack):
        stack.append(buffer.pop())            (buffer, stack) = _jn.own_lists(buffer, stack)
                                  ==>         _jn.call(_jn.ld_attr(stack, 'append'), ...)
                                              return (buffer, stack)

The operation is told which of its outputs are own lists (``lists=``): a conditional
whose sides leave one at different lengths carries it as a list the graph computes.

A variable that a closure of the function reads (a cell) is never passed in or out:
the block functions declare it ``nonlocal`` and rebind the cell itself, so a closure
called inside or after the block sees its current value, as in eager Python.  The
operation is told which cells the block rebinds (``cells=``): a tensor-dependent
construct cannot carry them, so it refuses the conversion.
"""
from __future__ import annotations

import gast

from janus.convert import analysis
from janus.convert import templates as T
from janus.convert.analysis.own_lists import MUTATORS
from janus.convert.anno import Anno, getanno

_GENERATED = ("_jn_if_", "_jn_else_", "_jn_while_", "_jn_for_")


def _modified(stmts) -> set[str]:
    """Variables a block rebinds (not the name of an ``except ... as e``, unbound after its handler)."""
    caught = {n.name.id for s in stmts for n in gast.walk(s)
              if isinstance(n, gast.ExceptHandler) and isinstance(n.name, gast.Name)}
    return {n for n in analysis.assigned(stmts) if not n.startswith(_GENERATED) and n not in caught}


def _changed_lists(stmts, own: frozenset[str]) -> set[str]:
    """Own lists the block changes in place in its own code (a list mutator called on one, an
    item assigned); a nested block copies and hands back what it changes itself."""
    found = set()
    for node in analysis.scope_nodes(stmts):
        if not (T.is_jn_call(node) and node.args):
            continue
        target = node.args[0]
        if node.func.attr == "call" and T.is_jn_call(target) and target.func.attr == "ld_attr" \
                and isinstance(target.args[1], gast.Constant) and target.args[1].value in MUTATORS:
            target = target.args[0]
        elif node.func.attr != "st_subscr":
            continue
        if isinstance(target, gast.Name) and target.id in own:
            found.add(target.id)
    return found


def _with_return(stmts: list, outs: list[str]) -> list:
    """The block followed by ``return (outs...)``, unless it ends by raising."""
    if stmts and isinstance(stmts[-1], gast.Raise):
        return stmts
    return stmts + [gast.Return(value=T.tuple_of(outs))]


def _names(names: list[str]) -> gast.Tuple:
    """``('a', 'b')``: variable names as the runtime's argument."""
    return gast.Tuple(elts=[T.const(n) for n in names], ctx=gast.Load())


def _block_fn(fname: str, args: list[str], body: list, cells: list[str], escaping: bool = False,
              copies: list[str] = ()) -> gast.FunctionDef:
    """A generated block function; it rebinds the cells ``cells`` of the enclosing function.
    ``escaping``: an exception leaving it takes its locals along; ``copies``: own lists it
    changes, which it copies first."""
    if copies:
        body = [gast.Assign(targets=[T.tuple_of(copies, store=True)],
                            value=gast.Call(func=T.jn("own_lists"), args=[T.name(c) for c in copies], keywords=[]),
                            type_comment=None)] + body
    if escaping:
        (guarded,) = T.stmts("""
            try:
                pass
            except BaseException as _jn_escape:
                _jn.block_left(_jn_escape)
                raise
        """)
        guarded.body = body
        body = [guarded]
    if cells:
        body = [gast.Nonlocal(names=list(cells))] + body
    return T.func_def(fname, args, body)


def _rebinding(call: gast.stmt, n: int, names: list[str]) -> gast.stmt:
    """``call`` (the operation running the blocks) whose exception first rebinds ``names``
    to what the blocks had bound when it left them."""
    (guarded,) = T.stmts(f"""
        try:
            pass
        except BaseException as _jn_escape_{n}:
            targets = _jn.escaped(_jn_escape_{n}, names)
            raise
    """, targets=T.tuple_of(names), names=_names(names))
    guarded.body = [call]
    return guarded


class LowerControlFlow(gast.NodeTransformer):
    def __init__(self, sites: list):
        self.counter = 0
        self.sites = sites
        self.cellvars: list[set[str]] = []
        self.own: list[frozenset[str]] = []  # per function being visited: its own lists
        self.trys: list[int] = []  # per function being visited: the ``try`` statements around

    def visit_FunctionDef(self, node: gast.FunctionDef):
        analysis.annotate_liveness(node)
        cells = getanno(node, Anno.CELLVARS, set())
        self.cellvars.append(cells)
        self.own.append(getanno(node, Anno.OWN_LISTS, frozenset()))
        self.trys.append(0)
        try:
            self.generic_visit(node)
        finally:
            self.cellvars.pop()
            self.own.pop()
            self.trys.pop()
        # A cell only a block binds must still be a local of this function for ``nonlocal``.
        unbound = sorted(cells - set(analysis.params(node.args)) - analysis.assigned(node.body))
        if unbound:
            node.body = T.stmts("\n".join(f"{name} = _jn.UNDEF" for name in unbound)) + node.body
        return node

    def visit_Try(self, node: gast.AST):
        self.trys[-1] += 1
        try:
            self.generic_visit(node)
        finally:
            self.trys[-1] -= 1
        return node

    visit_TryStar = visit_Try

    def _in_try(self) -> bool:
        """Is the statement being lowered inside a ``try`` of its own function?"""
        return bool(self.trys) and self.trys[-1] > 0

    def _cells(self, stmts: list) -> list[str]:
        """Cells of the enclosing function that ``stmts`` rebind (nested blocks included)."""
        return sorted(analysis.assigned(stmts) & self.cellvars[-1]) if self.cellvars else []

    def _changed(self, *blocks: list) -> set[str]:
        """Own lists of the function being visited that ``blocks`` change in place."""
        own = self.own[-1] if self.own else frozenset()
        return set().union(*(_changed_lists(b, own) for b in blocks))

    def _call(self, op: str, args: list, cells: list[str], lists: list[str] = ()) -> gast.Call:
        keywords = [gast.keyword(arg="cells", value=_names(cells))] if cells else []
        if lists:
            keywords.append(gast.keyword(arg="lists", value=_names(lists)))
        return gast.Call(func=T.jn(op), args=args, keywords=keywords)

    def _next(self) -> int:
        self.counter += 1
        return self.counter

    def _assign_result(self, outs: list[str], call: gast.Call) -> gast.stmt:
        if not outs:
            return gast.Expr(value=call)
        return gast.Assign(targets=[T.tuple_of(outs, store=True)], value=call, type_comment=None)

    def visit_If(self, node: gast.If):
        cells = self._cells(node.body + node.orelse)
        self.generic_visit(node)
        n = self._next()
        changed = self._changed(node.body, node.orelse)
        mod = (_modified(node.body) | _modified(node.orelse) | changed) - set(cells)
        live_out = getanno(node, Anno.LIVE_OUT)
        outs = sorted(mod & live_out)
        ins = sorted(mod & (live_out | getanno(node, Anno.LIVE_BODY) | getanno(node, Anno.LIVE_ORELSE)))
        copies = [name for name in ins if name in changed]
        escaping = self._in_try() and bool(mod)
        body = _block_fn(f"_jn_if_{n}", ins, _with_return(node.body, outs), cells, escaping, copies)
        orelse = _block_fn(f"_jn_else_{n}", ins, _with_return(node.orelse, outs), cells,
                           escaping and bool(node.orelse), copies)
        test, before = self._evaluated_first(node.test, f"_jn_test_{n}", escaping)
        call = self._call("if_stmt", [test, T.name(body.name), T.name(orelse.name), T.tuple_of(ins),
                                      _names(outs), T.site_ref(self.sites, node)], cells,
                          [name for name in outs if name in self.own[-1]])
        result = self._assign_result(outs, call)
        if escaping:
            result = _rebinding(result, n, sorted(mod))
        return [T.located(n, node) for n in (body, orelse, *before, result)]

    @staticmethod
    def _evaluated_first(expr: gast.expr, name: str, escaping: bool) -> tuple[gast.expr, list]:
        """``expr`` as the operation's argument: evaluated into ``name`` before the statement
        when the operation's exceptions rebind variables (only the blocks' may)."""
        if not escaping:
            return expr, []
        return T.name(name), [gast.Assign(targets=[T.name(name, store=True)], value=expr, type_comment=None)]

    def visit_While(self, node: gast.While):
        cells = self._cells(node.body)
        self.generic_visit(node)
        n = self._next()
        changed = self._changed(node.body)
        mod = (_modified(node.body) | changed) - set(cells)
        carried = sorted(mod & (getanno(node, Anno.LIVE_HEAD) | getanno(node, Anno.LIVE_BODY)))
        escaping = self._in_try() and bool(mod)
        test = _block_fn(f"_jn_while_test_{n}", carried, [gast.Return(value=node.test)], [], escaping)
        body = _block_fn(f"_jn_while_body_{n}", carried, node.body + [gast.Return(value=T.tuple_of(carried))], cells,
                         escaping, [name for name in carried if name in changed])
        call = self._call("while_stmt", [T.name(test.name), T.name(body.name), T.tuple_of(carried),
                                         _names(carried), T.site_ref(self.sites, node)], cells)
        result = self._assign_result(carried, call)
        if escaping:
            result = _rebinding(result, n, sorted(mod))
        return [T.located(n, node) for n in (test, body, result)] + node.orelse

    def visit_For(self, node: gast.For):
        cells = self._cells([node.target] + node.body)
        self.generic_visit(node)
        n = self._next()
        target = analysis.assigned([node.target])
        live_loop = getanno(node, Anno.LIVE_HEAD) | getanno(node, Anno.LIVE_BODY)
        changed = self._changed(node.body)
        mod = (_modified(node.body) | target | changed) - set(cells)
        carried = sorted(mod & live_loop - (target - getanno(node, Anno.LIVE_OUT)))
        escaping = self._in_try() and bool(mod)
        item = f"_jn_item_{n}"
        bind = gast.Assign(targets=[node.target], value=T.name(item), type_comment=None)
        body = _block_fn(f"_jn_for_body_{n}", [item] + carried,
                         [bind] + node.body + [gast.Return(value=T.tuple_of(carried))], cells, escaping,
                         [name for name in carried if name in changed])
        out = [body]
        extra = getanno(node, Anno.EXTRA_TEST)
        if extra is not None:
            test = _block_fn(f"_jn_for_test_{n}", carried, [gast.Return(value=extra)], [], escaping)
            out.insert(0, test)
            extra_arg = T.name(test.name)
        else:
            extra_arg = T.const(None)
        iterable, before = self._evaluated_first(node.iter, f"_jn_iter_{n}", escaping)
        call = self._call("for_stmt", [iterable, extra_arg, T.name(body.name), T.tuple_of(carried),
                                       _names(carried), T.site_ref(self.sites, node)], cells)
        result = self._assign_result(carried, call)
        if escaping:
            result = _rebinding(result, n, sorted(mod))
        return [T.located(n, node) for n in out + before + [result]] + node.orelse
