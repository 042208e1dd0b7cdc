"""Lower ``return`` inside control flow to a flag and a result variable.

After this pass a function has a single ``return`` at its end, so the control-flow
pass can turn any block into a function of the variables it modifies::

    if c:                      _jn_ret = None; _jn_done = False
        return a        ==>    if c: _jn_done = True; _jn_ret = a
    b = ...                    if not _jn_done: b = ...; _jn_done = True; _jn_ret = b
    return b                   return _jn_ret

A ``return`` inside a loop also sets the flag and leaves the loop with ``break``
(which the break/continue pass lowers in turn).  The value is computed before the
flag is set: a ``return E`` whose ``E`` raises into an ``except`` returns nothing.  The
``else`` of a ``try`` whose body may return runs only where the flag is not set.

A ``finally`` block runs in full whatever its ``try`` did, so a return pending from
the ``try`` must not skip it: where the flag would guard statements of the
``finally`` (it returns, or leaves the loop), the pending flag is set aside while it
runs and restored after it, unless the ``finally`` returned itself (its value wins)
or left the loop (the pending return is dropped)::

    try:                       try:
        return a                   _jn_ret = a; _jn_done = True
    finally:            ==>    finally:
        if c: return b             _jn_done_pending_1 = _jn_done; _jn_done = False
        log()                      if c: _jn_ret = b; _jn_done = True
                                   if not _jn_done: log(); _jn_done = _jn_done_pending_1  When every path ends in a return
the result starts out undefined rather than ``None``, which lets a tensor branch
carry it (the value is never observed where the flag is false).
"""
from __future__ import annotations

import gast

from janus.convert import templates as T
from janus.convert.passes.finally_exits import loop_exit_in

RET, DONE = "_jn_ret", "_jn_done"


def _has_return(nodes) -> bool:
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if isinstance(node, gast.Return):
            return True
        if isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)):
            continue
        stack.extend(gast.iter_child_nodes(node))
    return False


def _always_returns(stmts) -> bool:
    for s in stmts:
        if isinstance(s, (gast.Return, gast.Raise)):
            return True
        if isinstance(s, gast.If) and _always_returns(s.body) and _always_returns(s.orelse):
            return True
        if isinstance(s, gast.With) and _always_returns(s.body):
            return True
    return False


def _before_loop_exits(stmts: list, make) -> list:
    """``stmts`` with ``make()`` inserted before each ``break``/``continue`` leaving the enclosing loop."""
    out: list = []
    for s in stmts:
        if isinstance(s, (gast.Break, gast.Continue)):
            out += make()
        elif isinstance(s, (gast.If, gast.For, gast.While)):
            s.orelse = _before_loop_exits(s.orelse, make)
            if isinstance(s, gast.If):
                s.body = _before_loop_exits(s.body, make)
        elif isinstance(s, gast.With):
            s.body = _before_loop_exits(s.body, make)
        elif isinstance(s, gast.Try):
            s.body = _before_loop_exits(s.body, make)
            for handler in s.handlers:
                handler.body = _before_loop_exits(handler.body, make)
            s.orelse = _before_loop_exits(s.orelse, make)
            s.finalbody = _before_loop_exits(s.finalbody, make)
        out.append(s)
    return out


class LowerReturns(gast.NodeTransformer):
    def __init__(self):
        self.counter = 0
        self.init = "None"

    def visit_FunctionDef(self, node: gast.FunctionDef):
        self.generic_visit(node)  # nested defs first, each on its own
        body = node.body
        last_is_plain_return = bool(body) and isinstance(body[-1], gast.Return)
        if not _has_return(body[:-1]) and (last_is_plain_return or not _has_return(body[-1:])):
            return node
        init = "_jn.UNDEF" if _always_returns(body) else "None"
        self.init = init
        node.body = (T.stmts(f"{RET} = {init}\n{DONE} = False")
                     + self._block(body, in_loop=False)
                     + T.stmts(f"return {RET}"))
        return node

    def visit_Lambda(self, node):
        return node

    def _block(self, stmts, in_loop: bool) -> list:
        out: list = []
        for i, s in enumerate(stmts):
            if isinstance(s, gast.Return):
                value = s.value if s.value is not None else T.const(None)
                out += [T.located(n, s) for n in T.stmts(f"{RET} = VALUE\n{DONE} = True", VALUE=value)]
                if in_loop:
                    out.append(gast.Break())
                return out
            if not _has_return([s]):
                out.append(s)
                continue
            out.append(self._stmt(s, in_loop))
            rest = stmts[i + 1:]
            if in_loop:
                out += T.stmts(f"if {DONE}:\n    break")
            if rest:
                guarded = T.stmts(f"if not {DONE}:\n    pass")[0]
                guarded.body = self._block(rest, in_loop)
                out.append(guarded)
            return out
        return out

    def _stmt(self, s, in_loop: bool):
        if isinstance(s, gast.If):
            s.body = self._block(s.body, in_loop)
            s.orelse = self._block(s.orelse, in_loop)
        elif isinstance(s, (gast.For, gast.While)):
            s.body = self._block(s.body, in_loop=True)
            s.orelse = self._block(s.orelse, in_loop)
        elif isinstance(s, gast.With):
            s.body = self._block(s.body, in_loop)
        elif isinstance(s, gast.Try):
            pending = _has_return(s.body + s.handlers + s.orelse)
            body_returns = _has_return(s.body)
            s.body = self._block(s.body, in_loop)
            for handler in s.handlers:
                handler.body = self._block(handler.body, in_loop)
            s.orelse = self._block(s.orelse, in_loop)
            if body_returns and s.orelse:  # ``else`` runs only when the ``try`` body ran to its end
                guarded = T.stmts(f"if not {DONE}:\n    pass")[0]
                guarded.body = s.orelse
                s.orelse = [guarded]
            s.finalbody = self._finally(s.finalbody, in_loop) if pending else self._block(s.finalbody, in_loop)
        return s

    def _finally(self, stmts: list, in_loop: bool) -> list:
        """A ``finally`` block after a ``try`` that may have returned: it runs in full."""
        leaves_loop = in_loop and loop_exit_in(stmts)
        if not _has_return(stmts) and not leaves_loop:
            return self._block(stmts, in_loop)  # nothing in it is guarded by the flag
        self.counter += 1
        saved = f"{DONE}_pending_{self.counter}"
        if leaves_loop and self.init == "None":
            # The pending return is dropped: falling off the function's end must give None.
            stmts = _before_loop_exits(stmts, lambda: T.stmts(f"{RET} = None"))
        # The restore comes last in the block: it is skipped where the finally returned
        # (this pass's guard) or left the loop (the break/continue pass's guard).
        return (T.stmts(f"{saved} = {DONE}\n{DONE} = False")
                + self._block(stmts + T.stmts(f"{DONE} = {saved}"), in_loop))
