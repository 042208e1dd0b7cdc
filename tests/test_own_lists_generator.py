"""Random steps that push, pop, index and measure a local stack under tensor conditions,
eagerly and through Janus: they must agree.

Each program is generated from a seed: a local list made from the input; ``if``s on tensor
conditions (the input's values, the list's length) and on Python numbers, nested, inside
and outside a ``for`` loop over a ``range`` or a ``while`` loop that pops the list down;
``append``, ``pop()``, ``[-1]``, ``[0]``, item assignment and ``len`` of the list, a Python
counter, an append to state of the list's length, sometimes an item of another shape
(which a list of changing length cannot carry) or an ``else`` that raises.  The inputs
change sign and size between calls, so both sides run and some calls pop an empty list
(``IndexError``, in eager as in Janus).  The harness compares results, exceptions, printed
output and state after every call.  A program Janus runs eagerly is a gap and allowed
here; a different answer is not.
"""
import random

import pytest
import tensorflow as tf

from harness import BlockGenerator, check, check_generated, generated_step, program_source, signed_vectors

PROGRAMS = 40
PER_TEST = 20


class _Gen(BlockGenerator):
    def __init__(self, seed: int):
        super().__init__(seed)

    def change(self) -> list[str]:
        return self.r.choice([
            ["stack.append(tf.tanh(y))"],
            ["stack.append(y * 0.5 + stack[0])"],
            ["y = stack.pop()"],
            ["y = stack.pop() + y"],
            ["stack[-1] = stack[-1] + 1.0"],
            ["stack[0] = y"],
            ["k = k + len(stack)"],
            ["k += 1"],
        ] + ([["stack.append(tf.concat([y, y], 0))"]] if self.r.random() < 0.1 else []))

    def use(self) -> list[str]:
        return self.r.choice([
            ["y = stack[-1] * 2.0"],
            ["y = y + stack[0]"],
            ["s = s + tf.reduce_sum(stack[-1])"],
        ])

    def leaf(self, roll: float) -> list[str]:
        return self.change() if roll < 0.8 else self.use()

    def branch(self) -> list[str]:
        cond = self.r.choice(["tf.reduce_sum(y) > 0.5", "tf.reduce_max(x) > 0.8", "s < 0.5", "len(stack) > 2",
                              "k % 2 == 0", "tf.reduce_min(stack[-1]) < 0.0"])
        lines = self.nested(f"if {cond}:", self.r.randint(1, 3))
        roll = self.r.random()
        if roll < 0.1:
            lines += ["else:", "    raise ValueError('refused')"]
        elif roll < 0.6:
            lines += self.nested("else:", self.r.randint(1, 2))
        return lines

    def loop(self) -> list[str]:
        self.loops += 1
        if self.r.random() < 0.3:  # a tf.while_loop where the list's length is the graph's
            return ["while len(stack) > 2:", "    y = stack.pop() + y",
                    "    stack[-1] = stack[-1] * 0.5" if self.r.random() < 0.5 else "    k += 1"]
        return self.nested(f"for j in range({self.r.randint(2, 4)}):", self.r.randint(1, 3))

    def program(self) -> str:
        first = self.r.choice(["stack = [x]", "stack = [x, x * 2.0]", "stack = [x * 0.5, x, -x]"])
        body = ["y = x * 1.0", "s = tf.reduce_sum(x)", "k = 0", first] + self.branch() \
            + self.block(self.r.randint(1, 4)) + ["self.log.append(len(stack))"]
        ret = self.r.choice(["stack[-1], k", "y + stack[0], len(stack)", "s + tf.reduce_sum(stack[-1]), k"])
        return program_source(["self.log = []"], "x", body, ret)


def _calls(seed: int) -> list:
    return signed_vectors(random.Random(seed * 13 + 7), 12)


def _run(seed: int, mod, source: str) -> dict:
    return check(generated_step(mod, lambda p: {"log": list(p.log)}), _calls(seed), min_graph_calls=0)


@pytest.mark.parametrize("first", range(0, PROGRAMS, PER_TEST))
def test_random_steps_changing_a_local_stack_in_tensor_branches_agree_with_eager(first):
    graph_programs = check_generated(range(first, first + PER_TEST), lambda seed: _Gen(seed).program(), _run)
    assert graph_programs >= PER_TEST // 2, f"only {graph_programs} of {PER_TEST} programs ran graphs"
