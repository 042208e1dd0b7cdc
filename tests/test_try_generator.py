"""Random ``try``/``except``/``else``/``finally`` statements, eagerly and through Janus.

Each program is generated from a seed: nested ``try`` statements with ``return``,
``raise``, ``break`` and ``continue`` under Python and tensor conditions in the body,
the handler, the ``else`` and the ``finally``, inside and outside loops, with appends to
a list in state and prints.  The harness compares results, exceptions, printed output
and state after every call of a changing sequence.  A program Janus runs eagerly is a
gap; a different answer is not (this generator found the ``else`` that ran after its
``try`` body returned).  Handlers and ``finally`` blocks log the locals, which must hold
what the ``if`` or loop body that raised had bound (tests/test_try.py).
"""
import random
import types

import numpy as np
import pytest
import tensorflow as tf

from harness import check, check_generated

PROGRAMS = 120
PER_TEST = 30


class _Gen:
    def __init__(self, seed: int):
        self.r = random.Random(seed)
        self.loops = 0

    def cond(self, loop_var: str | None) -> str:
        options = ["tf.reduce_sum(x) > 0.5", "k > 1", "k % 2 == 0", "tf.reduce_max(x) < 0.2"]
        if loop_var:
            options += [f"{loop_var} > 0", f"{loop_var} == 1"]
        return self.r.choice(options)

    def block(self, depth: int, loop_var: str | None, in_loop: bool, indent: str, size: int = 0) -> list[str]:
        out: list[str] = []
        for _ in range(size or self.r.randint(1, 2)):
            out += self.stmt(depth, loop_var, in_loop, indent)
        return out

    def stmt(self, depth: int, loop_var: str | None, in_loop: bool, indent: str) -> list[str]:
        kinds = ["acc", "log", "k", "print", "return", "raise"]
        if depth < 3:
            kinds += ["try", "try", "if"]
        if depth < 2:
            kinds.append("for")
        if in_loop:
            kinds += ["break", "continue"]
        kind = self.r.choice(kinds)
        inner = indent + "    "
        simple = {
            "acc": f"acc = acc + x * {self.r.choice(['0.5', '2.0', '1.0'])}",
            "log": f"self.log.append(('{self.r.choice('abc')}', k))",
            "k": "k = k + 1",
            "print": "print('at', k)",
        }
        exits = {"break": "break", "continue": "continue", "return": "return acc, k",
                 "raise": "raise ValueError('v' + str(k))"}
        if kind in simple:
            return [indent + simple[kind]]
        if kind in exits:
            return [f"{indent}if {self.cond(loop_var)}:", inner + exits[kind]]
        if kind == "if":
            return [f"{indent}if {self.cond(loop_var)}:"] + self.block(depth + 1, loop_var, in_loop, inner)
        if kind == "for":
            self.loops += 1
            var = f"i{self.loops}"
            return [f"{indent}for {var} in range({self.r.randint(1, 3)}):"] + self.block(depth + 1, var, True, inner)
        lines = [f"{indent}try:"] + self.block(depth + 1, loop_var, in_loop, inner)
        handled = self.r.random() < 0.6
        if handled:
            lines += [f"{indent}except ValueError as e:", f"{inner}self.log.append((str(e), k))"]
            if self.r.random() < 0.5:
                lines += self.block(depth + 1, loop_var, in_loop, inner, 1)
            if self.r.random() < 0.3:
                lines += [f"{indent}else:"] + self.block(depth + 1, loop_var, in_loop, inner, 1)
        if not handled or self.r.random() < 0.7:
            lines += [f"{indent}finally:", f"{inner}self.log.append(('f', k))"] \
                + self.block(depth + 1, loop_var, in_loop, inner)
        return lines

    def program(self) -> str:
        body = ["acc = x * 0.0", "k = self.k0"] + self.block(0, None, False, "", 3) + ["return acc, k"]
        return "\n".join(["class Prog:", "    def __init__(self):", "        self.log = []", "        self.k0 = 0", "",
                          "    def f(self, x):"] + ["        " + line for line in body]) + "\n"


def _calls(seed: int) -> list:
    r = np.random.RandomState(seed)
    calls = []
    for _ in range(8):
        x = tf.constant(r.uniform(-0.5, 0.6, size=3).astype(np.float32))

        def call(p, x=x, k0=int(r.randint(0, 4))):
            p.obj.k0 = k0  # a Python number in state that changes between calls
            return p.fn(x)
        calls.append(call)
    return calls


def _run(seed: int, mod, source: str) -> dict:
    def make(jit):
        cls = type("Prog", (mod.Prog,), {"f": jit(mod.Prog.f)})
        obj = cls()
        return types.SimpleNamespace(fn=obj.f, obj=obj, state=lambda: {"log": list(obj.log)})

    return check(make, _calls(seed), min_graph_calls=0)


@pytest.mark.parametrize("first", range(0, PROGRAMS, PER_TEST))
def test_random_try_statements_agree_with_eager(first):
    graph_programs = check_generated(range(first, first + PER_TEST), lambda seed: _Gen(seed).program(), _run)
    assert graph_programs >= PER_TEST // 2, f"only {graph_programs} of {PER_TEST} programs ran graphs"
