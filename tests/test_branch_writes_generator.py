"""Random steps that write Python state inside tensor-dependent branches, eagerly and through
Janus: they must agree.

Each program is generated from a seed: nested ``if``s on tensor conditions (with or without
``else``) and on a step counter, and ``while`` loops on a tensor condition, writing a float, an
int and a bool attribute, items of a dict attribute, reading them back (in the same side, in
the other side, after the branch or loop), appending and printing them (outside loops), and an
``assert`` that fails for some inputs after the writes.
The inputs change sign and size between calls, so both sides run.  The harness compares
results, exceptions, printed output and state (with the Python type of every number) after
every call.  A program Janus runs eagerly is a gap and allowed here; a different answer is not.
"""
import random

import pytest
import tensorflow as tf

from harness import BlockGenerator, check, check_generated, generated_step, program_source, signed_vectors

PROGRAMS = 60
PER_TEST = 20


class _Gen(BlockGenerator):
    def __init__(self, seed: int):
        super().__init__(seed)
        self.in_loop = False

    def write(self) -> list[str]:
        return self.r.choice([
            ["self.lr = self.lr * 0.5"],
            ["self.lr = self.lr + 0.25"],
            ["self.n += 1"],
            ["self.n = self.n - 2"],
            ["self.flag = not self.flag"],
            ["self.flag = True"],
            ["self.hist['n'] += 1"],
            ["self.hist['s'] = self.hist['s'] + 0.5"],
            ["self.t += 1"],
        ])

    def use(self) -> list[str]:
        effects = [] if self.in_loop else [["self.log.append(self.lr)"], ["print('n', self.n)"]]
        return self.r.choice([
            ["y = y * self.lr"],
            ["y = y + self.n"],
            ["y = y + self.hist['s']"],
            ["s = s + tf.reduce_sum(y)"],
        ] + effects)

    def leaf(self, roll: float) -> list[str]:
        return self.write() if roll < 0.75 else self.use()

    def branch(self) -> list[str]:
        cond = self.r.choice(["tf.reduce_sum(y) > 1.0", "s < 0.5", "tf.reduce_max(x) > 0.8", "self.t % 3 == 0"])
        lines = self.nested(f"if {cond}:", self.r.randint(1, 3))
        if self.r.random() < 0.5:
            lines += self.nested("else:", self.r.randint(1, 2))
        return lines

    def loop(self) -> list[str]:
        self.loops += 1
        self.depth += 1
        self.in_loop = True
        body = self.block(self.r.randint(1, 3))
        self.in_loop = False
        self.depth -= 1
        return (["i = tf.constant(0)", "while i < tf.cast(tf.reduce_sum(tf.abs(x)), tf.int32):"]
                + ["    " + line for line in body + ["i += 1"]])

    def program(self) -> str:
        body = ["self.t += 1", "y = x * 1.0", "s = tf.reduce_sum(x)"] + self.branch() + self.block(self.r.randint(1, 4))
        if self.r.random() < 0.3:
            body.append("assert tf.reduce_max(y) < 40.0, 'too large'")
        ret = self.r.choice(["y", "s + self.lr", "(y, self.n)", "tf.reduce_sum(y) * self.lr + self.hist['s']"])
        fields = ["self.t = 0", "self.lr = 1.0", "self.n = 0", "self.flag = False", "self.hist = {'n': 0, 's': 0.0}",
                  "self.log = []"]
        return program_source(fields, "x", body, ret)


def _calls(seed: int) -> list:
    return signed_vectors(random.Random(seed * 11 + 5), 10)


def _state(p) -> dict:
    return {"t": p.t, "lr": p.lr, "n": p.n, "flag": p.flag, "hist": dict(p.hist), "log": list(p.log)}


def _run(seed: int, mod, source: str) -> dict:
    return check(generated_step(mod, _state), _calls(seed), min_graph_calls=0)


@pytest.mark.parametrize("first", range(0, PROGRAMS, PER_TEST))
def test_random_steps_writing_state_in_tensor_branches_agree_with_eager(first):
    graph_programs = check_generated(range(first, first + PER_TEST), lambda seed: _Gen(seed).program(), _run)
    assert graph_programs >= PER_TEST * 9 // 10, f"only {graph_programs} of {PER_TEST} programs ran graphs"
