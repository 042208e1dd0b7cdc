"""Differential testing: random small programs, eagerly and through Janus, must agree.

Each program is generated from a seed: closures over variables the body rebinds, loops
over Python lists, ranges, tensors and datasets, ``while`` loops, asymmetric branches on Python
and tensor conditions, ``break``/``continue``, early ``return`` and a ``raise`` on some calls;
a NumPy scalar argument that changes at every call meets tensors (fed) and Python numbers
(a value) in them; a small integer tensor drives Python logic through ``int()`` (its value
specialized: ``janus.trace.known_values``).  The harness runs
the same changing call sequence eagerly and through Janus and compares results,
exceptions, printed output and state after every call.  A program Janus does not
convert is a gap and allowed here; a different answer is not.
"""
import random

import numpy as np
import pytest
import tensorflow as tf

from harness import check, fresh_module

PROGRAMS = 40


class _Gen:
    def __init__(self, seed: int):
        self.r = random.Random(seed)
        self.loops = 0

    def const(self) -> str:
        return self.r.choice(["1", "2", "3", "0.5", "1.5"])

    def cond(self, loop_var: str | None) -> str:
        options = ["tf.reduce_sum(x) > 1.0", "n % 2 == 0", "k > 2", "tf.reduce_max(x) < 0.5",
                   "len(xs) > 2", "tf.reduce_sum(acc) > 3.0", "int(t[0]) > 1", "int(t[1]) % 2 == 0"]
        if loop_var:
            options += [f"{loop_var} > 1", f"{loop_var} % 2 == 0"]
        return self.r.choice(options)

    def expr(self, loop_var: str | None) -> str:
        options = [f"x * {self.const()}", "tf.reduce_sum(x)", "g()", f"float(k) * {self.const()}", "x + acc * 0.5",
                   "x * w", "w * acc", f"w * {self.const()}", "x * float(int(t[2]) + 1)"]
        if loop_var:
            options += [f"x * float({loop_var})", f"{loop_var} * {self.const()}"]
        return self.r.choice(options)

    def block(self, depth: int, loop_var: str | None, in_loop: bool, indent: str) -> list[str]:
        out = []
        for _ in range(self.r.randint(1, 3)):
            out += self.stmt(depth, loop_var, in_loop, indent)
        return out

    def stmt(self, depth: int, loop_var: str | None, in_loop: bool, indent: str) -> list[str]:
        kinds = ["acc", "acc", "k"]
        if depth < 2:
            kinds += ["if", "for", "while"]
        if in_loop:
            kinds += ["break", "continue"]
        if depth > 0:
            kinds += ["return", "raise"]
        kind = self.r.choice(kinds)
        inner = indent + "    "
        if kind == "acc":
            return [f"{indent}acc = acc + {self.expr(loop_var)}"]
        if kind == "k":
            return [f"{indent}k = k + {self.r.choice(['1', '2'])}"]
        if kind == "break":
            return [f"{indent}if {self.cond(loop_var)}:", f"{inner}break"]
        if kind == "continue":
            return [f"{indent}if {self.cond(loop_var)}:", f"{inner}continue"]
        if kind == "return":
            return [f"{indent}if {self.cond(loop_var)}:", f"{inner}return acc, k"]
        if kind == "raise":  # some calls raise: the others keep their graphs
            return [f"{indent}if {self.r.choice(['n == 3', 'k > 4', 'len(xs) == 3'])}:",
                    f"{inner}raise ValueError('raised at ' + str(k))"]
        if kind == "if":
            lines = [f"{indent}if {self.cond(loop_var)}:"] + self.block(depth + 1, loop_var, in_loop, inner)
            if self.r.random() < 0.5:
                lines += [f"{indent}else:"] + self.block(depth + 1, loop_var, in_loop, inner)
            return lines
        self.loops += 1
        var = f"v{self.loops}"
        if kind == "for":
            source = self.r.choice(["xs", "range(n)", "x", "range(len(xs))", "ds", "range(int(t[0]))", "t"])
            return [f"{indent}for {var} in {source}:"] + self.block(depth + 1, var, True, inner)
        counter = f"c{self.loops}"
        return ([f"{indent}{counter} = 0", f"{indent}while {counter} < n:", f"{inner}{counter} = {counter} + 1"]
                + self.block(depth + 1, counter, True, inner))

    def program(self) -> str:
        body = ["    acc = tf.zeros([3])", f"    k = {self.r.randint(0, 3)}"]
        if self.r.random() < 0.6:
            body.append(f"    g = lambda: float(k) * {self.const()}")
        else:
            body += ["    def g():", f"        return float(k) + {self.const()}"]
        body += self.block(0, None, False, "    ")
        body.append("    return acc, k")
        return "import tensorflow as tf\n\n\ndef f(x, xs, n, ds, w, t):\n" + "\n".join(body) + "\n"


def _calls(seed: int) -> list[tuple]:
    """Eight calls: a fresh tensor, dataset and NumPy float32 every call; the list, the
    count and the integer tensor from a pool of two, so that graphs are reused and also
    missed (the last call's integer tensor is new)."""
    r = np.random.RandomState(seed)
    pool = [([int(v) for v in r.randint(0, 4, size=2 + i)], int(r.randint(0, 4))) for i in range(2)]
    ints = [r.randint(0, 4, size=3).astype(np.int32) for _ in range(3)]
    calls = []
    for i in range(8):
        x = tf.constant(r.uniform(-1.0, 1.0, size=3).astype(np.float32))
        xs, n = pool[0] if i < 5 else pool[i % 2]
        ds = tf.data.Dataset.from_tensor_slices(tf.constant(r.uniform(-1.0, 2.0, size=1 + i % 4).astype(np.float32)))
        t = tf.constant(ints[2] if i == 7 else ints[0] if i < 5 else ints[i % 2])
        calls.append((x, list(xs), n, ds, np.float32(r.uniform(0.5, 1.5)), t))
    return calls


_graph_calls: dict[int, int] = {}


def _run_program(seed: int) -> None:
    source = _Gen(seed).program()

    def make(jit):
        mod = fresh_module(source)
        return type("P", (), {"fn": staticmethod(jit(mod.f))})

    try:
        total = check(make, _calls(seed), min_graph_calls=0)
    except AssertionError as e:
        raise AssertionError(f"program {seed}:\n{source}\n{e}") from None
    _graph_calls[seed] = total["graph_calls"]


@pytest.mark.parametrize("seed", range(PROGRAMS))
def test_random_program_agrees_with_eager(seed):
    _run_program(seed)


def test_most_random_programs_run_as_graphs():
    """The comparison is not vacuous: most programs convert and run graphs."""
    for seed in range(PROGRAMS):
        if seed not in _graph_calls:
            _run_program(seed)
    converted = sum(1 for n in _graph_calls.values() if n > 0)
    assert converted >= PROGRAMS * 3 // 4, _graph_calls
