"""Lower ``break``, ``continue`` and loop ``else`` to flags.

After this pass loop bodies are plain blocks, so the control-flow pass can turn
them into functions.  For loop number N::

    while test:                        _jn_brk_N = False
        if c: break         ==>        while not _jn_brk_N and test:
        x = f(x)                           _jn_cont_N = False   (only if continue is used)
    else:                                  if c: _jn_brk_N = True
        done()                             if not _jn_brk_N: x = f(x)
                                       if not _jn_brk_N: done()

A ``for`` loop gets the condition as its ``EXTRA_TEST`` annotation, checked before each item.

A ``finally`` block runs in full after a ``break`` or ``continue`` of its ``try``: where
it has an exit of its own (whose flags would guard its statements), the pending flags
are set aside while it runs and restored after it unless it left the loop itself::

    try:                            try:
        break                           _jn_brk_1 = True
    finally:               ==>      finally:
        if c: continue                  _jn_brk_1_pending_1 = _jn_brk_1; _jn_brk_1 = False  (and cont)
        log()                           if c: _jn_cont_1 = True
                                        if not _jn_brk_1 and not _jn_cont_1:
                                            log(); _jn_brk_1 = _jn_brk_1_pending_1  (and cont)
"""
from __future__ import annotations

import gast

from janus.convert import templates as T
from janus.convert.anno import Anno, setanno


def _find(nodes, kinds) -> bool:
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if isinstance(node, kinds):
            return True
        if isinstance(node, (gast.For, gast.While, gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)):
            continue
        stack.extend(gast.iter_child_nodes(node))
    return False


class LowerBreakContinue(gast.NodeTransformer):
    def __init__(self):
        self.counter = 0
        self.pending = 0

    def visit_While(self, node):
        return self._loop(node)

    def visit_For(self, node):
        return self._loop(node)

    def _loop(self, node):
        self.generic_visit(node)  # inner loops first
        has_break = _find(node.body, gast.Break)
        has_cont = _find(node.body, gast.Continue)
        if not has_break and not has_cont:
            return node
        self.counter += 1
        brk, cont = f"_jn_brk_{self.counter}", f"_jn_cont_{self.counter}"
        flags = ([brk] if has_break else []) + ([cont] if has_cont else [])
        node.body = ((T.stmts(f"{cont} = False") if has_cont else [])
                     + self._block(node.body, brk, cont, flags))
        pre: list = []
        post: list = []
        if has_break:
            pre = T.stmts(f"{brk} = False")
            if isinstance(node, gast.While):
                node.test = gast.BoolOp(op=gast.And(), values=[T.expr(f"not {brk}"), node.test])
            else:
                setanno(node, Anno.EXTRA_TEST, T.expr(f"not {brk}"))
            if node.orelse:
                guarded = T.stmts(f"if not {brk}:\n    pass")[0]
                guarded.body = node.orelse
                post = [guarded]
                node.orelse = []
        elif node.orelse:
            post, node.orelse = node.orelse, []
        return pre + [node] + post

    def _block(self, stmts, brk, cont, flags) -> list:
        out: list = []
        for i, s in enumerate(stmts):
            if isinstance(s, gast.Break):
                out += [T.located(n, s) for n in T.stmts(f"{brk} = True")]
                return out
            if isinstance(s, gast.Continue):
                out += [T.located(n, s) for n in T.stmts(f"{cont} = True")]
                return out
            if not _find([s], (gast.Break, gast.Continue)):
                out.append(s)
                continue
            if isinstance(s, gast.If):
                s.body = self._block(s.body, brk, cont, flags)
                s.orelse = self._block(s.orelse, brk, cont, flags)
            elif isinstance(s, gast.With):
                s.body = self._block(s.body, brk, cont, flags)
            elif isinstance(s, gast.Try):
                pending = _find(s.body + s.handlers + s.orelse, (gast.Break, gast.Continue))
                body_exits = _find(s.body, (gast.Break, gast.Continue))
                s.body = self._block(s.body, brk, cont, flags)
                for handler in s.handlers:
                    handler.body = self._block(handler.body, brk, cont, flags)
                s.orelse = self._block(s.orelse, brk, cont, flags)
                if body_exits and s.orelse:  # ``else`` runs only when the ``try`` body ran to its end
                    guarded = T.stmts("if " + " and ".join(f"not {f}" for f in flags) + ":\n    pass")[0]
                    guarded.body = s.orelse
                    s.orelse = [guarded]
                s.finalbody = (self._finally(s.finalbody, brk, cont, flags) if pending
                               else self._block(s.finalbody, brk, cont, flags))
            out.append(s)
            rest = stmts[i + 1:]
            if rest:
                cond = " and ".join(f"not {f}" for f in flags)
                guarded = T.stmts(f"if {cond}:\n    pass")[0]
                guarded.body = self._block(rest, brk, cont, flags)
                out.append(guarded)
            return out
        return out

    def _finally(self, stmts, brk, cont, flags) -> list:
        """A ``finally`` block after a ``try`` that may have left the loop: it runs in full."""
        if not _find(stmts, (gast.Break, gast.Continue)):
            return self._block(stmts, brk, cont, flags)  # nothing in it is guarded by the flags
        self.pending += 1
        saved = {f: f"{f}_pending_{self.pending}" for f in flags}
        prologue = T.stmts("\n".join([f"{saved[f]} = {f}" for f in flags] + [f"{f} = False" for f in flags]))
        # The restore comes last: it is skipped where the finally left the loop itself.
        restore = T.stmts("\n".join(f"{f} = {saved[f]}" for f in flags))
        return prologue + self._block(stmts + restore, brk, cont, flags)
