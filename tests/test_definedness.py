"""Definedness: variables that eager code leaves unbound on some paths, and loops that
both return and continue, convert (eager is the oracle)."""
from types import SimpleNamespace

import numpy as np
import tensorflow as tf

from harness import case, check


def vec(values):
    return tf.constant(np.array(values, dtype=np.float32))


def test_branch_inside_a_gradient_tape_assigns_on_both_sides():
    def make(jit):
        class Model:
            def __init__(self):
                self.w = tf.Variable([0.5, -0.5])

            @jit
            def step(self, x):
                with tf.GradientTape() as tape:
                    if tf.reduce_sum(x) > 0:
                        y = x * self.w
                    else:
                        y = x * 2.0 * self.w
                    loss = tf.reduce_sum(y * y)
                grad = tape.gradient(loss, self.w)
                self.w.assign_sub(0.1 * grad)
                return loss

        m = Model()
        return SimpleNamespace(fn=m.step, state=lambda: {"w": m.w})

    signs = [1, 1, 1, -1, 1, -1, -1, 1, -1, 1]
    total = check(make, [(vec([s * 1.0, s * 0.5 + 0.1 * i]),) for i, s in enumerate(signs)], min_graph_calls=5)
    assert total["conversions"] <= 2, (
        "the 3 profiled calls see only positive sums: one conversion after them, one more after the first negative sum"
        f" fails the speculated branch: {total}"
    )


def test_for_loop_with_continue_and_an_early_return():
    @case
    def f(xs, limit):
        total = tf.constant(0.0)
        for v in xs:
            if v < 0:
                continue
            total = total + v
            if total > limit:
                return total * 2.0
        return total

    calls = [([1.0, -2.0, 3.0, float(i % 2)], vec(3.5 + i % 3 * 5.0)) for i in range(8)]
    total = check(f, calls, min_graph_calls=4)
    assert total["conversions"] <= 3, (
        "the list's last float alternates (0.0, 1.0) and the limit decides whether the loop returns early: one "
        f"conversion after the 3 profiled calls, at most two more for a new value or a failed assumption: {total}"
    )


def test_nested_loops_with_return_and_continue():
    @case
    def f(grid, target):
        for row in range(3):
            for col in range(3):
                if (row + col) % 2 == 1:
                    continue
                if grid[row, col] > target:
                    return row * 3 + col
        return -1

    grid = tf.constant(np.arange(9, dtype=np.float32).reshape(3, 3))
    calls = [(grid * s, vec(t)) for s, t in [(1.0, 4.5), (1.0, 4.5), (1.0, 4.5), (1.0, 7.5), (2.0, 4.5),
                                             (1.0, 100.0), (1.0, 4.5), (0.5, 1.5)]]
    check(f, calls, min_graph_calls=2)


def test_variable_defined_on_one_side_and_read_only_there():
    @case
    def f(x, use_scale):
        if use_scale:
            scale = tf.reduce_max(x)
        out = x + 1.0
        if use_scale:
            out = out / scale
        return out

    calls = [(vec([1.0, float(i)]), i % 3 != 0) for i in range(9)]
    check(f, calls, min_graph_calls=4)


def test_return_from_inside_a_tensor_while_loop_with_continue():
    """The loop becomes a tf.while_loop that carries the return value from the start."""
    @case
    def f(x, limit):
        total = tf.constant(0.0)
        i = tf.constant(0)
        while i < tf.shape(x)[0]:
            v = x[i]
            i += 1
            if v < 0:
                continue
            total = total + v
            if total > limit:
                return total * 2.0
        return total

    calls = [(vec([1.0, -2.0, 3.0, float(k)]), vec(3.5 + (k % 3) * 2.0)) for k in range(9)]
    total = check(f, calls, min_graph_calls=5)
    assert total["conversions"] <= 2, (
        "the loop is a tf.while_loop carrying the return value: one conversion after the 3 profiled calls, at most one"
        f" more, not one per input: {total}"
    )


def test_search_loop_returns_a_python_int_index():
    @case
    def find(x, target):
        i = 0
        while i < tf.size(x):
            if x[i] == target:
                return i
            i += 1
        return -1

    x = tf.constant([3, 1, 4, 1, 5, 9, 2, 6])
    calls = [(x, tf.constant(t)) for t in (4, 9, 7, 3, 6, 8, 1, 2)]
    total = check(find, calls, min_graph_calls=4)
    assert total["conversions"] <= 2, (
        "the search loop over tf.size(x) is a tensor loop returning a Python int: one conversion after the 3 profiled "
        f"calls, at most one more, not one per target: {total}"
    )
